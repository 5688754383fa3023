import Foundation
import Freshet
import FreshetCache
import FreshetProxy
import FreshetSimulator
import FreshetTestSupport
import FreshetTransports
import GRDB
import HTTPTypes
import Logging
import OpenAPIRuntime
import ServiceLifecycle
import Synchronization

/// A `ProxyServer` and its operator endpoints running in this process, in a `ServiceGroup`, on
/// ports the system picked.
struct InProcessProxy: Sendable {
    /// `http://127.0.0.1:PORT` of the proxy.
    let base: URL
    /// `http://127.0.0.1:PORT` of the operator endpoints (`/metrics`, `/healthz`, …).
    let operatorBase: URL
    let server: ProxyServer
    let group: ServiceGroup
    /// Every entry the server logged, in order.
    let entries: LogEntries

    /// Sends `method path` to the proxy.
    func send(_ path: String, method: HTTPRequest.Method = .get, headers: HTTPFields = [:]) async throws -> Answer {
        try await Answer.send(path, to: base, method: method, headers: headers)
    }

    /// Sends `method path` to the operator endpoints.
    func operatorSend(_ path: String, method: HTTPRequest.Method = .get) async throws -> Answer {
        try await Answer.send(path, to: operatorBase, method: method, headers: [:])
    }

    /// The operator's `/metrics` text.
    func metrics() async throws -> String {
        try await operatorSend("/metrics").body
    }
}

/// An answer as a client received it over loopback (AsyncHTTPClient).
struct Answer: Sendable {
    var status: Int
    var fields: HTTPFields
    var body: String

    static func send(_ path: String, to base: URL, method: HTTPRequest.Method, headers: HTTPFields) async throws -> Answer {
        let request = HTTPRequest(method: method, scheme: nil, authority: nil, path: path, headerFields: headers)
        let (response, body) = try await liveTransport.send(request, body: nil, baseURL: base, operationID: "test")
        var text = ""
        if let body { text = try await String(collecting: body, upTo: 4 << 20) }
        return Answer(status: response.status.code, fields: response.headerFields, body: text)
    }

    /// `X-Cache`.
    var cache: String? { fields[HTTPField.Name("X-Cache")!] }
}

/// The entries a server logged.
final class LogEntries: Sendable {
    private let entries = Mutex<[ProxyLogEntry]>([])

    func append(_ entry: ProxyLogEntry) {
        entries.withLock { $0.append(entry) }
    }

    var all: [ProxyLogEntry] { entries.withLock { $0 } }
}

/// A logger that drops everything.
let quietLogger = Logger(label: "freshet.proxy.tests") { _ in SwiftLogNoOpLogHandler() }

/// Which listener reported its port.
private enum Listener: Sendable {
    case proxy(Int)
    case operatorEndpoints(Int)
}

/// Runs a proxy for `origin` over `store` — with metrics, a log, and its operator endpoints, in
/// a `ServiceGroup` without signals — for `body`; then triggers a graceful shutdown and waits for
/// the group to finish (at most the group's grace period, 10 s, then it is cancelled).
func withInProcessProxy<T: Sendable>(
    origin: URL, store: any CacheStore, options: ProxyForwarder.Options = .init(), idleTimeout: Duration? = nil,
    headTimeout: Duration = .seconds(20), readTimeout: Duration = .seconds(30), _ body: (InProcessProxy) async throws -> T
) async throws -> T {
    let forwarder = ProxyForwarder(origin: origin, store: store,
                                   transport: HTTP1Transport(headTimeout: headTimeout, readTimeout: readTimeout),
                                   metrics: ProxyMetrics(), options: options)
    let entries = LogEntries()
    let (ports, portSink) = AsyncStream.makeStream(of: Listener.self)
    var server = ProxyServer(forwarder: forwarder, host: "127.0.0.1", port: 0, logger: quietLogger,
                             onListening: { portSink.yield(.proxy($0)) }, log: { entries.append($0) })
    if let idleTimeout { server.idleTimeout = idleTimeout }
    let endpoints = server.operatorServer(host: "127.0.0.1", port: 0) { portSink.yield(.operatorEndpoints($0)) }
    var configuration = ServiceGroupConfiguration(services: [endpoints, server], logger: quietLogger)
    configuration.maximumGracefulShutdownDuration = .seconds(10)
    let group = ServiceGroup(configuration: configuration)
    return try await withThrowingTaskGroup(of: Void.self, returning: T.self) { tasks in
        tasks.addTask {
            // When the group ends before both listen (a bind failed), the wait below ends too.
            defer { portSink.finish() }
            try await group.run()
        }
        var proxyPort: Int?
        var operatorPort: Int?
        for await listener in ports {
            switch listener {
            case .proxy(let port): proxyPort = port
            case .operatorEndpoints(let port): operatorPort = port
            }
            if proxyPort != nil, operatorPort != nil { break }
        }
        guard let proxyPort, let operatorPort else {
            try await tasks.waitForAll()
            throw StartFailure()
        }
        let running = InProcessProxy(
            base: URL(string: "http://127.0.0.1:\(proxyPort)")!, operatorBase: URL(string: "http://127.0.0.1:\(operatorPort)")!,
            server: server, group: group, entries: entries)
        do {
            let value = try await body(running)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return value
        } catch {
            await group.triggerGracefulShutdown()
            try? await tasks.waitForAll()
            throw error
        }
    }
}

struct StartFailure: Error, CustomStringConvertible {
    var description: String { "the proxy's service group ended before both listeners were up" }
}

/// A SQLite store in a fresh temporary directory, for `body`; the directory is removed after.
func withSQLiteStore<T: Sendable>(_ body: (SQLiteCacheStore, DatabasePool) async throws -> T) async throws -> T {
    let directory = try StoreTemporaryDirectory()
    defer { directory.remove() }
    let pool = try cacheDatabase(in: directory.url)
    let store = SQLiteCacheStore(writer: pool)
    return try await body(store, pool)
}
