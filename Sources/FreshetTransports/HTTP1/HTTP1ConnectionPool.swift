import Freshet
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// Keep-alive HTTP/1.1 connections per scheme, host, port and forward proxy, shared by
/// ``HTTP1Transport``s.
///
/// Requests go through the forward proxy ``Configuration/proxies`` chooses (by default the
/// environment's, ``ProxySettings/environment``): absolute-form requests to an HTTP proxy for
/// `http` origins, a `CONNECT` tunnel for `https` origins (TLS with the origin inside it), a
/// SOCKS5 tunnel for either.
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
        /// For an origin with a private CA, set its `trustRoots` (e.g. `.certificates([root])`), or
        /// make the configuration with ``init(maxConnectionsPerHost:idleTimeout:connectTimeout:trust:proxies:)``.
        public var tls: TLSConfiguration
        /// Public-key pins for `https` origins (default: none). When given, a connection is made
        /// only if the server's chain verifies against ``tls``'s trust roots (and
        /// `additionalTrustRoots`) and one of its certificates has a pinned key; the chain is then
        /// verified by swift-certificates in NIOSSL's verification callback, instead of BoringSSL
        /// (see <doc:TrustAndPinning>). A refused chain fails the request with a ``TLSTrustFailure``.
        public var pins: [SPKIPin]
        /// The forward proxies requests go through (default: the environment's,
        /// ``ProxySettings/environment``; ``ProxySettings/direct`` for none). ``connectTimeout``
        /// covers connecting to the proxy and opening the tunnel.
        public var proxies: ProxySettings

        /// Creates a configuration.
        public init(maxConnectionsPerHost: Int = 64, idleTimeout: Duration = .seconds(60),
                    connectTimeout: Duration = .seconds(10), tls: TLSConfiguration = .makeClientConfiguration(),
                    pins: [SPKIPin] = [], proxies: ProxySettings = .environment) {
            self.maxConnectionsPerHost = max(1, maxConnectionsPerHost)
            self.idleTimeout = idleTimeout
            self.connectTimeout = connectTimeout
            self.tls = tls
            self.pins = pins
            self.proxies = proxies
        }

        /// Creates a configuration whose `https` connections trust `trust`'s roots and require
        /// one of its pins.
        public init(maxConnectionsPerHost: Int = 64, idleTimeout: Duration = .seconds(60),
                    connectTimeout: Duration = .seconds(10), trust: TLSTrust, proxies: ProxySettings = .environment) {
            self.init(maxConnectionsPerHost: maxConnectionsPerHost, idleTimeout: idleTimeout,
                      connectTimeout: connectTimeout, tls: trust.clientConfiguration(), pins: trust.pins, proxies: proxies)
        }
    }

    /// The process-wide pool, on NIO's singleton event loop group.
    public static let shared = HTTP1ConnectionPool()

    /// The pool's limits.
    public let configuration: Configuration
    let group: any EventLoopGroup
    private let state = Mutex(State())
    /// Made once, on the first `https` connection, with the pins' verifier when there are pins.
    private let tlsContext = Mutex<HTTP1Connection.TLS?>(nil)

    /// Creates a pool whose connections run on `group`.
    public init(configuration: Configuration = .init(),
                group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.configuration = configuration
        self.group = group
    }

    /// The TLS context of `https` connections: ``Configuration/tls`` offering HTTP/1.1 only, and
    /// the verifier of ``Configuration/pins``.
    func makeTLSContext() throws -> HTTP1Connection.TLS {
        try tlsContext.withLock { context in
            if let context { return context }
            var configuration = self.configuration.tls
            configuration.applicationProtocols = ["http/1.1"]
            let pins = self.configuration.pins
            let made = HTTP1Connection.TLS(
                context: try NIOSSLContext(configuration: configuration),
                verifier: pins.isEmpty ? nil : try PinnedChainVerifier(tls: configuration, pins: pins))
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
        /// The forward proxy the connection goes through (its credentials included: connections
        /// made with other credentials are not shared).
        var proxy: ForwardProxy? = nil

        /// Requests on this connection go to an HTTP proxy in absolute form (plain `http` through
        /// an HTTP proxy, no tunnel).
        var isAbsoluteForm: Bool { proxy.map { !$0.tunnels(scheme) } ?? false }
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
        // Closed connections taken off the idle list stay referenced until their timers are
        // cancelled: a cancelled timer's closure is released under its event loop's lock, and
        // were it the connection's last reference, the connection's teardown would ask that
        // loop for work under the same lock (a crash seen in the full test run).
        var retired: [HTTP1Connection] = []
        let decision = state.withLock { state -> Decision in
            var host = state.hosts[key, default: Host()]
            defer { state.hosts[key] = host }
            if !fresh {
                while let entry = host.idle.popLast() {
                    if let timer = entry.timer { expired.append(timer) }
                    if entry.connection.isReusable { return .reuse(entry.connection) }
                    // A closed (or closing) one: its close callback frees its slot.
                    retired.append(entry.connection)
                }
            }
            if host.open < configuration.maxConnectionsPerHost {
                host.open += 1
                return .connect
            }
            return .wait
        }
        for timer in expired { timer.cancel() }
        withExtendedLifetime(retired) {}
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
            guard connection.isReusable else { return nil }
            // A connection that has just completed an exchange is not stale: any waiter may have it.
            if state.hosts[key]?.waiters.isEmpty == false {
                return state.hosts[key]!.waiters.removeFirst()
            }
            let timer = connection.channel.eventLoop.scheduleTask(in: idleTimeout) { [self] in expire(connection) }
            state.hosts[key, default: Host()].idle.append(IdleEntry(connection: connection, timer: timer))
            return nil
        }
        if let waiter {
            waiter.timer?.cancel()
            waiter.continuation.resume(returning: .connection(connection))
        } else if !connection.isReusable {
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
