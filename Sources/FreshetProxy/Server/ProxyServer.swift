import Foundation
import Freshet
import FreshetCache
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOFoundationCompat
import OpenAPIRuntime
import ServiceLifecycle
import Synchronization
import UnixSignals

/// The HTTP server in front of ``ProxyForwarder``: Hummingbird's HTTP/1.1 server, run directly
/// (not through `Hummingbird.Application`, which replaces every response's `Date` with its own:
/// a proxy keeps the origin's `Date`, which the `Age` of a cache hit counts from).
///
/// It is a swift-service-lifecycle `Service`: run it in a `ServiceGroup` (which `freshet proxy`
/// gives SIGINT and SIGTERM), or in any task. ``run()`` serves until a graceful shutdown is
/// triggered (by the group, or `ServiceGroup.triggerGracefulShutdown()`): then the server stops
/// accepting connections, lets the requests in flight finish, closes idle connections, and
/// returns. Cancelling the task stops it at once. The group's
/// `maximumGracefulShutdownDuration` bounds how long the requests in flight may take.
///
/// ``operatorServer(host:port:onListening:)`` makes the second service: `/metrics`, `/healthz`,
/// `/readyz` and `POST /purge` on a listener of their own. Put it in the group *before* the
/// proxy: a group shuts its services down in reverse order, so `/healthz` answers `503` while
/// the proxy drains.
///
/// ```swift
/// let proxy = ProxyServer(forwarder: forwarder, host: "127.0.0.1", port: 8080, logger: logger,
///                         onListening: { print("listening on http://127.0.0.1:\($0)") })
/// let operator = proxy.operatorServer(host: "127.0.0.1", port: 9100)
/// let group = ServiceGroup(configuration: .init(
///     services: [operator, proxy], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
/// try await group.run()
/// ```
public struct ProxyServer: Service, Sendable {
    /// Forwards what the hit path does not answer.
    public var forwarder: ProxyForwarder
    /// The address to listen on.
    public var host: String
    /// The port (0 picks a free one).
    public var port: Int
    /// Where the server reports its own trouble (a connection that failed, a shutdown error).
    /// Requests are reported to ``log``, not here.
    public var logger: Logger
    /// Called once, with the bound port, when the server accepts connections.
    public var onListening: @Sendable (Int) -> Void
    /// Receives one entry per request, when set, hits answered on the event loop included (it is
    /// then called there: keep it short). ``ProxyLogEntry/text`` is `freshet proxy --log`'s
    /// line, `GET /path 200 hit 0.4ms` (method, target with secret query values redacted,
    /// status, cache outcome or `-`, duration; ` aborted` appended when the answer could not be
    /// sent to the end); ``ProxyLogEntry/json`` is `--log-format json`'s.
    public var log: (@Sendable (ProxyLogEntry) -> Void)?
    /// How long a client connection may sit idle — nothing read, nothing answered, no answer
    /// being written — before the server closes it (75 s by default, as nginx's
    /// `keepalive_timeout`).
    public var idleTimeout: Duration = .seconds(75)
    /// Where the server is in its life: starting, serving, draining, stopped (for `/healthz`).
    /// Copies of a server share it.
    public let status = ProxyServerStatus()

    /// The signals `freshet proxy` shuts down gracefully on, SIGTERM and SIGINT: a
    /// `ServiceGroupConfiguration`'s `gracefulShutdownSignals`.
    public static let gracefulShutdownSignals: [UnixSignal] = [.sigterm, .sigint]
    /// How long `freshet proxy` lets requests in flight finish after a shutdown signal (then
    /// they are cancelled): a `ServiceGroupConfiguration`'s `maximumGracefulShutdownDuration`.
    public static let gracePeriod: Duration = .seconds(30)

    /// A server for `forwarder` on `host:port`.
    public init(forwarder: ProxyForwarder, host: String, port: Int, logger: Logger,
                onListening: @escaping @Sendable (Int) -> Void = { _ in },
                log: (@Sendable (ProxyLogEntry) -> Void)? = nil) {
        self.forwarder = forwarder
        self.host = host
        self.port = port
        self.logger = logger
        self.onListening = onListening
        self.log = log
    }

    /// Serves until a graceful shutdown is triggered, then lets the requests in flight finish
    /// and returns; returns at once when cancelled. Throws ``ProxyListenError`` when the address
    /// cannot be bound. Run it once.
    public func run() async throws {
        let forwarder = self.forwarder
        let log = self.log
        let onListening = self.onListening
        let port = self.port
        let idleTimeout = self.idleTimeout
        let status = self.status
        // Hummingbird's HTTP/1.1 server with the hit handler in its pipeline: hits are answered on
        // the event loop, everything else by `respond` in a task of its own.
        let answering = HitAnswering(forwarder: forwarder, prepared: PreparedAnswers(), log: log)
        let builder = HTTPServerBuilder { responder in
            ProxyHTTP1Channel(responder: responder, idleTimeout: idleTimeout, answering: answering)
        }
        let server = try builder.buildServer(
            configuration: ServerConfiguration(address: .hostname(host, port: port), serverName: nil),
            eventLoopGroup: EventLoopGroupProvider.singleton.eventLoopGroup,
            logger: logger,
            responder: { request, writer, _ in
                try await Self.respond(to: request, writer: writer, forwarder: forwarder, log: log)
            },
            onServerRunning: { channel in
                status.set(.serving)
                onListening(channel.localAddress?.port ?? port)
            })
        defer {
            answering.origins.closeAll()
            status.set(.stopped)
        }
        do {
            try await withGracefulShutdownHandler {
                try await server.run()
            } onGracefulShutdown: {
                status.set(.draining)
            }
        } catch let error as IOError {
            throw ProxyListenError(code: error.errnoCode, address: ProxyListenError.address(host, port))
        }
    }

    /// The operator's endpoints for this server — `/metrics`, `/healthz`, `/readyz`,
    /// `POST /purge` — as a service listening on `host:port` (port 0 picks one). See
    /// ``ProxyOperatorServer``.
    public func operatorServer(host: String, port: Int, onListening: @escaping @Sendable (Int) -> Void = { _ in })
        -> ProxyOperatorServer
    {
        ProxyOperatorServer(proxy: self, host: host, port: port, onListening: onListening)
    }

    /// `head` with its method as the client wrote it: NIO reads `M-SEARCH` as its `.MSEARCH`,
    /// which HTTP types spell without the hyphen, so the log would say `MSEARCH`.
    static func spelledAsSent(_ head: HTTPRequest) -> HTTPRequest {
        guard head.method.rawValue == "MSEARCH", let spelled = HTTPRequest.Method("M-SEARCH") else { return head }
        var head = head
        head.method = spelled
        return head
    }

    /// Forwards one request and writes the answer, streaming its body.
    static func respond(to request: Request, writer: consuming ResponseWriter, forwarder: ProxyForwarder,
                        log: (@Sendable (ProxyLogEntry) -> Void)?) async throws {
        let start = ContinuousClock.now
        let head = spelledAsSent(request.head)
        let relay = bodyRelay(for: request)
        // The hit path: what the store answers is written at once — no task, no origin-side chain.
        if relay == nil, let answer = await forwarder.storedAnswer(head) {
            try await write(answer, for: head, to: writer, start: start, log: log, metrics: forwarder.metrics)
            return
        }
        forwarder.metrics?.forwarding(1)
        defer { forwarder.metrics?.forwarding(-1) }
        if relay != nil, request.headers[.expect]?.lowercased() == "100-continue" {
            try await writer.writeInformationalHead(HTTPResponse(status: .continue))
        }
        // The origin's interim (1xx) responses reach the client before the answer: the forward runs
        // in a task of its own whose task-local handler hands them over, and this task writes them
        // as they come (the writer stays here). The stream ends when the forward has returned.
        // (Not `async let`: with it, TaskLocal.withValue crashed in optimized builds, Swift 6.3.)
        let (interims, interimSink) = AsyncStream.makeStream(of: HTTPResponse.self)
        let forwarding = Task { await forward(head, body: relay?.body, with: forwarder, interims: interimSink) }
        do {
            for await interim in interims {
                var informational = interim
                informational.headerFields = ProxyHeaders.forwardable(interim.headerFields)
                try await writer.writeInformationalHead(informational)
            }
        } catch {
            // The client left.
            forwarding.cancel()
            await relay?.finish()
            throw error
        }
        let answer = await withTaskCancellationHandler {
            await forwarding.value
        } onCancel: {
            forwarding.cancel()
        }
        do {
            try await write(answer, for: head, to: writer, start: start, log: log, metrics: forwarder.metrics)
        } catch {
            await relay?.finish()
            throw error
        }
        await relay?.finish()
    }

    /// Writes `answer` (its body streamed) and logs the request.
    private static func write(_ answer: ProxyResponse, for head: HTTPRequest, to writer: consuming ResponseWriter,
                              start: ContinuousClock.Instant, log: (@Sendable (ProxyLogEntry) -> Void)?,
                              metrics: ProxyMetrics?) async throws {
        func record(aborted: Bool) {
            metrics?.answered(answer.outcome, request: head.headerFields)
            log?(ProxyLogEntry(head, status: answer.head.status.code, outcome: answer.outcome,
                               duration: ContinuousClock.now - start, answer: answer.head.headerFields, aborted: aborted))
        }
        do {
            if let complete = answer.complete, head.method != .head {
                // Head, body and end in one write.
                try await writer.write(response: answer.head, body: ResponseBody(byteBuffer: ByteBuffer(data: complete)))
            } else if let body = answer.body, head.method != .head {
                var bodyWriter = try await writer.writeHead(answer.head)
                for try await chunk in body {
                    try await bodyWriter.write(ByteBuffer(bytes: chunk))
                }
                try await bodyWriter.finish(nil)
            } else {
                try await writer.writeResponse(answer.head)
                await HTTPBody.discard(answer.discarded ?? answer.body)
            }
        } catch {
            // The origin failed mid-body or the client left: the connection is closed, so the
            // client sees a cut-off response rather than a complete-looking wrong one.
            record(aborted: true)
            throw error
        }
        record(aborted: false)
    }

    /// Forwards with the origin's interim responses going to `interims`, which ends when this returns.
    static func forward(_ head: HTTPRequest, body: HTTPBody?, with forwarder: ProxyForwarder,
                        interims: AsyncStream<HTTPResponse>.Continuation) async -> ProxyResponse {
        defer { interims.finish() }
        return await InterimResponses.$handler.withValue(.init { interim in _ = interims.yield(interim) }) {
            await forwarder.forward(head, body: body)
        }
    }

    /// The request body as a relay to the origin, or `nil` when the request has none.
    static func bodyRelay(for request: Request) -> ProxyBodyRelay? {
        let length = request.headers[.contentLength].flatMap { Int($0.trimmingOWS()) }
        let chunked = request.headers[.transferEncoding] != nil
        guard chunked || (length ?? 0) > 0 else { return nil }
        return ProxyBodyRelay(request.body.map { ArraySlice($0.readableBytesView) }, length: chunked ? nil : length,
                              replayable: request.head.isIdempotent)
    }
}

/// Where a ``ProxyServer`` is in its life, as `/healthz` reports it.
public final class ProxyServerStatus: Sendable {
    /// A phase of the server's life.
    public enum Phase: String, Sendable {
        /// ``ProxyServer/run()`` has not bound its address yet.
        case starting
        /// Accepting connections.
        case serving
        /// A graceful shutdown began: no new connections; the requests in flight finish.
        case draining
        /// ``ProxyServer/run()`` has returned.
        case stopped
    }

    private let phase = Mutex(Phase.starting)

    /// A status at ``Phase/starting``.
    public init() {}

    /// The current phase.
    public var current: Phase { phase.withLock { $0 } }

    /// Moves to `next`; a server never goes back (draining stays draining when the server
    /// starts listening late, stopped stays stopped).
    func set(_ next: Phase) {
        phase.withLock { phase in
            let order: [Phase] = [.starting, .serving, .draining, .stopped]
            if order.firstIndex(of: next)! > order.firstIndex(of: phase)! { phase = next }
        }
    }
}

/// ``ProxyServer/run()`` or ``ProxyOperatorServer/run()`` could not listen on its address.
public struct ProxyListenError: Error, CustomStringConvertible {
    /// The system's error number (`EADDRINUSE`, `EACCES`, …).
    public var code: Int32
    /// The address that could not be bound, `HOST:PORT` (`[HOST]:PORT` for IPv6).
    public var address: String

    /// An error for `address` with the system's error number `code`.
    public init(code: Int32, address: String) {
        self.code = code
        self.address = address
    }

    /// `HOST:PORT`, with an IPv6 host in brackets.
    static func address(_ host: String, _ port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The system's message, and what to do when the port is taken or privileged.
    public var description: String {
        let reason = String(cString: strerror(code))
        switch code {
        case EADDRINUSE: return "\(reason) (another process listens there; choose another port, or 0 for a free one)"
        case EACCES: return "\(reason) (ports below 1024 need privileges; choose a higher port, or 0 for a free one)"
        default: return reason
        }
    }
}
