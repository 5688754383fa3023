import Foundation
import Freshet
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS
import OpenAPIRuntime
import Synchronization

/// A `ClientTransport` speaking HTTP/1.1 over SwiftNIO directly, for `freshet proxy`.
///
/// Unlike AsyncHTTPClient it relays interim responses: every `1xx` head the origin sends before
/// the final one (`102`, `103 Early Hints`, …; never `100` or `101`) is handed to
/// `InterimResponses.handler` of the sending task, and awaited, before the final response.
///
/// - Header lines go out as given (order, spelling, repeats), `Host` is added first when missing,
///   the method is sent as spelled (`M-SEARCH`), and the body is framed from `HTTPBody.length`
///   (`Content-Length`, or chunked when unknown); the request's own framing fields are dropped.
/// - Response header lines come back exactly as received, in order, repeats kept.
/// - Both bodies stream with back pressure: one read from the socket at a time, as the caller asks.
/// - Connections are kept alive in ``HTTP1ConnectionPool`` and reused only after a complete
///   exchange in which neither side said `Connection: close`; a cancelled or failed exchange
///   closes its connection.
/// - Failures are `TransportFailure`s: `unreachable` only when no connection could be made (the
///   request never left), `connectionLost` when it broke later or the response was malformed,
///   `timedOut` when the final head did not arrive within ``headTimeout`` or the body stalled for
///   ``readTimeout``, `cancelled` when the calling task was cancelled.
public struct HTTP1Transport: ClientTransport {
    /// The longest wait for the final response head, from the call on (waiting for a pooled
    /// connection, connecting and sending included).
    public var headTimeout: Duration
    /// The longest the response body may go without any bytes arriving while the caller waits for it.
    public var readTimeout: Duration
    /// The connections used.
    public var pool: HTTP1ConnectionPool

    /// Creates the transport.
    public init(headTimeout: Duration = .seconds(30), readTimeout: Duration = .seconds(30),
                pool: HTTP1ConnectionPool = .shared) {
        self.headTimeout = headTimeout
        self.readTimeout = readTimeout
        self.pool = pool
    }

    /// Sends `request` to `baseURL` + its path; the response body streams as it arrives.
    public func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws
        -> (HTTPResponse, HTTPBody?)
    {
        guard let url = request.url(relativeTo: baseURL),
              let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.host, !host.isEmpty else {
            throw APIError.invalidRequest("the request target \(request.path ?? "") does not form a valid http(s) URL")
        }
        let port = components.port ?? (scheme == "https" ? 443 : 80)
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        let target = path + (components.percentEncodedQuery.map { "?\($0)" } ?? "")
        let key = HTTP1ConnectionPool.Key(scheme: scheme, host: host, port: port)
        let head = Self.requestHead(request, target: target, key: key, bodyLength: body?.length)
        let plan = ExchangePlan(
            head: head, body: body, isHead: request.method == .head,
            closeAfter: request.headerFields[values: .connection].contains { $0.lowercased().contains("close") },
            deadline: .now() + TimeAmount(headTimeout), readTimeout: TimeAmount(readTimeout),
            interim: InterimResponses.handler)
        // A request without a body may go again on a new connection when a reused one turns out to
        // have been closed by the origin before it read anything (the keep-alive race).
        let mayReplay = body == nil && request.isIdempotent
        var fresh = false
        while true {
            let connection: HTTP1Connection
            let reused: Bool
            do {
                (connection, reused) = try await pool.acquire(key, deadline: plan.deadline, fresh: fresh)
            } catch {
                throw Self.failure(error, sent: false)
            }
            do {
                return try await connection.exchange(plan)
            } catch let error as StaleConnection {
                if reused, mayReplay, error.replayable, !fresh, !Task.isCancelled {
                    fresh = true
                    continue
                }
                throw Self.failure(error.underlying, sent: true, timedOut: error.timedOut)
            }
        }
    }

    /// The NIO request head: header lines as given, `Host` first when missing, framing from the body.
    static func requestHead(_ request: HTTPRequest, target: String, key: HTTP1ConnectionPool.Key,
                            bodyLength: HTTPBody.Length?) -> HTTPRequestHead {
        var headers = HTTPHeaders()
        headers.reserveCapacity(request.headerFields.count + 2)
        if request.headerFields[.init("Host")!] == nil {
            let host = key.host.contains(":") ? "[\(key.host)]" : key.host
            let defaultPort = key.scheme == "https" ? 443 : 80
            headers.add(name: "Host", value: key.port == defaultPort ? host : "\(host):\(key.port)")
        }
        for field in request.headerFields where field.name != .contentLength && field.name != .transferEncoding {
            headers.add(name: field.name.rawName, value: field.value)
        }
        switch bodyLength {
        case .none, .known(0):
            // RFC 9110 §8.6: no Content-Length for a bodiless request whose method expects no body.
            if ![.get, .head, .delete, .connect, .trace].contains(request.method) {
                headers.add(name: "Content-Length", value: "0")
            }
        case .known(let length):
            headers.add(name: "Content-Length", value: String(length))
        case .unknown:
            headers.add(name: "Transfer-Encoding", value: "chunked")
        }
        return HTTPRequestHead(version: .http1_1, method: HTTPClientTransport.method(request.method), uri: target,
                               headers: headers)
    }

    /// Any error as a `TransportFailure`. `sent`: the request may have reached the origin.
    static func failure(_ error: any Error, sent: Bool, timedOut: Bool = false) -> any Error {
        if Task.isCancelled || error is CancellationError {
            return TransportFailure(.cancelled, reason: "cancelled")
        }
        if let failure = error as? TransportFailure { return failure }
        if timedOut { return TransportFailure(.timedOut, reason: "the origin did not answer in time") }
        if let error = error as? HTTPParserError {
            return ClassifyingTransport.parserFailure(error)
        }
        if error is NIOHTTPDecoderError {
            return TransportFailure(.connectionLost, reason: "malformed response (\(error))")
        }
        if let error = error as? IOError {
            switch error.errnoCode {
            case ECONNREFUSED where !sent: return TransportFailure(.unreachable, reason: "connection refused")
            case ENETUNREACH where !sent, EHOSTUNREACH where !sent: return TransportFailure(.unreachable, reason: "no route to host")
            case ECONNRESET, EPIPE: return TransportFailure(.connectionLost, reason: "connection reset by peer")
            default:
                return TransportFailure(sent ? .connectionLost : .unreachable, reason: "I/O error \(error.errnoCode)")
            }
        }
        if let error = error as? ChannelError {
            switch error {
            case .connectTimeout: return TransportFailure(.unreachable, reason: "connect timed out")
            case .ioOnClosedChannel, .alreadyClosed, .eof, .outputClosed, .inputClosed:
                return TransportFailure(.connectionLost, reason: "the server closed the connection early")
            default: return TransportFailure(sent ? .connectionLost : .unreachable, reason: String(describing: error))
            }
        }
        if error is ConnectionClosed {
            return TransportFailure(.connectionLost, reason: "the server closed the connection early")
        }
        if error is NIOConnectionError {
            return TransportFailure(.unreachable, reason: "connection failed")
        }
        if error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError {
            return TransportFailure(.connectionLost, reason: "TLS failed (\(error))")
        }
        return TransportFailure(sent ? .connectionLost : .unreachable, reason: String(describing: error))
    }
}

extension TimeAmount {
    fileprivate init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

/// The channel closed while an exchange was under way.
struct ConnectionClosed: Error {}

/// A failed exchange, with what is known about how it failed.
struct StaleConnection: Error {
    /// The error that ended it.
    var underlying: any Error
    /// The head or read deadline ended it.
    var timedOut: Bool
    /// The connection closed (or was reset) before any of the response arrived: on a reused
    /// connection, most likely the origin closed it as idle before it read the request.
    var replayable = false

    static func isClose(_ error: any Error) -> Bool {
        switch error {
        case is ConnectionClosed: return true
        case let error as ChannelError: return [.ioOnClosedChannel, .alreadyClosed, .eof].contains(error)
        case let error as IOError: return error.errnoCode == ECONNRESET || error.errnoCode == EPIPE
        default: return false
        }
    }
}

/// What one exchange sends and how it waits.
struct ExchangePlan: Sendable {
    var head: HTTPRequestHead
    var body: HTTPBody?
    var isHead: Bool
    var closeAfter: Bool
    var deadline: NIODeadline
    var readTimeout: TimeAmount
    var interim: InterimResponses.Handler?
}

// MARK: - Pool

/// Keep-alive HTTP/1.1 connections per scheme, host and port, shared by ``HTTP1Transport``s.
///
/// At most ``Configuration/maxConnectionsPerHost`` connections are open to one origin (more
/// requests wait for one to come free, within their head timeout); an idle connection is closed
/// after ``Configuration/idleTimeout``, and at once when the origin closes it.
public final class HTTP1ConnectionPool: Sendable {
    /// Limits and timeouts of a pool.
    public struct Configuration: Sendable {
        /// Open connections to one origin, busy and idle together (default 64).
        public var maxConnectionsPerHost: Int
        /// How long an unused keep-alive connection is kept (default 60 s).
        public var idleTimeout: Duration
        /// How long making a connection (TCP, and TLS for `https`) may take (default 10 s).
        public var connectTimeout: Duration
        /// TLS for `https` origins (default: the system's trust roots; ALPN is always `http/1.1`).
        public var tls: TLSConfiguration

        /// Creates a configuration.
        public init(maxConnectionsPerHost: Int = 64, idleTimeout: Duration = .seconds(60),
                    connectTimeout: Duration = .seconds(10), tls: TLSConfiguration = .makeClientConfiguration()) {
            self.maxConnectionsPerHost = max(1, maxConnectionsPerHost)
            self.idleTimeout = idleTimeout
            self.connectTimeout = connectTimeout
            self.tls = tls
        }
    }

    /// The process-wide pool, on NIO's singleton event loop group.
    public static let shared = HTTP1ConnectionPool()

    /// The pool's limits.
    public let configuration: Configuration
    let group: any EventLoopGroup
    private let state = Mutex(State())
    /// Made once, on the first `https` connection.
    private let tlsContext = Mutex<NIOSSLContext?>(nil)

    /// Creates a pool whose connections run on `group`.
    public init(configuration: Configuration = .init(),
                group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.configuration = configuration
        self.group = group
    }

    /// The TLS context of `https` connections: ``Configuration/tls`` offering HTTP/1.1 only.
    private func makeTLSContext() throws -> NIOSSLContext {
        try tlsContext.withLock { context in
            if let context { return context }
            var configuration = self.configuration.tls
            configuration.applicationProtocols = ["http/1.1"]
            let made = try NIOSSLContext(configuration: configuration)
            context = made
            return made
        }
    }

    /// Connections open now (busy, idle or being made), over all origins.
    public var openConnections: Int {
        state.withLock { $0.hosts.values.reduce(0) { $0 + $1.open } }
    }

    /// Closes every idle connection; busy ones close when their exchange ends.
    public func closeIdleConnections() {
        let idle = state.withLock { state -> [IdleEntry] in
            var all: [IdleEntry] = []
            for key in state.hosts.keys {
                all += state.hosts[key]!.idle
                state.hosts[key]!.idle.removeAll()
            }
            return all
        }
        for entry in idle {
            entry.timer?.cancel()
            entry.connection.close()
        }
    }

    struct Key: Hashable, Sendable {
        var scheme: String
        var host: String
        var port: Int
    }

    private struct State: Sendable {
        var hosts: [Key: Host] = [:]
        var nextWaiter = 0
    }

    private struct Host: Sendable {
        /// Connections open or being made: each holds one of the host's slots until it closes.
        var open = 0
        var idle: [IdleEntry] = []
        var waiters: [Waiter] = []
    }

    private struct IdleEntry: Sendable {
        var connection: HTTP1Connection
        var timer: Scheduled<Void>?
    }

    private struct Waiter: Sendable {
        var id: Int
        var continuation: CheckedContinuation<Grant, any Error>
        var timer: Scheduled<Void>?
    }

    private enum Grant: Sendable {
        case connection(HTTP1Connection)
        case connect
    }

    private enum Decision {
        case reuse(HTTP1Connection)
        case connect
        case wait
    }

    /// A connection to `key`: an idle one (`reused` true) unless `fresh`, else a new one as soon
    /// as the host has a free slot.
    func acquire(_ key: Key, deadline: NIODeadline, fresh: Bool) async throws -> (HTTP1Connection, reused: Bool) {
        var expired: [Scheduled<Void>] = []
        let decision = state.withLock { state -> Decision in
            var host = state.hosts[key, default: Host()]
            defer { state.hosts[key] = host }
            if !fresh {
                while let entry = host.idle.popLast() {
                    if let timer = entry.timer { expired.append(timer) }
                    if entry.connection.isActive { return .reuse(entry.connection) }
                    // A closed one: its close callback frees its slot.
                }
            }
            if host.open < configuration.maxConnectionsPerHost {
                host.open += 1
                return .connect
            }
            return .wait
        }
        for timer in expired { timer.cancel() }
        switch decision {
        case .reuse(let connection):
            return (connection, true)
        case .connect:
            return (try await connect(key, deadline: deadline), false)
        case .wait:
            switch try await wait(key, deadline: deadline) {
            case .connection(let connection): return (connection, true)
            case .connect: return (try await connect(key, deadline: deadline), false)
            }
        }
    }

    private func wait(_ key: Key, deadline: NIODeadline) async throws -> Grant {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let loop = group.next()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Grant, any Error>) in
                let cancelled = state.withLock { state -> Bool in
                    if Task.isCancelled { return true }
                    let timer = loop.scheduleTask(deadline: deadline) { [self] in
                        abandon(key, id: id, error: TransportFailure(.timedOut, reason: "no connection to the origin came free in time"))
                    }
                    state.hosts[key, default: Host()].waiters.append(
                        Waiter(id: id, continuation: continuation, timer: timer))
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            abandon(key, id: id, error: CancellationError())
        }
    }

    private func abandon(_ key: Key, id: Int, error: any Error) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.hosts[key]?.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.hosts[key]!.waiters.remove(at: index)
        }
        waiter?.timer?.cancel()
        waiter?.continuation.resume(throwing: error)
    }

    /// Makes a new connection; the caller holds a slot of `key`'s host, which the connection
    /// keeps until it closes (or which is freed here when it cannot be made).
    private func connect(_ key: Key, deadline: NIODeadline) async throws -> HTTP1Connection {
        let remaining = deadline - .now()
        let limit = TimeAmount(configuration.connectTimeout)
        let timeout = min(limit, max(remaining, .milliseconds(1)))
        do {
            let tls = key.scheme == "https" ? try makeTLSContext() : nil
            let connection = try await HTTP1Connection.connect(key, tls: tls, group: group, timeout: timeout, pool: self)
            connection.channel.closeFuture.whenComplete { [self] _ in closed(connection) }
            return connection
        } catch {
            slotFreed(key)
            if timeout < limit, case .connectTimeout = error as? ChannelError {
                throw TransportFailure(.timedOut, reason: "the origin did not answer in time")
            }
            throw error
        }
    }

    /// A connection whose exchange ended cleanly and may carry another.
    func release(_ connection: HTTP1Connection) {
        let key = connection.key
        let idleTimeout = TimeAmount(configuration.idleTimeout)
        let waiter = state.withLock { state -> Waiter? in
            guard connection.isActive else { return nil }
            // A connection that has just completed an exchange is not stale: any waiter may have it.
            if state.hosts[key]?.waiters.isEmpty == false {
                return state.hosts[key]!.waiters.removeFirst()
            }
            // Parked before anyone can take it, so the handler is idle before a new exchange begins.
            connection.park()
            let timer = connection.channel.eventLoop.scheduleTask(in: idleTimeout) { [self] in expire(connection) }
            state.hosts[key, default: Host()].idle.append(IdleEntry(connection: connection, timer: timer))
            return nil
        }
        if let waiter {
            waiter.timer?.cancel()
            waiter.continuation.resume(returning: .connection(connection))
        } else if !connection.isActive {
            connection.close()
        }
    }

    private func expire(_ connection: HTTP1Connection) {
        let found = state.withLock { state -> Bool in
            guard let index = state.hosts[connection.key]?.idle.firstIndex(where: { $0.connection === connection }) else {
                return false
            }
            state.hosts[connection.key]!.idle.remove(at: index)
            return true
        }
        if found { connection.close() }
    }

    private func closed(_ connection: HTTP1Connection) {
        let timer = state.withLock { state -> Scheduled<Void>?? in
            guard let index = state.hosts[connection.key]?.idle.firstIndex(where: { $0.connection === connection }) else {
                return nil
            }
            return state.hosts[connection.key]!.idle.remove(at: index).timer
        }
        timer??.cancel()
        slotFreed(connection.key)
    }

    /// One of `key`'s slots is free: a waiter gets it, or the host has one connection fewer.
    private func slotFreed(_ key: Key) {
        let waiter = state.withLock { state -> Waiter? in
            guard var host = state.hosts[key] else { return nil }
            defer { state.hosts[key] = host.open == 0 && host.idle.isEmpty && host.waiters.isEmpty ? nil : host }
            if !host.waiters.isEmpty { return host.waiters.removeFirst() }
            host.open -= 1
            return nil
        }
        waiter?.timer?.cancel()
        waiter?.continuation.resume(returning: .connect)
    }
}

// MARK: - Connection

/// One HTTP/1.1 connection: the channel, and its handler on the channel's event loop.
final class HTTP1Connection: Sendable {
    let key: HTTP1ConnectionPool.Key
    let channel: any Channel
    private let handler: NIOLoopBound<HTTP1ConnectionHandler>
    /// Set when a deadline closed the connection.
    let flag: TimedOutFlag
    /// The pool the connection goes back to (a cycle while it is parked there, broken when it closes).
    let pool: HTTP1ConnectionPool?

    private init(key: HTTP1ConnectionPool.Key, channel: any Channel, handler: NIOLoopBound<HTTP1ConnectionHandler>,
                 flag: TimedOutFlag, pool: HTTP1ConnectionPool?) {
        self.key = key
        self.channel = channel
        self.handler = handler
        self.flag = flag
        self.pool = pool
    }

    /// A deadline closed the connection.
    var timedOut: Bool { flag.load() }

    var isActive: Bool { channel.isActive }

    func close() {
        channel.close(promise: nil)
    }

    static func connect(_ key: HTTP1ConnectionPool.Key, tls: NIOSSLContext?, group: any EventLoopGroup,
                        timeout: TimeAmount, pool: HTTP1ConnectionPool? = nil) async throws -> HTTP1Connection {
        let serverName: String? = key.host.isIPAddress ? nil : key.host
        let flag = TimedOutFlag()
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelOption(ChannelOptions.autoRead, value: false)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if let tls {
                        try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    }
                    let encoder = HTTPRequestEncoder(configuration: {
                        var configuration = HTTPRequestEncoder.Configuration()
                        configuration.automaticallySetFramingHeaders = false
                        return configuration
                    }())
                    let decoder = ByteToMessageHandler(
                        HTTPResponseDecoder(leftOverBytesStrategy: .dropBytes, informationalResponseStrategy: .forward))
                    try sync.addHandlers([encoder, decoder, NIOHTTPRequestHeadersValidator(),
                                          HTTP1ConnectionHandler(tls: tls != nil, flag: flag)])
                }
            }
            .connect(host: key.host, port: key.port).get()
        do {
            let handler = try await channel.eventLoop.submit {
                let handler = try channel.pipeline.syncOperations.handler(type: HTTP1ConnectionHandler.self)
                return NIOLoopBound(handler, eventLoop: channel.eventLoop)
            }.get()
            if tls != nil {
                let loop = channel.eventLoop
                try await loop.flatSubmit { handler.value.handshake(timeout: timeout) }.get()
            }
            return HTTP1Connection(key: key, channel: channel, handler: handler, flag: flag, pool: pool)
        } catch is ChannelPipelineError {
            // The origin closed the connection as it opened (its pipeline is gone): nothing was sent.
            channel.close(promise: nil)
            throw TransportFailure(.unreachable, reason: "the connection closed as soon as it opened")
        } catch {
            channel.close(promise: nil)
            throw error
        }
    }

    /// Parks the connection in the pool: any byte or close from the origin now closes it.
    func park() {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.park() }
    }

    /// Runs one exchange: sends the request, relays interim heads, and returns the final head
    /// with the body streaming from this connection. Failures are thrown as ``StaleConnection``.
    func exchange(_ plan: ExchangePlan) async throws -> (HTTPResponse, HTTPBody?) {
        let exchange = Exchange(connection: self, closeAfter: plan.closeAfter, readTimeout: plan.readTimeout)
        let handler = self.handler
        let loop = channel.eventLoop
        do {
            try await withTaskCancellationHandler {
                try await loop.flatSubmit { handler.value.begin(plan.head, deadline: plan.deadline, noBody: plan.body == nil) }.get()
            } onCancel: {
                self.close()
            }
            if let body = plan.body {
                exchange.startUpload(body, length: body.length)
            } else {
                exchange.uploadFinished(ok: true)
            }
            return try await exchange.readHead(isHead: plan.isHead, interim: plan.interim)
        } catch {
            exchange.abort()
            let timedOut = self.timedOut
            throw StaleConnection(underlying: error, timedOut: timedOut,
                                  replayable: !timedOut && !exchange.receivedAny && StaleConnection.isClose(error))
        }
    }

    /// The response parts received since the last call (at least one), waiting for them.
    /// `readTimeout`: how long the origin may stay silent meanwhile (`nil`: the head deadline applies).
    func nextParts(readTimeout: TimeAmount?) async throws -> Parts {
        let handler = self.handler
        let loop = channel.eventLoop
        return try await withTaskCancellationHandler {
            try await loop.flatSubmit { handler.value.next(readTimeout: readTimeout) }.get()
        } onCancel: {
            self.close()
        }
    }

    /// The final head arrived: the head deadline no longer applies.
    func headReceived() {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.headReceived() }
    }

    /// Writes parts of the request body in one flush, waiting until they are written.
    func write(_ parts: [HTTPClientRequestPart]) async throws {
        let channel = self.channel
        try await withTaskCancellationHandler {
            for part in parts.dropLast() { channel.write(part, promise: nil) }
            try await channel.writeAndFlush(parts[parts.count - 1]).get()
        } onCancel: {
            channel.close(promise: nil)
        }
    }
}

/// Response parts handed from the event loop to the exchange.
struct Parts: Sendable {
    /// At least one part.
    var parts: [HTTPClientResponsePart]
    /// Whether the request's end had been written to the socket by then.
    var requestWritten: Bool
}

/// Set on the event loop when a deadline closed the connection; read anywhere.
final class TimedOutFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func load() -> Bool { flag.load(ordering: .relaxed) }
    func set() { flag.store(true, ordering: .relaxed) }
    func reset() { flag.store(false, ordering: .relaxed) }
}

// MARK: - Exchange

/// One request/response on a connection: decides, once both directions are done, whether the
/// connection goes back to the pool or is closed. Its response body closes the connection when
/// dropped unfinished.
final class Exchange: Sendable {
    let connection: HTTP1Connection
    private let readTimeout: TimeAmount
    private struct State: Sendable {
        var uploadDone = false
        var uploadFailed = false
        var responseDone = false
        var reusable: Bool
        var settled = false
        var upload: Task<Void, Never>?
        var pending: CircularBuffer<HTTPClientResponsePart> = CircularBuffer()
        /// The request's end had been written when the last parts were read.
        var requestWritten = false
        /// Some of the response (an interim head at least) has arrived.
        var receivedAny = false
    }
    private let state: Mutex<State>

    init(connection: HTTP1Connection, closeAfter: Bool, readTimeout: TimeAmount) {
        self.connection = connection
        self.readTimeout = readTimeout
        state = Mutex(State(reusable: !closeAfter))
    }

    deinit {
        // A response body dropped before its end: the connection cannot be reused.
        let settled = state.withLock { $0.settled }
        if !settled { abort() }
    }

    /// Some of the response has arrived.
    var receivedAny: Bool { state.withLock { $0.receivedAny } }

    func startUpload(_ body: HTTPBody, length: HTTPBody.Length) {
        let task = Task { [self] in
            var sent: Int64 = 0
            do {
                for try await chunk in body {
                    sent += Int64(chunk.count)
                    let part = HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: chunk)))
                    if case .known(let expected) = length {
                        if sent > expected { throw ConnectionClosed() }
                        if sent == expected {
                            // The last bytes and the end in one flush: the origin cannot answer
                            // before the end is written, which lets the connection be reused.
                            try await connection.write([part, .end(nil)])
                            uploadFinished(ok: true)
                            return
                        }
                    }
                    try await connection.write([part])
                }
                if case .known(let expected) = length, sent != expected { throw ConnectionClosed() }
                try await connection.write([.end(nil)])
                uploadFinished(ok: true)
            } catch {
                uploadFinished(ok: false)
            }
        }
        state.withLock { $0.upload = task }
    }

    func uploadFinished(ok: Bool) {
        let settle = state.withLock { state -> Bool? in
            state.uploadDone = true
            if !ok {
                state.uploadFailed = true
                state.reusable = false
            }
            return Self.settle(&state, force: !ok)
        }
        apply(settle)
    }

    /// `nil`: not yet; `true`: back to the pool; `false`: close.
    private static func settle(_ state: inout State, force: Bool) -> Bool? {
        guard !state.settled else { return nil }
        if force {
            state.settled = true
            return false
        }
        guard state.responseDone else { return nil }
        state.settled = true
        return state.uploadDone && state.reusable
    }

    private func apply(_ settle: Bool?) {
        guard let settle else { return }
        if settle, let pool = connection.pool {
            pool.release(connection)
        } else {
            connection.close()
            state.withLock { $0.upload }?.cancel()
        }
    }

    /// Closes the connection unless the exchange is already settled.
    func abort() {
        let settle = state.withLock { Self.settle(&$0, force: true) }
        apply(settle)
    }

    private func responseFinished() {
        let settle = state.withLock { state -> Bool? in
            state.responseDone = true
            // The upload task may not have noted its end yet; it is written if the handler says so.
            if state.requestWritten { state.uploadDone = true }
            // An origin that answered before reading the whole request body gets the connection closed.
            if !state.uploadDone { return Self.settle(&state, force: true) }
            return Self.settle(&state, force: false)
        }
        apply(settle)
    }

    /// The next response part, reading from the connection when none is pending.
    private func nextPart(readTimeout: TimeAmount?) async throws -> HTTPClientResponsePart {
        if let part = state.withLock({ $0.pending.popFirst() }) { return part }
        let next = try await connection.nextParts(readTimeout: readTimeout)
        return state.withLock { state in
            state.pending.append(contentsOf: next.parts.dropFirst())
            state.requestWritten = next.requestWritten
            state.receivedAny = true
            return next.parts[0]
        }
    }

    /// Reads up to the final head, handing interim heads to `interim`.
    func readHead(isHead: Bool, interim: InterimResponses.Handler?) async throws -> (HTTPResponse, HTTPBody?) {
        var relayed = 0
        while true {
            guard case .head(let head) = try await nextPart(readTimeout: nil) else {
                throw HTTPParserError.invalidInternalState
            }
            let code = Int(head.status.code)
            if code >= 100, code < 200, code != 101 {
                // 100 Continue concerns this hop only; a flood of interim heads is not relayed past 32.
                if code != 100, let interim, relayed < 32 {
                    relayed += 1
                    await interim.receive(HTTPResponse(head))
                }
                continue
            }
            connection.headReceived()
            let response = HTTPResponse(head)
            if !head.isKeepAlive || code == 101 {
                state.withLock { $0.reusable = false }
            }
            if code == 101 {
                responseFinished()
                abort()
                return (response, nil)
            }
            let length: HTTPBody.Length = response.headerFields[.contentLength].flatMap { Int64($0) }.map { .known($0) } ?? .unknown
            if isHead || code == 204 || code == 304 {
                // No body: its end follows the head at once.
                while case .body = try await nextPart(readTimeout: readTimeout) {}
                responseFinished()
                return (response, isHead ? nil : HTTPBody(EmptyChunks(), length: length, iterationBehavior: .single))
            }
            return (response, HTTPBody(ResponseChunks(exchange: self), length: length, iterationBehavior: .single))
        }
    }

    /// The next body chunk, `nil` at the end of the body.
    func nextChunk() async throws -> HTTPBody.ByteChunk? {
        do {
            switch try await nextPart(readTimeout: readTimeout) {
            case .body(let buffer):
                return HTTPBody.ByteChunk(buffer.readableBytesView)
            case .end:
                responseFinished()
                return nil
            case .head:
                throw HTTPParserError.invalidInternalState
            }
        } catch {
            abort()
            throw HTTP1Transport.failure(error, sent: true, timedOut: connection.timedOut)
        }
    }
}

/// The body of a response, read from its exchange's connection as it is asked for.
struct ResponseChunks: AsyncSequence, Sendable {
    typealias Element = HTTPBody.ByteChunk
    let exchange: Exchange

    struct AsyncIterator: AsyncIteratorProtocol {
        let exchange: Exchange
        var done = false

        mutating func next() async throws -> HTTPBody.ByteChunk? {
            guard !done else { return nil }
            if let chunk = try await exchange.nextChunk() { return chunk }
            done = true
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(exchange: exchange) }
}

/// The body of a response that has none (`204`, `304`).
struct EmptyChunks: AsyncSequence, Sendable {
    typealias Element = HTTPBody.ByteChunk
    struct AsyncIterator: AsyncIteratorProtocol {
        mutating func next() async throws -> HTTPBody.ByteChunk? { nil }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator() }
}

extension HTTPResponse {
    /// The NIO head as a response: status and header lines as received, in order.
    init(_ head: HTTPResponseHead) {
        var fields = HTTPFields()
        fields.reserveCapacity(head.headers.count)
        for (name, value) in head.headers {
            if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        let code = Int(head.status.code)
        // NIO has no phrase for 103 (it does not keep the one received either).
        let phrase = head.status.reasonPhrase.isEmpty && code == 103 ? "Early Hints" : head.status.reasonPhrase
        self.init(status: .init(code: code, reasonPhrase: phrase), headerFields: fields)
    }
}

extension String {
    /// An IPv4 or IPv6 literal (which TLS's SNI must not carry).
    fileprivate var isIPAddress: Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, self, &v4) == 1 || inet_pton(AF_INET6, self, &v6) == 1
    }
}

// MARK: - Channel handler

/// The event-loop side of a connection: buffers response parts until the exchange asks for
/// them, and reads from the socket only when asked (auto-read is off), so a slow reader slows
/// the origin down instead of filling memory.
final class HTTP1ConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    private let tls: Bool
    private var context: ChannelHandlerContext?
    private var buffered: [HTTPClientResponsePart] = []
    private var waiter: EventLoopPromise<Parts>?
    private var failure: (any Error)?
    private var reading = false
    private var parked = false
    private var handshakePromise: EventLoopPromise<Void>?
    private var handshakeDone = false
    private var headTimer: Scheduled<Void>?
    /// The whole request, its end included, has been written to the socket.
    private var requestWritten = false
    private var readTimer: Scheduled<Void>?
    private let flag: TimedOutFlag
    private var loop: (any EventLoop)?

    init(tls: Bool, flag: TimedOutFlag) {
        self.tls = tls
        self.flag = flag
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        loop = context.eventLoop
        if tls, context.channel.isActive { context.read() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        if tls { context.read() }
        context.fireChannelActive()
    }

    /// Waits for the TLS handshake, for at most `timeout`.
    func handshake(timeout: TimeAmount) -> EventLoopFuture<Void> {
        guard let context else { return Self.closedFuture(on: loop) }
        if handshakeDone { return context.eventLoop.makeSucceededVoidFuture() }
        if let failure { return context.eventLoop.makeFailedFuture(failure) }
        let promise = context.eventLoop.makePromise(of: Void.self)
        handshakePromise = promise
        let timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
            fail(ChannelError.connectTimeout(timeout))
            self.context?.close(promise: nil)
        }
        promise.futureResult.whenComplete { _ in timer.cancel() }
        context.read()
        return promise.futureResult
    }

    private static func closedFuture(on loop: (any EventLoop)?) -> EventLoopFuture<Void> {
        (loop ?? MultiThreadedEventLoopGroup.singleton.next()).makeFailedFuture(ConnectionClosed())
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            handshakeDone = true
            let promise = handshakePromise
            handshakePromise = nil
            promise?.succeed()
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Parked in the pool: read, to notice the origin closing.
    func park() {
        parked = true
        buffered.removeAll()
        if !reading, let context, failure == nil {
            reading = true
            context.read()
        }
    }

    /// Starts an exchange: writes the request head (and its end when there is no body) and arms
    /// the head deadline.
    func begin(_ head: HTTPRequestHead, deadline: NIODeadline, noBody: Bool) -> EventLoopFuture<Void> {
        guard let context else { return Self.closedFuture(on: loop) }
        if let failure { return context.eventLoop.makeFailedFuture(failure) }
        parked = false
        buffered.removeAll()
        requestWritten = false
        flag.reset()
        headTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            timeOut()
        }
        // Through this handler's own write, which notes when the request is complete.
        let promise = context.eventLoop.makePromise(of: Void.self)
        if noBody {
            write(context: context, data: wrapOutboundOut(.head(head)), promise: nil)
            write(context: context, data: wrapOutboundOut(.end(nil)), promise: promise)
        } else {
            write(context: context, data: wrapOutboundOut(.head(head)), promise: promise)
        }
        context.flush()
        return promise.futureResult
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        // Noted so that a response ending right after the request can release the connection.
        // (The last body bytes of a request go out together with its end: no response can
        // complete before this is set.)
        let written = promise ?? context.eventLoop.makePromise(of: Void.self)
        written.futureResult.assumeIsolated().whenSuccess { [self] in requestWritten = true }
        context.write(data, promise: written)
    }

    func headReceived() {
        headTimer?.cancel()
        headTimer = nil
    }

    private func timeOut() {
        flag.set()
        fail(TransportFailure(.timedOut, reason: "the origin did not answer in time"))
        context?.close(promise: nil)
    }

    /// The parts received so far, or a future for the next ones; with them, whether the request's
    /// end has been written.
    func next(readTimeout: TimeAmount?) -> EventLoopFuture<Parts> {
        precondition(waiter == nil, "one reader at a time")
        let loop = self.loop ?? MultiThreadedEventLoopGroup.singleton.next()
        if !buffered.isEmpty {
            // What arrived before the connection closed is still delivered.
            let parts = buffered
            buffered.removeAll(keepingCapacity: true)
            // Read ahead by one socket read while the caller handles these.
            if !reading, failure == nil, let context {
                reading = true
                context.read()
            }
            return loop.makeSucceededFuture(Parts(parts: parts, requestWritten: requestWritten))
        }
        guard failure == nil, let context else { return loop.makeFailedFuture(failure ?? ConnectionClosed()) }
        let promise = loop.makePromise(of: Parts.self)
        waiter = promise
        if let readTimeout {
            readTimer = loop.assumeIsolated().scheduleTask(in: readTimeout) { [self] in
                timeOut()
            }
        }
        if !reading {
            reading = true
            context.read()
        }
        return promise.futureResult
    }

    private func deliver() {
        guard let waiter else { return }
        if !buffered.isEmpty {
            self.waiter = nil
            readTimer?.cancel()
            readTimer = nil
            let parts = buffered
            buffered.removeAll(keepingCapacity: true)
            waiter.succeed(Parts(parts: parts, requestWritten: requestWritten))
        } else if let failure {
            self.waiter = nil
            readTimer?.cancel()
            readTimer = nil
            waiter.fail(failure)
        } else if !reading, let context {
            reading = true
            context.read()
        }
    }

    private func fail(_ error: any Error) {
        if failure == nil { failure = error }
        headTimer?.cancel()
        headTimer = nil
        if let promise = handshakePromise {
            handshakePromise = nil
            promise.fail(failure!)
        }
        deliver()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if parked {
            // Nothing is expected on an idle connection.
            context.close(promise: nil)
            return
        }
        buffered.append(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        reading = false
        if tls, !handshakeDone, failure == nil {
            reading = true
            context.read()
        } else if parked {
            if failure == nil {
                reading = true
                context.read()
            }
        } else {
            deliver()
        }
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(ConnectionClosed())
        context.fireChannelInactive()
    }
}
