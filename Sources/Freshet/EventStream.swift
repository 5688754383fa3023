import AsyncAlgorithms
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Synchronization

/// One Server-Sent Event of an ``EventStream``, with its `data` decodable as the endpoint's type.
public struct StreamEvent<Value: Sendable>: Sendable {
    /// The event's type: its `event:` field, `message` when it has none.
    public var type: String
    /// Its `data:` lines, joined by line feeds.
    public var data: String
    /// The stream's last event ID once this event arrived (its own `id:`, or the last one sent
    /// before it): what a reconnection sends as `Last-Event-ID`.
    public var id: String?
    /// Which connection brought it: 1 for the first, one more for each reconnection. A server
    /// that sends its whole state on each connection (Firebase) sends it again on a new one.
    public var connection: Int
    private let decodeData: @Sendable (Data) throws -> Value

    /// Creates an event whose ``value()`` decodes `data` with `decode`.
    public init(type: String, data: String, id: String? = nil, connection: Int = 1,
                decode: @escaping @Sendable (Data) throws -> Value) {
        self.type = type
        self.data = data
        self.id = id
        self.connection = connection
        self.decodeData = decode
    }

    /// The `data` decoded as the endpoint decodes a body (JSON, for a `Decodable` type).
    /// - Throws: ``APIError/decodingFailed(type:path:reason:)`` when it does not decode.
    public func value() throws(APIError) -> Value {
        do {
            return try decodeData(Data(data.utf8))
        } catch let error as DecodingError {
            throw APIError.decoding(error, type: String(describing: Value.self))
        } catch {
            throw APIError.decodingFailed(type: String(describing: Value.self), path: "", reason: String(describing: error))
        }
    }
}

/// What an ``EventStream``'s connection is doing, told to ``EventStreamOptions/onState``.
public enum EventStreamState: Sendable, Equatable {
    /// Connection `connection` (1, 2, …) is being made.
    case connecting(connection: Int)
    /// The server answered with an event stream: events flow.
    case open(connection: Int)
    /// The connection ended or failed with `cause`; the next one is made after `delay`.
    case reconnecting(after: Duration, cause: APIError)
}

/// How an ``EventStream`` keeps its connection.
public struct EventStreamOptions: Sendable {
    /// A connection that brings no byte for this long (keep-alives and comments count) is taken
    /// for dead and made again (default 45 s: Firebase sends a keep-alive every 30 s).
    public var idleTimeout: Duration
    /// The wait before reconnecting until the server says otherwise with `retry:` (default 1 s).
    public var reconnectDelay: Duration
    /// The longest wait that failed connections in a row add up to (default 30 s). A server's
    /// own `retry:` or `Retry-After` may ask for longer, and is honoured up to an hour.
    public var maxReconnectDelay: Duration
    /// Connections in a row that may fail before the stream gives up and throws the last
    /// failure (`nil`, the default: it never gives up, as a browser's `EventSource` does not).
    /// A connection that brought at least one event (a comment or a keep-alive counts) resets
    /// the count.
    public var maxConsecutiveFailures: Int?
    /// The `Last-Event-ID` of the first connection: to resume a stream read before.
    public var lastEventID: String?
    /// Told each change of the connection's state (for a status line), on the stream's task.
    public var onState: (@Sendable (EventStreamState) -> Void)?

    /// Creates options.
    public init(
        idleTimeout: Duration = .seconds(45), reconnectDelay: Duration = .seconds(1),
        maxReconnectDelay: Duration = .seconds(30), maxConsecutiveFailures: Int? = nil,
        lastEventID: String? = nil, onState: (@Sendable (EventStreamState) -> Void)? = nil
    ) {
        self.idleTimeout = idleTimeout
        self.reconnectDelay = reconnectDelay
        self.maxReconnectDelay = maxReconnectDelay
        self.maxConsecutiveFailures = maxConsecutiveFailures
        self.lastEventID = lastEventID
        self.onState = onState
    }
}

/// A middleware that works on whole answers — a cache, coalescing, retries — and that an
/// ``EventStream``'s connections therefore go around: a stream is never stored or shared, and
/// its reconnection replaces retrying.
public protocol WholeResponseMiddleware: ClientMiddleware {}

/// Server-Sent Events from one endpoint, reconnecting as the HTML standard's `EventSource` does:
/// ``APIClient/events(_:options:)`` makes it.
///
/// Each iteration opens its own connection and holds it until the loop ends: leaving the loop,
/// or cancelling the task that reads it, closes the connection. Events wait for the reader one
/// at a time (a slow reader slows the connection rather than piling events up in memory).
///
/// The sequence ends after a `204 No Content`, as the standard says. It throws an ``APIError``
/// when the server answers in a way no reconnection fixes (a `404`, a `401` the authentication
/// middleware could not refresh, a `200` that is not `text/event-stream`:
/// ``APIError/notAnEventStream(contentType:url:)``), or when
/// ``EventStreamOptions/maxConsecutiveFailures`` connections failed in a row.
public struct EventStream<Value: Sendable>: AsyncSequence, Sendable {
    public typealias Element = StreamEvent<Value>
    public typealias Failure = any Error

    let run: @Sendable (AsyncThrowingChannel<StreamEvent<Value>, any Error>) async -> Void

    /// Starts the connection; the iterator holds it.
    public func makeAsyncIterator() -> Iterator {
        let channel = AsyncThrowingChannel<StreamEvent<Value>, any Error>()
        let run = self.run
        let task = Task { await run(channel) }
        return Iterator(base: channel.makeAsyncIterator(), lifetime: Lifetime(task))
    }

    /// Reads the events of one connection (and its reconnections).
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncThrowingChannel<StreamEvent<Value>, any Error>.Iterator
        let lifetime: Lifetime

        /// The next event; `nil` once the stream has ended (or the reading task was cancelled).
        /// - Throws: ``APIError``.
        public mutating func next() async throws -> StreamEvent<Value>? {
            let lifetime = self.lifetime
            return try await withTaskCancellationHandler {
                try await base.next()
            } onCancel: {
                lifetime.end()
            }
        }
    }

    /// Ends the connection's task when the last copy of the iterator is gone.
    final class Lifetime: Sendable {
        let task: Task<Void, Never>
        init(_ task: Task<Void, Never>) { self.task = task }
        func end() { task.cancel() }
        deinit { task.cancel() }
    }
}

extension APIClient {
    /// The Server-Sent Events `endpoint` streams, each event's `data` decodable as the endpoint's
    /// type (``StreamEvent/value()``): swift-openapi-runtime's SSE decoder parses them.
    ///
    /// The request asks for `text/event-stream`, without caching or content coding, and goes
    /// through the middlewares but those made for whole answers (``WholeResponseMiddleware``: the
    /// cache, coalescing, retries): authentication (a refused credential is refreshed before the
    /// request is sent again), redirects (a `307` or `308` stays a `GET` with its headers),
    /// logging and tracing (one span per connection). Neither the body limit nor the transport's
    /// deadline for a whole exchange applies: ``EventStreamOptions/idleTimeout`` ends a connection
    /// that has gone silent instead. ``APIClient/maxResponseBytes`` bounds each event instead: one
    /// larger (a server that never ends its event) ends the stream with
    /// ``APIError/bodyTooLarge(limit:url:)``.
    ///
    /// When a connection ends or fails for a reason the server may get over (the stream ended, the
    /// network failed, no byte for the idle timeout, `5xx`, `408`, `429`), the next is made after
    /// the server's `retry:` (or ``EventStreamOptions/reconnectDelay``), never sooner and up to
    /// half again later (jitter, so clients dropped together do not return together), doubled for
    /// each connection in a row that failed, up to ``EventStreamOptions/maxReconnectDelay``; a
    /// `Retry-After` is honoured. It sends `Last-Event-ID` with the last `id:` received.
    ///
    /// ```swift
    /// let updates = Endpoint<Firebase.Change>.get("v0", "topstories.json")
    /// for try await event in client.events(updates) where event.type == "put" {
    ///     apply(try event.value())
    /// }
    /// ```
    public func events<Value>(_ endpoint: Endpoint<Value>, options: EventStreamOptions = EventStreamOptions()) -> EventStream<Value> {
        let client = self
        return EventStream { channel in
            await EventStreamConnection(client: client, endpoint: endpoint, options: options, channel: channel).run()
        }
    }
}

/// The loop behind an ``EventStream``: connect, read, reconnect.
struct EventStreamConnection<Value: Sendable>: Sendable {
    let client: APIClient
    let endpoint: Endpoint<Value>
    let options: EventStreamOptions
    let channel: AsyncThrowingChannel<StreamEvent<Value>, any Error>

    /// How one connection ended.
    enum Ending: Sendable {
        /// The server ended the stream (or the connection broke, or went silent): reconnect.
        /// `broughtEvent`: the connection brought at least one event (it resets the failure count).
        case reconnect(APIError, broughtEvent: Bool, wait: Duration?)
        /// `204 No Content`: stop.
        case stop
    }

    /// What the connections share: the last event ID and the server's `retry:`.
    struct Progress: Sendable {
        var lastEventID: String?
        var retry: Duration?
    }

    func run() async {
        var progress = Progress(lastEventID: options.lastEventID)
        var failures = 0
        var connection = 0
        while !Task.isCancelled {
            connection += 1
            options.onState?(.connecting(connection: connection))
            let ending: Ending
            do {
                ending = try await connect(number: connection, progress: &progress)
            } catch {
                if !Task.isCancelled { channel.fail(error) }
                return
            }
            guard case .reconnect(let cause, let broughtEvent, let wait) = ending else { break }
            if Task.isCancelled { break }
            failures = broughtEvent ? 0 : failures + 1
            if let limit = options.maxConsecutiveFailures, failures >= limit {
                channel.fail(cause)
                return
            }
            // Failing connections back off from at least the configured delay: a server's
            // `retry: 0` is for reconnecting after a healthy stream, not for hammering it.
            let base = failures > 0 ? max(progress.retry ?? .zero, options.reconnectDelay) : progress.retry ?? options.reconnectDelay
            let backoff = ReconnectBackoff.delay(base: base, failures: failures, cap: options.maxReconnectDelay,
                                                 random: Double.random(in: 0...1))
            let delay = min(max(wait ?? .zero, backoff), ReconnectBackoff.longestServerWait)
            options.onState?(.reconnecting(after: delay, cause: cause))
            do { try await Task.sleep(for: delay) } catch { break }
        }
        channel.finish()
    }

    /// One connection: its events go to the channel until it ends.
    private func connect(number: Int, progress: inout Progress) async throws -> Ending {
        var (request, base, url) = try client.makeRequest(endpoint, body: nil)
        request.headerFields[.accept] = "text/event-stream"
        request.headerFields[.cacheControl] = "no-cache"
        // Compressed streams are held back by the server's compressor until a block fills.
        request.headerFields[.acceptEncoding] = "identity"
        request.headerFields[.lastEventID] = progress.lastEventID.flatMap { $0.isEmpty ? nil : $0 }
        let middlewares = client.middlewares.filter { !($0 is any WholeResponseMiddleware) }
        let chain = APIClient.chain(middlewares: middlewares, transport: client.transport,
                                    operationID: endpoint.operationID, timingHeaders: false)
        let shown = Redaction.redact(url)
        let idle = IdleClock(timeout: options.idleTimeout)
        let reader = Reader(endpoint: endpoint, decoder: client.decoder, channel: channel, connection: number,
                            onState: options.onState, idle: idle, url: url, errorBody: client.errorBody,
                            maxEventBytes: client.maxResponseBytes)
        reader.reached.value = progress
        let (outbound, origin) = (request, base)
        defer { progress = reader.reached.value }
        do {
            return try await withThrowingTaskGroup(of: Ending.self) { group in
                group.addTask {
                    try await ExchangeReport.$current.withValue(ExchangeReport()) {
                        try await TransferContext.$isStream.withValue(true) {
                            try await reader.read(request: outbound, base: origin, chain: chain)
                        }
                    }
                }
                group.addTask {
                    try await idle.watch()
                    let silent = TransportFailure(.timedOut, reason: "the event stream sent nothing for \(options.idleTimeout)")
                    return .reconnect(.timedOut(url: shown, cause: silent), broughtEvent: reader.reached.broughtEvent, wait: nil)
                }
                defer { group.cancelAll() }
                return try await group.next() ?? .stop
            }
        } catch {
            if Task.isCancelled { throw CancellationError() }
            let failure = APIError.wrapping(error, url: url).withMessage(from: client.errorBody)
            guard Self.reconnects(after: error) else { throw failure }
            return .reconnect(failure, broughtEvent: reader.reached.broughtEvent, wait: nil)
        }
    }

    /// Whether a failure is one a new connection may get over: the network's (as the retry
    /// middleware judges them), and the server's `5xx`, `408` and `429`.
    static func reconnects(after error: any Error) -> Bool {
        if RetryMiddleware.isRetryable(error) { return true }
        switch error as? APIError {
        case .httpStatus(let code, _, _, _)?: return code == 408 || code >= 500
        case .rateLimited?, .retryLater?: return true
        default: return false
        }
    }

    /// Reads one connection, keeping what it reached where the loop can see it when the idle
    /// clock cancels it.
    struct Reader: Sendable {
        let endpoint: Endpoint<Value>
        let decoder: JSONDecoder
        let channel: AsyncThrowingChannel<StreamEvent<Value>, any Error>
        let connection: Int
        let onState: (@Sendable (EventStreamState) -> Void)?
        let idle: IdleClock
        let url: URL
        let errorBody: any ErrorBodyReader
        /// The most bytes one event may take (the client's ``APIClient/maxResponseBytes``).
        let maxEventBytes: Int
        let reached = Reached()

        func read(request: HTTPRequest, base: URL,
                  chain: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)) async throws -> Ending {
            var progress = reached.value
            let (response, body) = try await chain(request, nil, base)
            idle.touch()
            if response.status.code == 204 {
                await HTTPBody.discard(body)
                return .stop
            }
            guard response.status.kind == .successful else {
                let data = (try? await APIClient.collect(body, limit: 64 * 1024, url: url)) ?? Data()
                do {
                    try APIClient.validate(response, body: data, url: url, errorBody: errorBody)
                } catch {
                    let wait = RetryAfter.delay(response.headerFields[.retryAfter], now: Date())
                    guard EventStreamConnection.reconnects(after: error) else { throw error }
                    return .reconnect(error, broughtEvent: false, wait: wait)
                }
                return .stop
            }
            let type = response.headerFields[.contentType]
            guard let type, type.lowercased().split(separator: ";").first?.trimmingCharacters(in: .whitespaces) == "text/event-stream" else {
                await HTTPBody.discard(body, limit: 64 * 1024)
                throw APIError.notAnEventStream(contentType: type, url: Redaction.redact(url))
            }
            onState?(.open(connection: connection))
            // The decoder holds an event's bytes until its blank line: a server that never sends
            // one is cut off at the limit instead of filling memory.
            let pending = Mutex(0)
            let (limit, shown) = (maxEventBytes, Redaction.redact(url))
            let bytes = (body ?? HTTPBody()).observed(
                check: {
                    if pending.withLock({ $0 }) > limit { throw APIError.bodyTooLarge(limit: limit, url: shown) }
                },
                onChunk: { [idle] count in
                    idle.touch()
                    pending.withLock { $0 += count }
                })
            let decode = endpoint.decode
            let decoder = self.decoder
            do {
                for try await event in bytes.asDecodedServerSentEvents() {
                    pending.withLock { $0 = 0 }
                    reached.broughtEvent = true
                    if let id = event.id, !id.contains("\0") { progress.lastEventID = id }
                    if let retry = event.retry, retry >= 0 { progress.retry = .milliseconds(retry) }
                    reached.value = progress
                    guard let data = event.data else { continue }
                    let type = event.event.flatMap { $0.isEmpty ? nil : $0 } ?? "message"
                    let streamEvent = StreamEvent(type: type, data: data, id: progress.lastEventID, connection: connection) {
                        try decode($0, decoder)
                    }
                    await idle.pausing { await channel.send(streamEvent) }
                    try Task.checkCancellation()
                }
            } catch {
                if Task.isCancelled { throw CancellationError() }
                // An event past the limit would come again on the next connection.
                if case .bodyTooLarge? = error as? APIError { throw error }
                // Whatever else broke an open stream (the network, a middleware's decoding), a new
                // connection may get over it, as a browser's EventSource assumes.
                return .reconnect(APIError.wrapping(error, url: url), broughtEvent: reached.broughtEvent, wait: nil)
            }
            let cause = APIError.transport(url: Redaction.redact(url), cause: TransportFailure(
                .connectionLost, reason: "the server ended the event stream"))
            return .reconnect(cause, broughtEvent: reached.broughtEvent, wait: nil)
        }
    }

    /// What a connection reached, readable after its task was cancelled.
    final class Reached: Sendable {
        private let state = Mutex<(progress: Progress, broughtEvent: Bool)>((Progress(), false))
        var value: Progress {
            get { state.withLock { $0.progress } }
            set { state.withLock { $0.progress = newValue } }
        }
        var broughtEvent: Bool {
            get { state.withLock { $0.broughtEvent } }
            set { state.withLock { $0.broughtEvent = newValue } }
        }
    }
}

/// The wait before an event stream's next connection.
package enum ReconnectBackoff {
    /// The longest wait a server's `retry:` or `Retry-After` is honoured for: an hour.
    package static let longestServerWait: Duration = .seconds(3600)

    /// `base` (the server's `retry:`, or the configured delay) doubled for each failure in a row
    /// (at most `cap`, but never less than `base`), and up to half again for jitter (`random` in
    /// 0...1): never sooner than the server asked.
    package static func delay(base: Duration, failures: Int, cap: Duration, random: Double) -> Duration {
        let doubled = failures == 0 ? base : min(cap, base * (1 << min(failures, 20)))
        let wait = max(base, doubled)
        return wait + wait * (random / 2)
    }
}

/// When a connection last brought a byte; ``watch()`` returns once it has been silent for the
/// timeout. While an event waits for the reader, the clock stands still: a slow reader is not a
/// silent server.
final class IdleClock: Sendable {
    private let timeout: Duration
    private let state: Mutex<(last: ContinuousClock.Instant, paused: Bool)>

    init(timeout: Duration) {
        self.timeout = timeout
        self.state = Mutex((ContinuousClock.now, false))
    }

    /// A byte arrived.
    func touch() {
        state.withLock { $0.last = .now }
    }

    /// Runs `work` with the clock stopped.
    func pausing(_ work: () async -> Void) async {
        state.withLock { $0.paused = true }
        await work()
        state.withLock { $0 = (.now, false) }
    }

    /// Sleeps until the timeout has passed with no byte, then returns; cancelled, it throws
    /// `CancellationError`.
    func watch() async throws {
        while true {
            let (last, paused) = state.withLock { ($0.last, $0.paused) }
            let due = last + timeout
            if !paused && ContinuousClock.now >= due { return }
            try await Task.sleep(until: paused ? .now + timeout : due)
        }
    }
}
