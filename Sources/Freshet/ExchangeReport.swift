import Foundation
import HTTPTypes
import OpenAPIRuntime
import Synchronization

/// What the middlewares of one exchange say about how it went: the typed channel between them and
/// ``APIClient`` (or a proxy), beside the HTTP response instead of inside its header fields.
///
/// ``APIClient/send(_:)`` binds a fresh report to ``current`` for each call; the cache middleware
/// records its ``Snapshot/cache`` outcome and ``Snapshot/staleReason``, the retry middleware the
/// ``Snapshot/attempt``, a transport that knows them the phases of its exchange
/// (``recordConnection(connect:tlsHandshake:)``, ``recordTimeToFirstByte(_:)``), and the client
/// copies them into ``Response``. Nothing here ever becomes a header field, so nothing
/// can leak to a server, a proxy client or `Response.headers`.
///
/// A middleware used on its own (say, in a swift-openapi-generator client) finds no report bound
/// and records nothing; wrap the call in ``collect(_:)`` to read what it would have said.
public final class ExchangeReport: Sendable {
    /// The report of the exchange the current task is making, if someone is listening.
    @TaskLocal public static var current: ExchangeReport?

    /// A copy of what was recorded.
    public struct Snapshot: Sendable, Equatable {
        /// How the HTTP cache answered; `nil` when no cache middleware took part.
        public var cache: CacheOutcome?
        /// The attempt that produced the response (1 for the first); after a failure, the last
        /// attempt made.
        public var attempt: Int
        /// When a stored response stood in for a failed refresh: what failed.
        public var staleReason: StaleReason?
        /// When the transport last handed back a response head (`nil`: no request was sent).
        public var headersReceived: ContinuousClock.Instant?
        /// How long making the connection of the transport's last exchange took (TCP, with name
        /// resolution); `nil` on a reused connection, or when the transport does not say.
        public var connect: Duration?
        /// How long the TLS handshake of that connection took; `nil` for `http`, on a reused
        /// connection, or when the transport does not say.
        public var tlsHandshake: Duration?
        /// From the transport's starting to send the last request on its connection until the
        /// first byte of the response; `nil` when the transport does not say.
        public var timeToFirstByte: Duration?

        /// Creates a snapshot.
        public init(cache: CacheOutcome? = nil, attempt: Int = 1, staleReason: StaleReason? = nil,
                    headersReceived: ContinuousClock.Instant? = nil, connect: Duration? = nil,
                    tlsHandshake: Duration? = nil, timeToFirstByte: Duration? = nil) {
            self.cache = cache
            self.attempt = attempt
            self.staleReason = staleReason
            self.headersReceived = headersReceived
            self.connect = connect
            self.tlsHandshake = tlsHandshake
            self.timeToFirstByte = timeToFirstByte
        }
    }

    private let state = Mutex(Snapshot())
    /// The last body a middleware made of bytes it held whole (``HTTPBody/whole(_:)``), with them.
    private let whole = Mutex<WholeBody?>(nil)

    private struct WholeBody: Sendable {
        let body: HTTPBody
        let data: Data
    }

    /// Creates an empty report.
    public init() {}

    /// Notes that `body` is `data`, whole (``HTTPBody/whole(_:)``), replacing the last such note.
    package func recordWhole(_ body: HTTPBody, data: Data) {
        whole.withLock { $0 = WholeBody(body: body, data: data) }
    }

    /// The bytes of `body` when it is the last body noted as whole in this exchange: a
    /// collector takes them as they are instead of reading the body chunk by chunk.
    package func wholeData(of body: HTTPBody) -> Data? {
        whole.withLock { noted in noted.flatMap { $0.body === body ? $0.data : nil } }
    }

    /// What has been recorded so far.
    public var snapshot: Snapshot { state.withLock { $0 } }

    /// Records how the cache answered, and why a stored response was served stale (`nil`
    /// clears an earlier attempt's reason).
    public func recordCache(_ outcome: CacheOutcome, staleReason: StaleReason? = nil) {
        state.withLock {
            $0.cache = outcome
            $0.staleReason = staleReason
        }
    }

    /// Records that the transport handed back a response head now (``APIClient/send(_:)``'s chain
    /// does, so ``Response/timing`` does not count a middleware that reads the body first).
    public func recordHeadersReceived() {
        let now = ContinuousClock.now
        state.withLock { $0.headersReceived = now }
    }

    /// Records the attempt that produced the response (the retry middleware also records each
    /// attempt as it starts, so a failure reports the last one made).
    public func recordAttempt(_ attempt: Int) {
        state.withLock { $0.attempt = attempt }
    }

    /// For a transport, as it starts an exchange on a connection: how long making that connection
    /// took (`nil` for both on a reused one, `tlsHandshake` `nil` for `http`). Clears the time to
    /// first byte of an earlier exchange (a retried request reports its last attempt's phases).
    public func recordConnection(connect: Duration?, tlsHandshake: Duration?) {
        state.withLock {
            $0.connect = connect
            $0.tlsHandshake = tlsHandshake
            $0.timeToFirstByte = nil
        }
    }

    /// For a transport: the time from starting to send the request on its connection until the
    /// response's first byte arrived.
    public func recordTimeToFirstByte(_ duration: Duration) {
        state.withLock { $0.timeToFirstByte = duration }
    }

    /// Runs `operation` and returns its result with what the report of the exchange recorded:
    /// the caller's report when one is bound (so what is recorded still reaches it), a fresh one
    /// otherwise. For a middleware that reads what the middlewares inside it report.
    public static func observing<T>(_ operation: () async throws -> T) async rethrows -> (T, Snapshot) {
        if let report = current {
            let value = try await operation()
            return (value, report.snapshot)
        }
        return try await collect(operation)
    }

    /// Runs `operation` with a fresh report bound to ``current`` and returns its result with what
    /// was recorded.
    public static func collect<T>(_ operation: () async throws -> T) async rethrows -> (T, Snapshot) {
        let report = ExchangeReport()
        let value = try await $current.withValue(report) { try await operation() }
        return (value, report.snapshot)
    }
}

/// A middleware that keeps responses and can hand one out without any exchange: the HTTP cache.
///
/// ``APIClient/sendOrStored(_:)`` asks it for a stand-in after a failure raised outside it.
public protocol StoredResponseSource: Sendable {
    /// The stored response that may stand in for `request` now, stale or not, unless the
    /// response forbids serving it stale (`must-revalidate`, `no-cache`, …); `nil` otherwise.
    /// Never contacts the server.
    func storedResponse(for request: HTTPRequest, baseURL: URL) async -> (HTTPResponse, Data)?

    /// Reads what is stored for `requests` ahead of sending them, in one go where the store can,
    /// so that their lookups do not each wait for storage (``APIClient/preload(_:)``). Never
    /// contacts the server, changes no answer and counts no outcome.
    func preload(_ requests: [HTTPRequest], baseURL: URL) async

    /// What the store answers `request` with right now without contacting the server — fresh, or
    /// stale where the request allows it (`max-stale`) — and how (`hit` or `stale`); `nil` when
    /// the request must go on to the server (nothing stored, a validation due, the caller's own
    /// validators). Counts the outcome as an answer through the chain would
    /// (``APIClient/storedAnswers(_:)``).
    func answerWithoutExchange(for request: HTTPRequest, baseURL: URL) async
        -> (response: HTTPResponse, body: Data, outcome: CacheOutcome)?

    /// ``answerWithoutExchange(for:baseURL:)`` for each of `requests`, after one read ahead of
    /// them all (``preload(_:baseURL:)``), with what both need of a request — its place in the
    /// store — worked out once. `urls` are the requests' URLs, as
    /// `HTTPRequest.url(relativeTo: baseURL)` makes them (the caller has them already).
    func answersWithoutExchange(for requests: [HTTPRequest], urls: [URL], baseURL: URL) async
        -> [(response: HTTPResponse, body: Data, outcome: CacheOutcome)?]
}

extension StoredResponseSource {
    /// Nothing to read ahead.
    public func preload(_ requests: [HTTPRequest], baseURL: URL) async {}

    /// No answer without an exchange.
    public func answerWithoutExchange(for request: HTTPRequest, baseURL: URL) async
        -> (response: HTTPResponse, body: Data, outcome: CacheOutcome)? { nil }

    /// ``preload(_:baseURL:)``, then ``answerWithoutExchange(for:baseURL:)`` for each request.
    public func answersWithoutExchange(for requests: [HTTPRequest], urls: [URL], baseURL: URL) async
        -> [(response: HTTPResponse, body: Data, outcome: CacheOutcome)?]
    {
        await preload(requests, baseURL: baseURL)
        var answers: [(response: HTTPResponse, body: Data, outcome: CacheOutcome)?] = []
        for request in requests { answers.append(await answerWithoutExchange(for: request, baseURL: baseURL)) }
        return answers
    }
}
