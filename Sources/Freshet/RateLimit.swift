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
              let reset = headers[.xRateLimitReset].flatMap({ Double($0) }),
              // Unix seconds: a value no clock reaches (`1e300`, `inf`) is not a reset time.
              reset.isFinite, (0...1e11).contains(reset) else { return nil }
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

    /// How long until the budget resets, when it has nothing left at `now`; `nil` when a request
    /// may spend it.
    public func waitIfSpent(at now: Date) -> TimeInterval? {
        let untilReset = resetAt.timeIntervalSince(now)
        return remaining <= 0 && untilReset > 0 ? untilReset : nil
    }
}

/// The rate-limit budgets seen, per resource — and, for a proxy serving many users, per
/// credential — and which resource each part of an API spends. Share one between the middleware
/// and the code that wants to show or plan around the budget.
///
/// Which budget a request spends is learned from the server: the resource an answer names in
/// `X-RateLimit-Resource` (GitHub: `core`, `search`, `graphql`, …) is remembered for the first
/// segment of its request path (`/search/…`, `/repos/…`), so the next request there is checked
/// against the right budget before it is sent. Until a path's resource is known it is
/// ``defaultResource``. The tracker knows no service.
public final class RateLimitTracker: Sendable {
    /// The resource of a path not seen yet, and of budgets whose answer names none.
    public static let defaultResource = "default"

    private struct Key: Hashable {
        var credential: Int?
        var resource: String
    }

    private struct State {
        var budgets: [Key: RateLimitBudget] = [:]
        var resources: [String: String] = [:]
    }

    private let state = Mutex(State())

    /// Creates an empty tracker.
    public init() {}

    /// The last budget seen for `resource`.
    /// - Parameters:
    ///   - resource: the rate-limit resource (`core`, `search`, … as `X-RateLimit-Resource` names it).
    ///   - credential: a hash of the credential the budget belongs to, when one tracker
    ///     serves several (a proxy); `nil` for a client's own.
    public func budget(for resource: String, credential: Int? = nil) -> RateLimitBudget? {
        state.withLock { $0.budgets[Key(credential: credential, resource: resource)] }
    }

    /// Every budget seen for the client's own credential, by resource.
    public var all: [String: RateLimitBudget] {
        state.withLock { state in
            Dictionary(state.budgets.filter { $0.key.credential == nil }.map { ($0.key.resource, $0.value) },
                       uniquingKeysWith: { first, _ in first })
        }
    }

    /// Records a budget read from a response.
    public func record(_ budget: RateLimitBudget, credential: Int? = nil) {
        state.withLock { $0.budgets[Key(credential: credential, resource: budget.resource)] = budget }
    }

    /// The resource a request to `path` spends, as learned so far (see the type's description).
    public func resource(forPath path: String) -> String {
        let segment = Self.firstSegment(path)
        return state.withLock { $0.resources[segment] } ?? Self.defaultResource
    }

    /// Remembers that requests to `path` spend `resource`.
    public func learn(_ resource: String, forPath path: String) {
        let segment = Self.firstSegment(path)
        state.withLock { state in
            if state.resources[segment] != resource { state.resources[segment] = resource }
        }
    }

    /// Reads the budget in the fields of `response` to a request to `path`, if any, and records it
    /// and the resource it names for the path.
    /// - Parameters:
    ///   - response: the response whose `X-RateLimit-*` fields are read.
    ///   - path: the path of the request the response answers.
    ///   - resource: the resource the request was checked against, for an answer that
    ///     names none.
    ///   - credential: a hash of the credential the budget belongs to (see
    ///     ``budget(for:credential:)``); `nil` for a client's own.
    /// - Returns: the budget read.
    @discardableResult
    public func record(from response: HTTPResponse, path: String, resource: String, credential: Int? = nil)
        -> RateLimitBudget?
    {
        guard let budget = RateLimitBudget(headers: response.headerFields, defaultResource: resource) else { return nil }
        record(budget, credential: credential)
        if response.headerFields[.xRateLimitResource] != nil { learn(budget.resource, forPath: path) }
        return budget
    }

    /// `/search/repositories?q=x` → `search`.
    static func firstSegment(_ path: String) -> String {
        // On the UTF-8 bytes: by `Character` this cost ~4,800 instructions a request (grapheme breaking).
        let bytes = path.utf8
        let start = bytes.firstIndex { $0 != UInt8(ascii: "/") } ?? bytes.endIndex
        let end = bytes[start...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? bytes.endIndex
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }
}

/// Reads `X-RateLimit-*` headers into a ``RateLimitTracker``, refuses to spend a budget known to
/// be exhausted, and turns a 403/429 with `X-RateLimit-Remaining: 0` into
/// ``APIError/rateLimited(resetAt:message:url:response:)``.
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
    /// Which budget a request spends, given its path; `nil` (the default) asks the tracker,
    /// which learns it from the server's answers (``RateLimitTracker/resource(forPath:)``).
    public var resourceForPath: (@Sendable (String) -> String)?
    /// Reads the API's message out of a rate-limit refusal's body.
    public var errorBody: any ErrorBodyReader
    private let sleep: @Sendable (Duration) async throws -> Void
    private let now: @Sendable () -> Date

    /// Creates the middleware.
    public init(
        tracker: RateLimitTracker = RateLimitTracker(),
        maxWait: Duration = .zero,
        pacing: Bool = false,
        resourceForPath: (@Sendable (String) -> String)? = nil,
        errorBody: any ErrorBodyReader = .jsonMessage,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.tracker = tracker
        self.maxWait = maxWait
        self.pacing = pacing
        self.resourceForPath = resourceForPath
        self.errorBody = errorBody
        self.sleep = sleep
        self.now = now
    }

    /// Checks the budget, sends, and records what the server reports.
    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        // The resource from the request path without building a URL; the URL only for messages.
        let path = request.path ?? "/"
        let resource = resourceForPath?(path) ?? tracker.resource(forPath: path)
        var url: URL? { request.url(relativeTo: baseURL) }
        if let budget = tracker.budget(for: resource) {
            let untilReset = budget.resetAt.timeIntervalSince(now())
            if let spentFor = budget.waitIfSpent(at: now()) {
                let wait = Duration.milliseconds(Int64(spentFor * 1000))
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
        tracker.record(from: response, path: path, resource: resource)
        if response.status.code == 403, let signal = RateLimitSignal(response: response, now: now()) {
            let data = await APIError.ErrorResponse.collectBody(responseBody)
            throw APIError.rateLimited(
                resetAt: signal.resetAt, message: errorBody.message(in: data),
                url: url.map(Redaction.redact) ?? "the server", response: APIError.ErrorResponse(head: response, body: data))
        }
        return (response, responseBody)
    }
}
