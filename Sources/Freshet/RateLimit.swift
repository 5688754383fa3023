import Foundation
import HTTPTypes
import OpenAPIRuntime
import Synchronization

/// One rate-limit budget as the server last reported it (`X-RateLimit-*`).
public struct RateLimitBudget: Sendable, Equatable {
    /// The resource the budget applies to (`core`, `search`, `graphql`, …).
    public var resource: String
    /// Requests allowed per window.
    public var limit: Int
    /// Requests left in the window.
    public var remaining: Int
    /// Requests used in the window.
    public var used: Int?
    /// When the window resets.
    public var resetAt: Date

    /// Reads a budget from response headers; `nil` when they carry none.
    public init?(headers: HTTPFields, defaultResource: String) {
        guard let limit = headers[.xRateLimitLimit].flatMap({ Int($0) }),
              let remaining = headers[.xRateLimitRemaining].flatMap({ Int($0) }),
              let reset = headers[.xRateLimitReset].flatMap({ Double($0) }) else { return nil }
        self.resource = headers[.xRateLimitResource] ?? defaultResource
        self.limit = limit
        self.remaining = remaining
        self.used = headers[.xRateLimitUsed].flatMap { Int($0) }
        self.resetAt = Date(timeIntervalSince1970: reset)
    }

    /// Creates a budget.
    public init(resource: String, limit: Int, remaining: Int, used: Int? = nil, resetAt: Date) {
        self.resource = resource
        self.limit = limit
        self.remaining = remaining
        self.used = used
        self.resetAt = resetAt
    }
}

/// The rate-limit budgets a client has seen, per resource. Share one between the middleware
/// and the code that wants to show or plan around the budget.
public final class RateLimitTracker: Sendable {
    private let budgets = Mutex<[String: RateLimitBudget]>([:])

    /// Creates an empty tracker.
    public init() {}

    /// The last budget seen for `resource`.
    public func budget(for resource: String) -> RateLimitBudget? {
        budgets.withLock { $0[resource] }
    }

    /// Every budget seen, by resource.
    public var all: [String: RateLimitBudget] {
        budgets.withLock { $0 }
    }

    /// Records a budget read from a response.
    public func record(_ budget: RateLimitBudget) {
        budgets.withLock { $0[budget.resource] = budget }
    }
}

/// Reads `X-RateLimit-*` headers into a ``RateLimitTracker``, refuses to spend a budget known to
/// be exhausted, and turns a 403/429 with `X-RateLimit-Remaining: 0` into
/// ``APIError/rateLimited(resetAt:message:url:)``.
///
/// With ``maxWait`` set, a request that would hit an exhausted budget instead waits for the
/// reset when it is at most that far away. With ``pacing`` on, requests are spread so a known
/// budget lasts until its reset instead of being spent in a burst.
public struct RateLimitMiddleware: ClientMiddleware {
    /// The budgets, shared with callers.
    public let tracker: RateLimitTracker
    /// The longest the middleware waits for a reset instead of failing (default: never waits).
    public var maxWait: Duration
    /// Spread requests evenly over what is left of the window.
    public var pacing: Bool
    /// Which budget a request spends, known before any response (GitHub: `/search/` → `search`).
    public var resourceForPath: @Sendable (String) -> String
    private let sleep: @Sendable (Duration) async throws -> Void
    private let now: @Sendable () -> Date

    /// Creates the middleware.
    public init(
        tracker: RateLimitTracker = RateLimitTracker(),
        maxWait: Duration = .zero,
        pacing: Bool = false,
        resourceForPath: @escaping @Sendable (String) -> String = RateLimitMiddleware.gitHubResource,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.tracker = tracker
        self.maxWait = maxWait
        self.pacing = pacing
        self.resourceForPath = resourceForPath
        self.sleep = sleep
        self.now = now
    }

    /// GitHub's resources: `search` for `/search/…`, `graphql` for `/graphql`, else `core`.
    public static let gitHubResource: @Sendable (String) -> String = { path in
        if path.hasPrefix("/search/") || path.contains("/search/") { return "search" }
        if path.hasPrefix("/graphql") { return "graphql" }
        return "core"
    }

    /// Checks the budget, sends, and records what the server reports.
    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        // The resource from the full path (base path + request path) without building a URL;
        // the URL itself only for messages.
        let requestPath = request.path.map { $0.split(separator: "?", maxSplits: 1).first.map(String.init) ?? $0 } ?? "/"
        let basePath = baseURL.path.hasSuffix("/") ? String(baseURL.path.dropLast()) : baseURL.path
        let resource = resourceForPath(basePath + requestPath)
        var url: URL? { request.url(relativeTo: baseURL) }
        if let budget = tracker.budget(for: resource) {
            let untilReset = budget.resetAt.timeIntervalSince(now())
            if budget.remaining <= 0, untilReset > 0 {
                let wait = Duration.milliseconds(Int64(untilReset * 1000))
                guard wait <= maxWait else {
                    throw APIError.rateLimited(
                        resetAt: budget.resetAt,
                        message: "the \(resource) budget of \(budget.limit) requests is spent (no request was sent)",
                        url: url.map(Redaction.redact) ?? "the server")
                }
                try await sleep(wait)
            } else if pacing, budget.remaining > 0, untilReset > 0 {
                try await sleep(.milliseconds(Int64(untilReset * 1000) / Int64(budget.remaining + 1)))
            }
        }
        let (response, responseBody) = try await next(request, body, baseURL)
        if let budget = RateLimitBudget(headers: response.headerFields, defaultResource: resource) {
            tracker.record(budget)
        }
        if response.status.code == 403, let signal = RateLimitSignal(response: response, now: now()) {
            let data = try? await APIClient.collect(responseBody, limit: 64 * 1024, url: url ?? baseURL)
            throw APIError.rateLimited(
                resetAt: signal.resetAt, message: data.flatMap(APIErrorBody.message(from:)),
                url: url.map(Redaction.redact) ?? "the server")
        }
        return (response, responseBody)
    }
}
