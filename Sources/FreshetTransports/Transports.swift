import AsyncHTTPClient
import Foundation
import Freshet
import HTTPTypes
import NIOCore
import NIOPosix
import NIOSSL
import OpenAPIRuntime
import OpenAPIURLSession
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
        eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: clientConfiguration(tls: nil))

    /// The configuration of ``sharedHTTPClient``, with `tls` (`nil`: AsyncHTTPClient's default,
    /// the system's roots).
    private static func clientConfiguration(tls: TLSConfiguration?) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .disallow,
            // `write`: a server that stops reading an upload is cut off after 30 s without progress.
            timeout: .init(connect: connectTimeout, read: .seconds(30), write: .seconds(30)),
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
        return configuration
    }

    /// Clients and pools for trusts other than the system's: one of each per distinct trust, made
    /// on first use and kept, like ``sharedHTTPClient``, for the life of the process.
    private static let trusted = Mutex<(clients: [TLSTrust.Roots: HTTPClient], pools: [TLSTrust: HTTP1ConnectionPool])>(([:], [:]))

    /// The process-wide AsyncHTTPClient trusting `roots`: configured as ``sharedHTTPClient`` is,
    /// made on first use and kept for the life of the process, one per distinct set of roots.
    /// `.system` gives ``sharedHTTPClient``.
    public static func sharedHTTPClient(trusting roots: TLSTrust.Roots) -> HTTPClient {
        if roots == .system { return sharedHTTPClient }
        return trusted.withLock { trusted in
            if let client = trusted.clients[roots] { return client }
            let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
                                    configuration: clientConfiguration(tls: TLSTrust(roots: roots).clientConfiguration()))
            trusted.clients[roots] = client
            return client
        }
    }

    /// The process-wide HTTP/1.1 pool for a pinned `trust`, made on first use.
    private static func pinnedPool(_ trust: TLSTrust) -> HTTP1ConnectionPool {
        trusted.withLock { trusted in
            if let pool = trusted.pools[trust] { return pool }
            let pool = HTTP1ConnectionPool(configuration: .init(maxConnectionsPerHost: maxConnectionsPerHost,
                                                                connectTimeout: Duration(connectTimeout), trust: trust))
            trusted.pools[trust] = pool
            return pool
        }
    }

    /// The default transport: AsyncHTTPClient over ``sharedHTTPClient``, with failures classified
    /// as `TransportFailure` so `APIError` can say "unreachable" or "timed out".
    /// - Parameter timeout: the deadline for one whole request.
    public static func asyncHTTPClient(timeout: Duration = requestTimeout) -> any ClientTransport {
        let transport = HTTPClientTransport(headTimeout: TimeAmount(timeout))
        // AsyncHTTPClient's deadline ends when the response head arrives; the body is held to it here.
        return ClassifyingTransport(base: transport, deadline: timeout)
    }

    /// The default transport with custom trust: `trust`'s roots, and its pins if it has any.
    ///
    /// Without pins this is AsyncHTTPClient, exactly as ``asyncHTTPClient(timeout:)`` but over a
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
    public static func asyncHTTPClient(timeout: Duration = requestTimeout, trust: TLSTrust) -> any ClientTransport {
        guard !trust.pins.isEmpty else {
            let transport = HTTPClientTransport(headTimeout: TimeAmount(timeout), roots: trust.roots)
            return ClassifyingTransport(base: transport, deadline: timeout)
        }
        let transport = HTTP1Transport(headTimeout: timeout, pool: pinnedPool(trust))
        return ClassifyingTransport(base: transport, deadline: timeout)
    }

    /// URLSession as the transport (Foundation's networking; on Linux, FoundationNetworking).
    public static func urlSession() -> any ClientTransport {
        ClassifyingTransport(base: URLSessionTransport())
    }

    /// The transport selected by name: `"ahc"` (default) or `"urlsession"`.
    public static func named(_ name: String?) -> any ClientTransport {
        switch name?.lowercased() {
        case "urlsession": return urlSession()
        default: return asyncHTTPClient()
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
        // An upload's or download's body is not held to the exchange's deadline (TransferContext).
        let end = TransferContext.isTransfer ? nil : deadline.map { ContinuousClock.now + $0 }
        let response: HTTPResponse
        let responseBody: HTTPBody?
        do {
            (response, responseBody) = try await base.send(request, body: body, baseURL: baseURL, operationID: operationID)
        } catch {
            throw Self.classify(error)
        }
        guard let responseBody else { return (response, nil) }
        let classified = responseBody.mapChunksClassifyingErrors(deadline: end)
        return (response, classified)
    }

    /// Maps AsyncHTTPClient, NIO and OS networking errors to `TransportFailure` (through the
    /// transports' one classifier); other errors pass through (out of a `ClientError`).
    public static func classify(_ error: any Error) -> any Error {
        TransportErrorClassifier.failure(for: error) ?? ((error as? ClientError)?.underlyingError ?? error)
    }
}

extension HTTPBody {
    /// The same bytes, pulled on demand, with errors thrown mid-body classified (through
    /// ``ClassifyingTransport/classify(_:)``), and a chunk asked for after `deadline` failing as
    /// timed out.
    ///
    /// The deadline is checked before each chunk: a body still arriving when it has passed fails,
    /// so a server dripping bytes cannot hold the caller for longer; a server that goes silent
    /// mid-body is cut off by the client's read timeout. (No timer per chunk: that would cost two
    /// tasks per chunk.)
    fileprivate func mapChunksClassifyingErrors(deadline: ContinuousClock.Instant?) -> HTTPBody {
        observed(check: deadline.map { deadline in
            { @Sendable in
                if ContinuousClock.now >= deadline {
                    throw TransportFailure(.timedOut, reason: "the response body did not arrive in time")
                }
            }
        }, mapError: { ClassifyingTransport.classify($0) })
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
    /// it off for a transport that decodes on its own (``Transports/urlSession()``).
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
                $0 is CoalescingMiddleware || $0 is any StoredResponseSource || $0 is RateLimitMiddleware
            }
            middlewares.insert(DecompressionMiddleware(), at: place ?? middlewares.endIndex)
        }
        return APIClient(baseURL: baseURL, transport: transport, middlewares: middlewares, defaultHeaders: headers)
    }
}
