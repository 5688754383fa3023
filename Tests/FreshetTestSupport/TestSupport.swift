import Foundation
import Freshet
import FreshetSimulator
import FreshetTransports
import HTTPTypes
import OpenAPIRuntime
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The live AsyncHTTPClient transport every test uses.
public let liveTransport = Transports.asyncHTTPClient(timeout: .seconds(20))

/// Starts a simulator on an ephemeral loopback port and hands the body a client pointed at it.
public func withSimClient<T: Sendable>(
    _ configuration: SimulatorConfiguration = .init(),
    middlewares: [any ClientMiddleware] = [],
    maxResponseBytes: Int = APIClient.defaultMaxResponseBytes,
    transport: any ClientTransport = liveTransport,
    _ body: @Sendable (RunningSimulator, APIClient) async throws -> T
) async throws -> T {
    try await withSimulator(configuration) { sim in
        let client = APIClient(
            baseURL: sim.baseURL, transport: transport,
            middlewares: middlewares, maxResponseBytes: maxResponseBytes)
        return try await body(sim, client)
    }
}

/// Waits until `condition` holds, checking every 20 ms, for at most `seconds`.
/// Returns whether it held: tests `#expect` the result, so a condition that never holds fails.
///
/// Keep the result in a `let` and `#expect` that, rather than writing `#expect(try await
/// eventually { … })`: inside a closure (`withSimClient { … }`), a closure written in a `#expect`
/// argument followed by a plain closure of the same type makes Swift 6.3.1 emit one body for
/// both, so the second call silently runs the first condition (found on 2026-11-24: a cancel test
/// passed with the cancel removed). Two closures both inside `#expect` were not affected.
public func eventually(
    within seconds: Double = 10, _ condition: @Sendable () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

/// A transport that answers from a closure, for unit tests of the client alone.
public struct ClosureTransport: ClientTransport {
    let handler: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)

    /// Creates a transport that calls `handler` for every request.
    public init(_ handler: @escaping @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)) {
        self.handler = handler
    }

    /// Calls the handler.
    public func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws
        -> (HTTPResponse, HTTPBody?)
    {
        try await handler(request, body, baseURL)
    }
}

/// A middleware that runs a closure around the rest of the chain, for unit tests of the client.
public struct ClosureMiddleware: ClientMiddleware {
    let handler: @Sendable (
        HTTPRequest, HTTPBody?, URL, @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?)

    /// Creates a middleware that calls `handler` with the request and the rest of the chain.
    public init(_ handler: @escaping @Sendable (
        HTTPRequest, HTTPBody?, URL, @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?)) {
        self.handler = handler
    }

    /// Calls the handler.
    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        try await handler(request, body, baseURL, next)
    }
}

/// `http://127.0.0.1:PORT` where a connection is refused for as long as the tests run: a socket
/// of this process is bound to the port and never listens. A port merely freed could be taken
/// by anything meanwhile; this one stays bound (without `SO_REUSEADDR`, so no server can bind
/// it) until the test process exits.
public func closedLoopbackURL() async throws -> URL {
    URL(string: "http://127.0.0.1:\(try boundLoopbackPort(reusable: false))")!
}

/// A port on 127.0.0.1 kept for one server started later, such as `--demo`'s on
/// `FRESHET_DEMO_PORT`: a socket of this process stays bound to it (with `SO_REUSEADDR`, never
/// listening) until the test process exits, so the system hands it to no one else, while a
/// server that also sets `SO_REUSEADDR` (SwiftNIO's do) can still bind and listen on it.
public func reservedLoopbackPort() throws -> Int {
    try boundLoopbackPort(reusable: true)
}

/// Binds a TCP socket to 127.0.0.1 on a port the system picks and keeps it open, never listening.
private func boundLoopbackPort(reusable: Bool) throws -> Int {
    let (fd, port) = try loopbackSocket(reusable: reusable)
    heldSockets.withLock { $0.append(fd) }
    return port
}

/// A TCP socket bound to 127.0.0.1 on `port` (0: one the system picks; with `SO_REUSEADDR` when
/// `reusable`, with `SO_REUSEPORT` when `sharedPort`: then another such socket of this user may
/// bind the same port), and that port; the caller owns the descriptor.
public func loopbackSocket(reusable: Bool = false, sharedPort: Bool = false, port: Int = 0) throws -> (fd: Int32, port: Int) {
    struct SocketError: Error, CustomStringConvertible { var description: String }
    #if canImport(Glibc)
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
    let fd = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard fd >= 0 else { throw SocketError(description: "socket() failed: errno \(errno)") }
    if reusable {
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
    }
    if sharedPort {
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
        }
    }
    guard bound else {
        close(fd)
        throw SocketError(description: "binding a loopback port failed: errno \(errno)")
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

/// The sockets of ``closedLoopbackURL()``, ``reservedLoopbackPort()`` and
/// ``RawOrigin/stopRefusing()``, open until exit.
let heldSockets = Mutex<[Int32]>([])

/// Finds a product built next to the test bundle (`.build/<triple>/debug/NAME`).
public func builtProduct(_ name: String) -> URL? {
    var candidates: [URL] = []
    if let executable = Bundle.main.executableURL {
        candidates.append(executable.deletingLastPathComponent().appendingPathComponent(name))
        candidates.append(executable.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(name))
    }
    let arg0 = URL(fileURLWithPath: CommandLine.arguments[0])
    candidates.append(arg0.deletingLastPathComponent().appendingPathComponent(name))
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    candidates.append(root.appendingPathComponent(".build/debug/\(name)"))
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
}

extension Result {
    /// The failure as an `APIError`, or `nil` on success or for another error type.
    public var apiError: APIError? {
        if case .failure(let error) = self { return error as? APIError }
        return nil
    }
}
