import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Retries idempotent requests that failed for a reason worth retrying.
///
/// - Only idempotent methods (GET, HEAD, OPTIONS, PUT, DELETE, TRACE) whose body can be replayed.
/// - Only connection failures, timeouts, and the statuses 408, 429, 500, 502, 503, 504.
/// - Waits with exponential backoff and full jitter, or exactly what `Retry-After` says
///   (seconds or HTTP-date). A `Retry-After` longer than ``Policy/maxRetryAfter`` fails at once
///   with ``APIError/rateLimited(resetAt:message:url:response:)`` (429) or
///   ``APIError/retryLater(code:retryAt:url:response:)``, which say when to try again.
/// - Cancelling the task during the wait ends it at once, without another attempt.
///
/// The attempt that produced the response is reported through ``ExchangeReport`` (``Response/attempt``),
/// each attempt as it starts, so after a failure the report holds the last attempt made.
public struct RetryMiddleware: ClientMiddleware, WholeResponseMiddleware {
    /// When and how often to retry.
    public struct Policy: Sendable {
        /// Attempts in all, the first included (default 3).
        public var maxAttempts: Int
        /// The backoff base: attempt n waits a random time in `0 ..< min(cap, base × 2ⁿ⁻¹)` (default 0.5 s).
        public var baseDelay: Duration
        /// The backoff cap (default 30 s).
        public var maxDelay: Duration
        /// The longest `Retry-After` the middleware will wait for (default 60 s).
        public var maxRetryAfter: Duration
        /// The statuses worth retrying.
        public var retryableStatuses: Set<Int>
        /// Whether failures after which the server may have seen the request (a connection lost
        /// mid-exchange, a timeout) are retried (default `true`, as RFC 9110 §9.2.2 allows for
        /// idempotent methods). `false` retries only when no connection could be made — what a
        /// proxy wants, so that its origin sees each client request once.
        public var retriesAfterSending: Bool

        /// Creates a policy.
        public init(
            maxAttempts: Int = 3, baseDelay: Duration = .milliseconds(500), maxDelay: Duration = .seconds(30),
            maxRetryAfter: Duration = .seconds(60), retryableStatuses: Set<Int> = [408, 429, 500, 502, 503, 504],
            retriesAfterSending: Bool = true
        ) {
            self.retriesAfterSending = retriesAfterSending
            self.maxAttempts = max(1, maxAttempts)
            self.baseDelay = baseDelay
            self.maxDelay = maxDelay
            self.maxRetryAfter = maxRetryAfter
            self.retryableStatuses = retryableStatuses
        }
    }

    /// The policy in force.
    public var policy: Policy
    private let sleep: @Sendable (Duration) async throws -> Void
    private let random: @Sendable () -> Double
    private let now: @Sendable () -> Date

    /// Creates the middleware.
    /// - Parameters:
    ///   - policy: when and how often to retry (default: up to 3 attempts, on connection failures,
    ///     timeouts and `408`, `429`, `500`, `502`, `503`, `504`).
    ///   - sleep: how to wait (inject a recording sleeper in tests; the default is `Task.sleep`).
    ///   - random: a number in `0..<1` for jitter.
    ///   - now: the current time, for `Retry-After` dates.
    public init(
        policy: Policy = .init(),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.policy = policy
        self.sleep = sleep
        self.random = random
        self.now = now
    }

    /// The full-jitter backoff before attempt `attempt + 1`.
    public func backoff(afterAttempt attempt: Int) -> Duration {
        let exponent = min(attempt - 1, 30)
        let ceiling = min(policy.maxDelay, policy.baseDelay * (1 << exponent))
        return ceiling * random()
    }

    /// Retries as described above.
    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let replayable = HTTPBody.canBeSentAgain(body)
        // `only-if-cached` never reaches the network: a cache's 504 "not stored" is final.
        let onlyIfCached = request.cacheControlMentions("only-if-cached")
        guard request.isIdempotent, replayable, policy.maxAttempts > 1, !onlyIfCached else {
            return try await next(request, body, baseURL)
        }
        var attempt = 1
        while true {
            let response: HTTPResponse
            let responseBody: HTTPBody?
            do {
                (response, responseBody) = try await next(request, body, baseURL)
            } catch {
                guard attempt < policy.maxAttempts, !Task.isCancelled, Self.isRetryable(error, afterSending: policy.retriesAfterSending)
                else { throw error }
                try await sleep(backoff(afterAttempt: attempt))
                attempt += 1
                ExchangeReport.current?.recordAttempt(attempt)
                continue
            }
            guard policy.retryableStatuses.contains(response.status.code) else {
                return (Self.marked(response, attempt: attempt), responseBody)
            }
            let retryAfter = RetryAfter.delay(response.headerFields[.retryAfter], now: now())
            if let retryAfter, retryAfter > policy.maxRetryAfter {
                let url = request.url(relativeTo: baseURL).map(Redaction.redact) ?? "the server"
                let retryAt = now().addingTimeInterval(Double(retryAfter.components.seconds))
                let answer = APIError.ErrorResponse(head: response, body: await APIError.ErrorResponse.collectBody(responseBody))
                if response.status.code == 429 {
                    throw APIError.rateLimited(resetAt: retryAt, message: nil, url: url, response: answer)
                }
                throw APIError.retryLater(code: response.status.code, retryAt: retryAt, url: url, response: answer)
            }
            guard attempt < policy.maxAttempts else {
                return (Self.marked(response, attempt: attempt), responseBody)
            }
            await HTTPBody.discard(responseBody)
            try await sleep(retryAfter ?? backoff(afterAttempt: attempt))
            attempt += 1
            ExchangeReport.current?.recordAttempt(attempt)
        }
    }

    /// Connection failures and timeouts are worth another attempt; everything else is not. With
    /// `afterSending` false, only failures to connect (the request never left) are.
    static func isRetryable(_ error: any Error, afterSending: Bool = true) -> Bool {
        switch error {
        case let failure as TransportFailure:
            return afterSending ? failure.kind != .cancelled : failure.kind == .unreachable
        case let error as APIError:
            switch error {
            case .unreachable: return true
            case .timedOut, .transport: return afterSending
            default: return false
            }
        case let error as URLError:
            let connect: Set<URLError.Code> = [.cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet]
            return connect.contains(error.code) || (afterSending && [.timedOut, .networkConnectionLost].contains(error.code))
        default:
            return false
        }
    }

    private static func marked(_ response: HTTPResponse, attempt: Int) -> HTTPResponse {
        ExchangeReport.current?.recordAttempt(attempt)
        return response
    }
}
