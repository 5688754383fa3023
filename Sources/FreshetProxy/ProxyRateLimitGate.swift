import Foundation
import Freshet
import HTTPTypes
import OpenAPIRuntime

/// Keeps the proxy from spending a rate-limit budget the origin said is spent: it reads the
/// `X-RateLimit-*` fields of every answer into a `RateLimitTracker` (the client's
/// budget store), per resource (GitHub's `core`, `search`, …, learned from the origin's answers)
/// and per credential (the `Authorization` value, hashed in memory), and refuses — without a request —
/// what would spend a budget with nothing left before its reset, with ``Refusal`` (`429` for the
/// client, with `Retry-After`). The origin's own answers, `403` and `429` included, pass unchanged.
final class ProxyRateLimitGate: ClientMiddleware {
    /// The budgets, per credential; which resource a path spends is learned from the origin.
    let tracker = RateLimitTracker()
    private let now: @Sendable () -> Date

    init(now: @escaping @Sendable () -> Date = { Date() }) {
        self.now = now
    }

    /// The request was not sent: the budget it would spend is spent.
    struct Refusal: Error, CustomStringConvertible {
        var budget: RateLimitBudget
        var retryAfter: Int

        var description: String {
            "the origin's \(budget.resource) rate limit (\(budget.limit) requests) is spent until \(HTTPDate.format(budget.resetAt)); no request was sent"
        }

        func headerFields() -> HTTPFields {
            [
                .retryAfter: String(retryAfter), .xRateLimitLimit: String(budget.limit), .xRateLimitRemaining: "0",
                .xRateLimitReset: String(Int(budget.resetAt.timeIntervalSince1970)), .xRateLimitResource: budget.resource,
            ]
        }
    }

    /// What the gate noted of a request it let through: the budget its answer is read into.
    struct Admission: Sendable {
        var path: String
        var resource: String
        var credential: Int
    }

    /// Lets a request for `path` with the `Authorization` lines `authorization` through, or throws
    /// ``Refusal`` when the budget it would spend is spent.
    func admit(path: String, authorization: [String]) throws -> Admission {
        let resource = tracker.resource(forPath: path)
        var hasher = Hasher()
        hasher.combine(authorization)
        let credential = hasher.finalize()
        if let budget = tracker.budget(for: resource, credential: credential), let wait = budget.waitIfSpent(at: now()) {
            throw Refusal(budget: budget, retryAfter: Int(wait.rounded(.up)))
        }
        return Admission(path: path, resource: resource, credential: credential)
    }

    /// Reads the budget in the origin's `response` to a request ``admit(_:)`` let through.
    func record(_ response: HTTPResponse, for admission: Admission) {
        tracker.record(from: response, path: admission.path, resource: admission.resource, credential: admission.credential)
    }

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let admission = try admit(path: request.path ?? "/", authorization: request.headerFields[values: .authorization])
        let (response, responseBody) = try await next(request, body, baseURL)
        record(response, for: admission)
        return (response, responseBody)
    }
}

/// A transport that goes through the rate-limit gate first (for the cache's background revalidation).
struct GatedTransport: ClientTransport {
    let gate: ProxyRateLimitGate
    let transport: any ClientTransport

    func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws
        -> (HTTPResponse, HTTPBody?)
    {
        try await gate.intercept(request, body: body, baseURL: baseURL, operationID: operationID) { request, body, base in
            try await transport.send(request, body: body, baseURL: base, operationID: operationID)
        }
    }
}
