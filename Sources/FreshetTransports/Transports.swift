import AsyncHTTPClient
import Foundation
import Freshet
import HTTPTypes
import NIOCore
import NIOPosix
import NIOSSL
import OpenAPIRuntime
import Synchronization

/// The live transports Freshet ships with.
///
/// `Freshet` itself imports no networking stack; this module supplies the defaults:
/// AsyncHTTPClient (one shared connection pool, HTTP/1.1 keep-alive, HTTP/2 where the server
/// offers it) and, as an alternative, URLSession.
public enum Transports {
    /// Connect timeout of the shared client: 10 seconds.
    public static let connectTimeout: TimeAmount = .seconds(10)
    /// HTTP/1.1 connections kept per host by the shared client: 64.
    public static let maxConnectionsPerHost = 64
    /// Default deadline for a whole request, headers and body: 30 seconds.
    public static let requestTimeout: Duration = .seconds(30)

    /// The process-wide AsyncHTTPClient: one connection pool for every Freshet client.
    ///
    /// Redirects are not followed here (Freshet's redirect policy decides), the connect timeout
    /// is 10 s, a refused connection fails at once (no silent pool retries), and idle keep-alive
    /// connections are kept for 60 s. It lives as long as the process.
    public static let sharedHTTPClient: HTTPClient = HTTPClient(
        eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: clientConfiguration(tls: nil, proxy: nil))

    /// The configuration of ``sharedHTTPClient``, with `tls` (`nil`: AsyncHTTPClient's default,
    /// the system's roots) and every connection through `proxy`.
    /// `streaming`: for event streams, with no read timeout (their own idle timeout applies).
    private static func clientConfiguration(tls: TLSConfiguration?, proxy: ForwardProxy?, streaming: Bool = false)
        -> HTTPClient.Configuration
    {
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .disallow,
            // `write`: a server that stops reading an upload is cut off after 30 s without progress.
            timeout: .init(connect: connectTimeout, read: streaming ? nil : .seconds(30), write: .seconds(30)),
            connectionPool: .init(idleTimeout: .seconds(60)),
            decompression: .disabled
        )
        configuration.httpVersion = .automatic
        // Fail fast on a refused connection: the retry middleware decides about retrying, with
        // backoff the caller controls, instead of the pool silently retrying until the timeout.
        configuration.connectionPool.retryConnectionEstablishment = false
        // AsyncHTTPClient keeps 8 HTTP/1.1 connections per host by default, which silently caps a
        // fan-out of 32 at 8. Allow 64 (GitHub asks for fewer than 100 concurrent requests).
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = maxConnectionsPerHost
        if let proxy {
            switch proxy.kind {
            case .http:
                configuration.proxy = .server(
                    host: proxy.host, port: proxy.port,
                    authorization: proxy.credentials.map { .basic(username: $0.user, password: $0.password) })
            case .socks5:
                configuration.proxy = .socksServer(host: proxy.host, port: proxy.port)
            }
        }
        return configuration
    }

    /// Which process-wide AsyncHTTPClient: its trust roots and forward proxy.
    private struct ClientKey: Hashable {
        var roots: TLSTrust.Roots
        var proxy: ForwardProxy?
        var streaming = false
    }

    /// Which process-wide HTTP/1.1 pool: its trust and forward proxies.
    private struct PoolKey: Hashable {
        var trust: TLSTrust
        var proxies: ProxySettings
    }

    /// Clients and pools other than ``sharedHTTPClient``: one of each per distinct trust and
    /// proxy, made on first use and kept, like ``sharedHTTPClient``, for the life of the process.
    private static let trusted = Mutex<(clients: [ClientKey: HTTPClient], pools: [PoolKey: HTTP1ConnectionPool])>(([:], [:]))

    /// The process-wide AsyncHTTPClient trusting `roots`: configured as ``sharedHTTPClient`` is,
    /// made on first use and kept for the life of the process, one per distinct set of roots.
    /// `.system` gives ``sharedHTTPClient``.
    public static func sharedHTTPClient(trusting roots: TLSTrust.Roots) -> HTTPClient {
        sharedHTTPClient(trusting: roots, through: nil)
    }

    /// The process-wide AsyncHTTPClient trusting `roots` whose every connection goes through
    /// `proxy` (`nil`: straight to the origin): configured as ``sharedHTTPClient`` is, made on
    /// first use and kept for the life of the process, one per distinct set of roots and proxy.
    /// `.system` without a proxy gives ``sharedHTTPClient``.
    ///
    /// AsyncHTTPClient tunnels every request through an HTTP proxy with `CONNECT`, plain `http`
    /// too; ``HTTPClientTransport`` sends plain `http` requests through an HTTP proxy in absolute
    /// form instead (as curl does, and as proxies that allow `CONNECT` to port 443 only need).
    public static func sharedHTTPClient(trusting roots: TLSTrust.Roots = .system, through proxy: ForwardProxy?) -> HTTPClient {
        sharedHTTPClient(trusting: roots, through: proxy, streaming: false)
    }

    /// ``sharedHTTPClient(trusting:through:)``, or with `streaming` its twin without a read
    /// timeout, for event streams (a stream may rightly be silent for longer than 30 s between
    /// keep-alives; its idle timeout is the stream's own).
    static func sharedHTTPClient(trusting roots: TLSTrust.Roots, through proxy: ForwardProxy?, streaming: Bool) -> HTTPClient {
        if roots == .system, proxy == nil, !streaming { return sharedHTTPClient }
        let key = ClientKey(roots: roots, proxy: proxy, streaming: streaming)
        return trusted.withLock { trusted in
            if let client = trusted.clients[key] { return client }
            let tls = roots == .system ? nil : TLSTrust(roots: roots).clientConfiguration()
            let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
                                    configuration: clientConfiguration(tls: tls, proxy: proxy, streaming: streaming))
            trusted.clients[key] = client
            return client
        }
    }

    /// The process-wide HTTP/1.1 pool for `trust` and `proxies`, made on first use.
    static func sharedPool(_ trust: TLSTrust, proxies: ProxySettings) -> HTTP1ConnectionPool {
        let key = PoolKey(trust: trust, proxies: proxies)
        return trusted.withLock { trusted in
            if let pool = trusted.pools[key] { return pool }
            let pool = HTTP1ConnectionPool(configuration: .init(maxConnectionsPerHost: maxConnectionsPerHost,
                                                                connectTimeout: Duration(connectTimeout), trust: trust,
                                                                proxies: proxies))
            trusted.pools[key] = pool
            return pool
        }
    }

    /// The default transport: AsyncHTTPClient over ``sharedHTTPClient``, with failures classified
    /// as `TransportFailure` so `APIError` can say "unreachable" or "timed out".
    ///
    /// Requests go through the forward proxy `proxies` chooses for each URL: by default the
    /// environment's (``ProxySettings/environment``: `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`,
    /// `NO_PROXY`, as curl reads them), ``ProxySettings/direct`` for none. An `https` request goes
    /// through an HTTP proxy's `CONNECT` tunnel (HTTP/2 inside it where the origin offers it), a
    /// plain `http` one to the proxy in absolute form (over ``HTTP1Transport``), either through a
    /// SOCKS5 proxy's tunnel. A proxy that cannot be reached fails as `unreachable`, naming the
    /// proxy; one that refuses (`407`, a refused tunnel) with a ``ForwardProxyFailure`` (not retried).
    /// - Parameters:
    ///   - timeout: the deadline for one whole request.
    ///   - proxies: the forward proxies to use.
    public static func asyncHTTPClient(timeout: Duration = requestTimeout, proxies: ProxySettings = .environment)
        -> any ClientTransport
    {
        let transport = HTTPClientTransport(headTimeout: TimeAmount(timeout), proxies: proxies)
        // AsyncHTTPClient's deadline ends when the response head arrives; the body is held to it here.
        return ClassifyingTransport(base: transport, deadline: timeout)
    }

    /// The default transport with custom trust: `trust`'s roots, and its pins if it has any.
    ///
    /// Without pins this is AsyncHTTPClient, exactly as ``asyncHTTPClient(timeout:proxies:)`` but over a
    /// process-wide client trusting `trust`'s roots (``sharedHTTPClient(trusting:)``): HTTP/2
    /// where the server offers it.
    ///
    /// With pins, requests go through ``HTTP1Transport`` instead (HTTP/1.1 only, over a
    /// process-wide ``HTTP1ConnectionPool`` per trust), with the same deadline and failure
    /// classification. AsyncHTTPClient (1.x) offers no way to check a pin soundly: it gives
    /// NIOSSL's handshake no verification callback and shows a connection's hooks only the
    /// server's own certificate, never the verified chain a pin must be checked against.
    ///
    /// A refused certificate chain fails with a ``TLSTrustFailure`` (not retried).
    /// - Parameters:
    ///   - timeout: the deadline for one whole request.
    ///   - trust: the roots the server's chain must lead to, and the pins one of its keys must match.
    ///   - proxies: the forward proxies to use (default: the environment's), as
    ///     ``asyncHTTPClient(timeout:proxies:)`` uses them; pinned connections through a proxy's
    ///     tunnel check the origin's chain and pins.
    public static func asyncHTTPClient(timeout: Duration = requestTimeout, trust: TLSTrust,
                                       proxies: ProxySettings = .environment) -> any ClientTransport {
        guard !trust.pins.isEmpty else {
            let transport = HTTPClientTransport(headTimeout: TimeAmount(timeout), roots: trust.roots, proxies: proxies)
            return ClassifyingTransport(base: transport, deadline: timeout)
        }
        let transport = HTTP1Transport(headTimeout: timeout, pool: sharedPool(trust, proxies: proxies))
        return ClassifyingTransport(base: transport, deadline: timeout)
    }

    /// The default transport trusting the roots `SSL_CERT_FILE` and `SSL_CERT_DIR` name in
    /// `environment` (``TLSTrust/fromEnvironment(_:)``), read when the first `https` request is
    /// sent and not before: a run that the cache answers, or that speaks plain `http` only (a
    /// local server, the simulator), reads no certificate (Debian's `/etc/ssl/certs` alone is 280
    /// files, some 35 ms at every start). Without either variable, it is
    /// ``asyncHTTPClient(timeout:proxies:)``. Variables that name nothing usable fail every `https`
    /// request with their ``TLSTrust/ConfigurationError``; ``TLSTrust/environmentProblem(_:)`` finds the missing
    /// file or folder at once.
    public static func asyncHTTPClient(
        timeout: Duration = requestTimeout, trustingEnvironment environment: [String: String],
        proxies: ProxySettings = .environment
    ) -> any ClientTransport {
        guard environment["SSL_CERT_FILE"]?.isEmpty == false || environment["SSL_CERT_DIR"]?.isEmpty == false else {
            return asyncHTTPClient(timeout: timeout, proxies: proxies)
        }
        let plain = asyncHTTPClient(timeout: timeout, proxies: proxies)
        return DeferredTransport(plain: plain) {
            guard let trust = try TLSTrust.fromEnvironment(environment) else { return plain }
            return asyncHTTPClient(timeout: timeout, trust: trust, proxies: proxies)
        }
    }
}

/// Wraps a transport and turns its networking errors into `TransportFailure`s.
public struct ClassifyingTransport: ClientTransport {
    /// The transport doing the work.
    public var base: any ClientTransport
    /// The longest one exchange may take, response body included: a body still arriving then
    /// fails with a `timedOut` failure (a server dripping bytes cannot hold the caller forever;
    /// one that goes silent is cut off by the client's read timeout). `nil`: only `base`'s own
    /// timeouts apply.
    public var deadline: Duration?

    /// Wraps `base`; `deadline` bounds each whole exchange, body included.
    public init(base: any ClientTransport, deadline: Duration? = nil) {
        self.base = base
        self.deadline = deadline
    }

    /// Sends through `base`, classifying any failure.
    public func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws
        -> (HTTPResponse, HTTPBody?)
    {
        // An upload's, a download's or an event stream's body is not held to the exchange's
        // deadline (TransferContext).
        let end = TransferContext.isTransfer || TransferContext.isStream ? nil : deadline.map { ContinuousClock.now + $0 }
        let classification = BodyClassification(deadline: end)
        let response: HTTPResponse
        let responseBody: HTTPBody?
        do {
            if let base = base as? HTTPClientTransport {
                // Its body wrapper classifies too: one wrapper instead of two.
                return try await base.send(request, body: body, baseURL: baseURL, operationID: operationID,
                                           classifying: classification)
            }
            (response, responseBody) = try await base.send(request, body: body, baseURL: baseURL, operationID: operationID)
        } catch {
            throw Self.classify(error)
        }
        return (response, responseBody?.classified(classification))
    }

    /// Maps AsyncHTTPClient, NIO and OS networking errors to `TransportFailure` (through the
    /// transports' one classifier); other errors pass through (out of a `ClientError`).
    public static func classify(_ error: any Error) -> any Error {
        TransportErrorClassifier.failure(for: error) ?? ((error as? ClientError)?.underlyingError ?? error)
    }
}

/// What ``ClassifyingTransport`` does to a response body: errors thrown mid-body classified
/// (through ``ClassifyingTransport/classify(_:)``), and a chunk asked for after `deadline`
/// failing as timed out.
///
/// The deadline is checked before each chunk: a body still arriving when it has passed fails, so
/// a server dripping bytes cannot hold the caller for longer; a server that goes silent mid-body
/// is cut off by the client's read timeout. (No timer per chunk: that would cost two tasks per
/// chunk.)
struct BodyClassification: Sendable {
    var deadline: ContinuousClock.Instant?

    /// Throws a `timedOut` failure once the deadline has passed.
    func check() throws {
        if let deadline, ContinuousClock.now >= deadline {
            throw TransportFailure(.timedOut, reason: "the response body did not arrive in time")
        }
    }
}

extension HTTPBody {
    /// The same bytes, pulled on demand, classified as `classification` says.
    func classified(_ classification: BodyClassification) -> HTTPBody {
        let check: (@Sendable () throws -> Void)? = classification.deadline == nil ? nil : { @Sendable in try classification.check() }
        return observed(check: check, mapError: { ClassifyingTransport.classify($0) })
    }
}

extension APIClient {
    /// A client for a live API: the shared AsyncHTTPClient transport (or `transport`), Freshet's
    /// standard middleware chain (`Middlewares.standard(...)`, or the chain given) and transparent
    /// compression.
    ///
    /// With `decompressing` (the default), a ``DecompressionMiddleware`` goes into `middlewares`
    /// unless one is there: where the standard chain keeps it, above the first coalescing
    /// middleware, cache (`StoredResponseSource`) or rate-limit middleware, else innermost. Leave
    /// it off for a transport that decodes on its own (URLSession: `Transports.urlSession()` in
    /// FreshetURLSession).
    public static func live(
        baseURL: URL,
        headers: HTTPFields = APIClient.standardHeaders,
        transport: any ClientTransport = Transports.asyncHTTPClient(),
        middlewares: [any ClientMiddleware] = Middlewares.standard(),
        decompressing: Bool = true
    ) -> APIClient {
        var middlewares = middlewares
        if decompressing, !middlewares.contains(where: { $0 is DecompressionMiddleware }) {
            let place = middlewares.firstIndex {
                $0 is CoalescingMiddleware || StoredRoles.isSource($0) || $0 is RateLimitMiddleware
            }
            middlewares.insert(DecompressionMiddleware(), at: place ?? middlewares.endIndex)
        }
        return APIClient(baseURL: baseURL, transport: transport, middlewares: middlewares, defaultHeaders: headers)
    }
}

/// A transport made by `make` when the first `https` request is sent (once; what it threw is
/// thrown for every such request); plain `http` goes to `plain` and makes nothing.
private final class DeferredTransport: ClientTransport, Sendable {
    /// For plain `http`, which trusts no certificate (forward proxies are spoken to in the clear too).
    private let plain: any ClientTransport
    private let make: @Sendable () throws -> any ClientTransport
    private let made = Mutex<Result<any ClientTransport, any Error>?>(nil)

    init(plain: any ClientTransport, _ make: @escaping @Sendable () throws -> any ClientTransport) {
        self.plain = plain
        self.make = make
    }

    func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws
        -> (HTTPResponse, HTTPBody?)
    {
        // The base URL is where the transports connect (a request's own scheme is not used).
        if baseURL.scheme?.lowercased() == "http" {
            return try await plain.send(request, body: body, baseURL: baseURL, operationID: operationID)
        }
        let transport = try made.withLock { made in
            if let made { return made }
            let result = Result { try make() }
            made = result
            return result
        }.get()
        return try await transport.send(request, body: body, baseURL: baseURL, operationID: operationID)
    }
}
