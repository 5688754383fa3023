import Foundation
import Freshet
import FreshetCache
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import OpenAPIRuntime
import ServiceLifecycle
import UnixSignals

/// The HTTP server in front of ``ProxyForwarder``: Hummingbird's HTTP/1.1 server, run directly
/// (not through `Hummingbird.Application`, which replaces every response's `Date` with its own:
/// a proxy keeps the origin's `Date`, which the `Age` of a cache hit counts from).
///
/// SIGINT and SIGTERM shut it down gracefully: it stops accepting connections, lets the requests
/// in flight finish (for at most ``gracePeriod``, then they are cancelled), closes idle
/// connections, and ``run()`` returns.
public struct ProxyServer: Sendable {
    /// Forwards what the hit path does not answer.
    public var forwarder: ProxyForwarder
    /// The address to listen on.
    public var host: String
    /// The port (0 picks a free one).
    public var port: Int
    /// Called once, with the bound port, when the server accepts connections.
    public var onListening: @Sendable (Int) -> Void
    /// Receives one line per request, when set: `GET /path 200 hit 0.4ms` (method, target with
    /// secret query values redacted, status, cache outcome or `-`, duration; ` aborted` appended
    /// when the answer could not be sent to the end).
    public var log: (@Sendable (String) -> Void)?
    /// How long in-flight requests may take to finish after a shutdown signal.
    public var gracePeriod: Duration = .seconds(30)
    /// Where to serve the forwarder's ``ProxyMetrics`` as Prometheus text at `/metrics`, when
    /// set (port 0 picks one). Ignored when the forwarder has no metrics.
    public var metricsAddress: (host: String, port: Int)?
    /// Called once, with the bound port, when the metrics endpoint accepts connections.
    public var onMetricsListening: @Sendable (Int) -> Void = { _ in }

    /// A server for `forwarder` on `host:port`.
    public init(forwarder: ProxyForwarder, host: String, port: Int, onListening: @escaping @Sendable (Int) -> Void,
                log: (@Sendable (String) -> Void)? = nil) {
        self.forwarder = forwarder
        self.host = host
        self.port = port
        self.onListening = onListening
        self.log = log
    }

    /// Serves until SIGINT or SIGTERM. Throws ``ProxyListenError`` when the address cannot be bound.
    public func run() async throws {
        var logger = Logger(label: "freshet.proxy") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .error
        let forwarder = self.forwarder
        let log = self.log
        let onListening = self.onListening
        let port = self.port
        // Hummingbird's HTTP/1.1 server with the hit handler in its pipeline: hits are answered on
        // the event loop, everything else by `respond` in a task of its own.
        let prepared = PreparedAnswers()
        let builder = HTTPServerBuilder { responder in
            ProxyHTTP1Channel(responder: responder, idleTimeout: .seconds(75), forwarder: forwarder, prepared: prepared,
                              log: log)
        }
        let server = try builder.buildServer(
            configuration: ServerConfiguration(address: .hostname(host, port: port), serverName: nil),
            eventLoopGroup: EventLoopGroupProvider.singleton.eventLoopGroup,
            logger: logger,
            responder: { request, writer, _ in
                try await Self.respond(to: request, writer: writer, forwarder: forwarder, log: log)
            },
            onServerRunning: { channel in
                onListening(channel.localAddress?.port ?? port)
            })
        var services: [any Service] = [server]
        if let metrics = forwarder.metrics, let address = metricsAddress {
            let store = forwarder.cache.store as? any MemoryLookup
            services.append(try Self.metricsServer(metrics, memoryTierBytes: { store?.memoryTierBytes ?? 0 }, host: address.host, port: address.port, logger: logger,
                                                   onListening: onMetricsListening))
        }
        var configuration = ServiceGroupConfiguration(
            services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        configuration.maximumGracefulShutdownDuration = gracePeriod
        do {
            try await ServiceGroup(configuration: configuration).run()
        } catch let error as IOError {
            throw ProxyListenError(code: error.errnoCode)
        }
    }

    /// A plain HTTP/1.1 server answering `GET /metrics` with `metrics` in Prometheus' text
    /// format, and `404` to anything else.
    static func metricsServer(_ metrics: ProxyMetrics, memoryTierBytes: @escaping @Sendable () -> Int, host: String, port: Int, logger: Logger,
                              onListening: @escaping @Sendable (Int) -> Void) throws -> any Service {
        try HTTPServerBuilder.http1().buildServer(
            configuration: ServerConfiguration(address: .hostname(host, port: port), serverName: nil),
            eventLoopGroup: EventLoopGroupProvider.singleton.eventLoopGroup,
            logger: logger,
            responder: { request, writer, _ in
                let path = request.head.path?.split(separator: "?", maxSplits: 1).first.map(String.init)
                let found = path == "/metrics" && (request.head.method == .get || request.head.method == .head)
                let text = found ? metrics.exposition(memoryTierBytes: memoryTierBytes()) : "not found: the metrics are at /metrics\n"
                let fields: HTTPFields = [
                    .contentType: found ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8",
                    .cacheControl: "no-store",
                ]
                let head = HTTPResponse(status: found ? .ok : .notFound, headerFields: fields)
                if request.head.method == .head {
                    var withLength = head
                    withLength.headerFields[.contentLength] = String(text.utf8.count)
                    try await writer.writeResponse(withLength)
                } else {
                    try await writer.write(response: head, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
                }
            },
            onServerRunning: { channel in
                onListening(channel.localAddress?.port ?? port)
            })
    }

    /// Forwards one request and writes the answer, streaming its body.
    static func respond(to request: Request, writer: consuming ResponseWriter, forwarder: ProxyForwarder,
                        log: (@Sendable (String) -> Void)?) async throws {
        let start = ContinuousClock.now
        let head = request.head
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
                              start: ContinuousClock.Instant, log: (@Sendable (String) -> Void)?,
                              metrics: ProxyMetrics?) async throws {
        func record(aborted: Bool) {
            metrics?.answered(answer.outcome)
            log?(ProxyLogLine.format(
                method: head.method.rawValue, target: head.path ?? "", status: answer.head.status.code,
                outcome: answer.outcome, duration: ContinuousClock.now - start, aborted: aborted))
        }
        do {
            if let complete = answer.complete, head.method != .head {
                // Head, body and end in one write.
                try await writer.write(response: answer.head, body: ResponseBody(byteBuffer: ByteBuffer(bytes: complete)))
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

/// ``ProxyServer/run()`` could not listen on its address.
public struct ProxyListenError: Error, CustomStringConvertible {
    /// The system's error number (`EADDRINUSE`, `EACCES`, …).
    public var code: Int32

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
