import Foundation
import Freshet
import FreshetCache
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// The operator's side of a ``ProxyServer`` — `freshet proxy --metrics HOST:PORT` — on a
/// listener of its own, as a swift-service-lifecycle `Service` (make it with
/// ``ProxyServer/operatorServer(host:port:onListening:)``):
///
/// | request | answer |
/// |---|---|
/// | `GET /metrics` | the forwarder's ``ProxyMetrics`` in Prometheus' text format (`404` when it has none) |
/// | `GET /healthz` | `200 ok` while the proxy serves; `503` before it listens and once a graceful shutdown began |
/// | `GET /readyz` | `200 ready` while the proxy serves and its store answers (`CacheStoreReadiness`: a trivial read of SQLite; PostgreSQL connected and not answering from memory alone); `503` with a one-line reason otherwise |
/// | `POST /purge?path=/repos/a/b` | removes every stored response to that request target — every variant, every credential's copy, on every instance sharing a PostgreSQL store — and answers `200` with `{"purged":true,"url":"…"}`; `400` without a valid path (a target starting with `/`), `405` to other methods |
///
/// `HEAD` is answered like `GET` without a body. Nothing here asks for a credential: anyone who
/// can connect can purge the cache. Bind it to loopback (`freshet proxy` does by default) and
/// never expose it beyond the machine, or only behind something that checks who asks.
///
/// In a `ServiceGroup`, put it before the proxy: the group shuts services down in reverse
/// order, so this one still answers (`/healthz` `503`) while the proxy drains.
public struct ProxyOperatorServer: Service, Sendable {
    /// The proxy whose state, store and metrics the endpoints report.
    public let proxy: ProxyServer
    /// The address to listen on (loopback: the endpoints ask for no credential).
    public var host: String
    /// The port (0 picks a free one).
    public var port: Int
    /// Called once, with the bound port, when the endpoints accept connections.
    public var onListening: @Sendable (Int) -> Void

    /// The endpoints of `proxy` on `host:port`.
    public init(proxy: ProxyServer, host: String, port: Int, onListening: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.proxy = proxy
        self.host = host
        self.port = port
        self.onListening = onListening
    }

    /// Serves until a graceful shutdown is triggered (or the task is cancelled). Throws
    /// ``ProxyListenError`` when the address cannot be bound.
    public func run() async throws {
        let proxy = self.proxy
        let port = self.port
        let onListening = self.onListening
        let server = try HTTPServerBuilder.http1().buildServer(
            configuration: ServerConfiguration(address: .hostname(host, port: port), serverName: nil),
            eventLoopGroup: EventLoopGroupProvider.singleton.eventLoopGroup,
            logger: proxy.logger,
            responder: { request, writer, _ in
                let answer = await Self.answer(method: request.head.method, target: request.head.path ?? "/", proxy: proxy)
                var fields: HTTPFields = [
                    .contentType: answer.contentType, .contentLength: String(answer.body.utf8.count), .cacheControl: "no-store",
                ]
                if let allow = answer.allow { fields[.allow] = allow }
                let head = HTTPResponse(status: answer.status, headerFields: fields)
                if request.head.method == .head {
                    try await writer.writeResponse(head)
                } else {
                    try await writer.write(response: head, body: ResponseBody(byteBuffer: ByteBuffer(string: answer.body)))
                }
            },
            onServerRunning: { channel in
                onListening(channel.localAddress?.port ?? port)
            })
        do {
            try await server.run()
        } catch let error as IOError {
            throw ProxyListenError(code: error.errnoCode, address: ProxyListenError.address(host, port))
        }
    }

    /// An answer of the endpoints.
    struct Answer: Sendable, Equatable {
        var status: HTTPResponse.Status
        var body: String
        var contentType = "text/plain; charset=utf-8"
        var allow: String?
    }

    /// The answer to `method target`.
    static func answer(method: HTTPRequest.Method, target: String, proxy: ProxyServer) async -> Answer {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts.first.map(String.init) ?? "/"
        let readable = method == .get || method == .head
        switch path {
        case "/metrics", "/healthz", "/readyz":
            guard readable else { return Answer(status: .methodNotAllowed, body: "\(path) answers GET and HEAD\n", allow: "GET, HEAD") }
            if path == "/healthz" { return health(proxy.status.current) }
            if path == "/readyz" { return await readiness(proxy) }
            guard let metrics = proxy.forwarder.metrics else {
                return Answer(status: .notFound, body: "the proxy keeps no metrics (its forwarder was made without ProxyMetrics)\n")
            }
            let store = proxy.forwarder.cache.store.memoryLookup
            return Answer(status: .ok, body: metrics.exposition(memoryTierBytes: store?.memoryTierBytes ?? 0),
                          contentType: "text/plain; version=0.0.4; charset=utf-8")
        case "/purge":
            guard method == .post else { return Answer(status: .methodNotAllowed, body: "/purge answers POST\n", allow: "POST") }
            return await purge(query: parts.count > 1 ? String(parts[1]) : "", proxy: proxy)
        default:
            return Answer(status: .notFound, body: "not found: the endpoints are /metrics, /healthz, /readyz and POST /purge?path=/…\n")
        }
    }

    /// `/healthz`: whether the proxy serves.
    static func health(_ phase: ProxyServerStatus.Phase) -> Answer {
        switch phase {
        case .serving: return Answer(status: .ok, body: "ok\n")
        case .starting: return Answer(status: .serviceUnavailable, body: "starting: the proxy does not listen yet\n")
        case .draining: return Answer(status: .serviceUnavailable, body: "shutting down: the requests in flight are finishing\n")
        case .stopped: return Answer(status: .serviceUnavailable, body: "stopped\n")
        }
    }

    /// `/readyz`: whether the proxy serves and its store answers.
    static func readiness(_ proxy: ProxyServer) async -> Answer {
        let health = health(proxy.status.current)
        guard health.status == .ok else { return health }
        guard let store = proxy.forwarder.cache.store as? any CacheStoreReadiness else {
            return Answer(status: .ok, body: "ready (the store has no readiness check)\n")
        }
        switch await store.readiness() {
        case .ready: return Answer(status: .ok, body: "ready\n")
        case .notReady(let reason):
            let line = reason.split(whereSeparator: \.isNewline).joined(separator: " ")
            return Answer(status: .serviceUnavailable, body: "not ready: \(line)\n")
        }
    }

    /// `POST /purge?path=TARGET`: removes every stored response to `TARGET` at the origin.
    static func purge(query: String, proxy: ProxyServer) async -> Answer {
        let items = URLComponents(string: "http://operator/?" + query)?.queryItems ?? []
        guard let target = items.first(where: { $0.name == "path" })?.value, !target.isEmpty else {
            return badPurge("a path is missing: POST /purge?path=/repos/a/b")
        }
        guard target.hasPrefix("/"), !target.hasPrefix("//"),
              !target.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }),
              let url = HTTPRequest(method: .get, scheme: nil, authority: nil, path: target)
                .url(relativeTo: proxy.forwarder.origin) else {
            return badPurge("the path must be a request target such as /repos/a/b (percent-encoded, no spaces)")
        }
        let shown = Redaction.redact(url)
        do {
            try await proxy.forwarder.cache.store.remove(url: shown)
        } catch {
            return Answer(status: .internalServerError,
                          body: "{\"purged\":false,\"error\":\(ProxyLogEntry.quoted(String(describing: error)))}\n",
                          contentType: "application/json")
        }
        return Answer(status: .ok, body: "{\"purged\":true,\"url\":\(ProxyLogEntry.quoted(shown))}\n", contentType: "application/json")
    }

    private static func badPurge(_ message: String) -> Answer {
        Answer(status: .badRequest, body: "{\"purged\":false,\"error\":\(ProxyLogEntry.quoted(message))}\n",
               contentType: "application/json")
    }
}
