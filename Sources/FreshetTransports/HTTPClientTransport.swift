import AsyncHTTPClient
import Foundation
import Freshet
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import OpenAPIRuntime
import Synchronization

/// A `ClientTransport` over AsyncHTTPClient that streams both bodies and keeps every header
/// line of the response, in order and as spelled.
///
/// Freshet uses it instead of swift-openapi-async-http-client's transport, which (1.5) builds
/// the response fields with `fields[name] = value`: of a repeated field (`Set-Cookie`,
/// `Cache-Control` on two lines, `Link`, `Vary`, `Age`, …) only the last line survived — wrong
/// for an HTTP cache and fatal for a proxy. Extension methods are sent as spelled (NIO would
/// write `M-SEARCH` as `MSEARCH`).
///
/// Errors are AsyncHTTPClient's and NIO's; wrap it in ``ClassifyingTransport`` (as
/// ``Transports/asyncHTTPClient(timeout:proxies:)`` does) to get `TransportFailure`s. A server certificate
/// chain refused in the handshake is a ``TLSTrustFailure`` (of kind `notTrusted`: AsyncHTTPClient's
/// TLS stack does not say why).
///
/// Unless it is given a client, it sends each request through the forward proxy ``proxies``
/// chooses for its URL (by default the environment's): an `https` request over a process-wide
/// client configured with that proxy (AsyncHTTPClient's `CONNECT` tunnel, or SOCKS5), a plain
/// `http` request through an HTTP proxy over ``HTTP1Transport``, in absolute form (AsyncHTTPClient
/// would tunnel it with `CONNECT`, which proxies commonly allow to port 443 only). A proxy that
/// cannot be reached fails naming the proxy (never its credentials); one that refuses fails with
/// a ``ForwardProxyFailure``.
public struct HTTPClientTransport: ClientTransport {
    /// The deadline for the response head; the body then streams as long as data keeps coming
    /// (the client's read timeout applies between reads).
    public var headTimeout: TimeAmount
    /// The client whose connection pool is used (default: ``Transports/sharedHTTPClient``).
    ///
    /// Without a client given, the shared one is only looked up when this property is first read
    /// (by the first ``send(_:body:baseURL:operationID:)``): making a transport starts no event
    /// loop, so a run that answers from the cache never starts the network stack.
    public var client: HTTPClient {
        get { source.client }
        set { source = .given(newValue) }
    }

    /// The forward proxies requests go through (``ProxySettings/direct`` when a client was given:
    /// a given client's own configuration decides).
    public var proxies: ProxySettings

    private var source: ClientSource

    /// Where the client comes from: given, or a process-wide one, looked up on first use.
    private enum ClientSource: Sendable {
        case given(HTTPClient)
        case trusting(SharedClients)

        var client: HTTPClient { client(through: nil, streaming: false) }

        func client(through proxy: ForwardProxy?, streaming: Bool) -> HTTPClient {
            switch self {
            case .given(let client): return client
            case .trusting(let shared): return shared.client(through: proxy, streaming: streaming)
            }
        }

        func pool(_ proxies: ProxySettings) -> HTTP1ConnectionPool {
            switch self {
            case .given: return Transports.sharedPool(.system, proxies: proxies)
            case .trusting(let shared): return shared.pool(proxies)
            }
        }
    }

    /// The process-wide clients and pools for one set of roots, looked up once per proxy and kept:
    /// the process-wide lookup hashes the roots, every certificate of them (hundreds, with
    /// `SSL_CERT_FILE` and `SSL_CERT_DIR` set), which is no work for every request.
    private final class SharedClients: Sendable {
        let roots: TLSTrust.Roots
        private let clients = Mutex<[Key: HTTPClient]>([:])

        struct Key: Hashable {
            var proxy: ForwardProxy?
            var streaming: Bool
        }
        private let pools = Mutex<[ProxySettings: HTTP1ConnectionPool]>([:])

        init(_ roots: TLSTrust.Roots) {
            self.roots = roots
        }

        func client(through proxy: ForwardProxy?, streaming: Bool) -> HTTPClient {
            let key = Key(proxy: proxy, streaming: streaming)
            return clients.withLock { clients in
                if let client = clients[key] { return client }
                let client = Transports.sharedHTTPClient(trusting: roots, through: proxy, streaming: streaming)
                clients[key] = client
                return client
            }
        }

        func pool(_ proxies: ProxySettings) -> HTTP1ConnectionPool {
            pools.withLock { pools in
                if let pool = pools[proxies] { return pool }
                let pool = Transports.sharedPool(TLSTrust(roots: roots), proxies: proxies)
                pools[proxies] = pool
                return pool
            }
        }
    }

    /// Creates the transport over `client`, used as configured (no other proxy is applied).
    public init(headTimeout: TimeAmount, client: HTTPClient) {
        self.headTimeout = headTimeout
        self.source = .given(client)
        self.proxies = .direct
    }

    /// Creates the transport over ``Transports/sharedHTTPClient`` (or, through a proxy, the
    /// process-wide client for it), which is only created (with its event loops) when the first
    /// request is sent. `proxies`: the forward proxies (default: the environment's).
    public init(headTimeout: TimeAmount, proxies: ProxySettings = .environment) {
        self.headTimeout = headTimeout
        self.source = .trusting(SharedClients(.system))
        self.proxies = proxies
    }

    /// Creates the transport over ``Transports/sharedHTTPClient(trusting:through:)`` for `roots`,
    /// looked up when the first request is sent. (AsyncHTTPClient cannot check pins:
    /// ``Transports/asyncHTTPClient(timeout:trust:proxies:)`` sends pinned requests another way.)
    public init(headTimeout: TimeAmount, roots: TLSTrust.Roots, proxies: ProxySettings = .environment) {
        self.headTimeout = headTimeout
        self.source = .trusting(SharedClients(roots))
        self.proxies = proxies
    }

    /// Sends `request` to `baseURL` + its path; the response body streams as it arrives.
    public func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws
        -> (HTTPResponse, HTTPBody?)
    {
        try await send(request, body: body, baseURL: baseURL, operationID: operationID, classifying: nil)
    }

    /// ``send(_:body:baseURL:operationID:)``; with `classifying`, the response body's failures are
    /// classified and its chunks held to the deadline in the one wrapper the body gets anyway
    /// (for ``ClassifyingTransport``, which would otherwise wrap it a second time).
    func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
              classifying: BodyClassification?) async throws -> (HTTPResponse, HTTPBody?)
    {
        let isTransfer = TransferContext.isTransfer
        let isStream = TransferContext.isStream
        // `baseURL` has the request's scheme, host and port (all a proxy and the error messages
        // need; it may also carry a path prefix), so the URL is handed to AsyncHTTPClient as text,
        // which parses it: not parsed here a second time.
        let url = baseURL
        let target = request.path ?? "/"
        let proxy = try proxies.proxy(for: url)
        if let proxy, proxy.kind == .http, url.scheme?.lowercased() == "http" {
            // Absolute form to the HTTP proxy, which AsyncHTTPClient does not do. A transfer's head
            // is not held to the head deadline (as below); the read timeout is the client's, but
            // an event stream has none (its idle timeout is its own).
            let transport = HTTP1Transport(
                headTimeout: isTransfer ? .seconds(7 * 24 * 3600) : Duration(headTimeout),
                readTimeout: isStream ? .seconds(7 * 24 * 3600) : .seconds(30), pool: source.pool(proxies))
            let (head, responseBody) = try await transport.send(request, body: body, baseURL: baseURL, operationID: operationID)
            return (head, classifying.map { responseBody?.classified($0) } ?? responseBody)
        }
        let client = source.client(through: proxy, streaming: isStream)
        var outbound = HTTPClientRequest(url: baseURL.joined(target: target))
        outbound.method = Self.method(request.method)
        outbound.headers.addExceptFraming(request.headerFields)
        if let body {
            let length: HTTPClientRequest.Body.Length
            switch body.length {
            case .known(let count): length = .known(count)
            case .unknown: length = .unknown
            }
            outbound.body = .stream(body.map { ByteBuffer(bytes: $0) }, length: length)
        }
        // An upload's body is sent before the head comes back: a transfer is bounded by the
        // client's read and write timeouts between reads and writes, not by a deadline for the head.
        let deadline: NIODeadline = isTransfer ? .distantFuture : .now() + headTimeout
        let response: HTTPClientResponse
        do {
            response = try await client.execute(outbound, deadline: deadline)
        } catch let error as HTTPClientError where error == .invalidURL {
            throw APIError.invalidRequest("the request target \(target) does not form a valid URL")
        } catch {
            // A refused certificate chain says so (BoringSSL's own error does not), and is not retried.
            if let refused = TransportErrorClassifier.trustFailure(for: error, host: url.host ?? "") { throw refused }
            if let proxy, let failure = Self.proxyFailure(error, proxy: proxy, url: url) { throw failure }
            throw error
        }
        let head = HTTPResponse(nioStatus: response.status, headers: response.headers)
        guard request.method != .head else { return (head, nil) }
        let length = head.announcedBodyLength
        return (head, HTTPBody(ResponseChunks(base: response.body, classification: classifying), length: length,
                               iterationBehavior: .single))
    }

    /// AsyncHTTPClient's body as HTTP body chunks, classified when asked (``BodyClassification``).
    struct ResponseChunks: AsyncSequence, Sendable {
        typealias Element = HTTPBody.ByteChunk
        let base: HTTPClientResponse.Body
        let classification: BodyClassification?

        struct AsyncIterator: AsyncIteratorProtocol {
            var base: HTTPClientResponse.Body.AsyncIterator
            let classification: BodyClassification?

            mutating func next() async throws -> HTTPBody.ByteChunk? {
                guard let classification else { return try await base.next().map { ArraySlice($0.readableBytesView) } }
                try classification.check()
                do {
                    return try await base.next().map { ArraySlice($0.readableBytesView) }
                } catch {
                    throw ClassifyingTransport.classify(error)
                }
            }
        }

        func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(base: base.makeAsyncIterator(), classification: classification)
        }
    }

    /// AsyncHTTPClient's failure through `proxy` as one that names the proxy: a refused tunnel, or
    /// a connection that could not be made (through a proxy, every connection is to the proxy).
    /// `nil` for other failures.
    static func proxyFailure(_ error: any Error, proxy: ForwardProxy, url: URL) -> (any Error)? {
        let port = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
        let target = "\((url.host ?? "").contains(":") ? "[\(url.host ?? "")]" : url.host ?? ""):\(port)"
        if let error = error as? HTTPClientError {
            switch error {
            case .proxyAuthenticationRequired:
                return ForwardProxyFailure.refused(proxy, target: target, status: 407, phrase: "Proxy Authentication Required", tunnel: true)
            case .invalidProxyResponse:
                return ForwardProxyFailure(proxy: proxy, target: target, status: nil,
                                           reason: "refused the tunnel to \(target) (AsyncHTTPClient does not say with which status)")
            case .httpProxyHandshakeTimeout, .socksHandshakeTimeout:
                return TransportFailure(.unreachable, reason: "the proxy \(proxy) did not open the tunnel to \(target) in time")
            case .connectTimeout:
                return TransportFailure(.unreachable, reason: "the proxy \(proxy) did not accept the connection in time")
            default:
                return nil
            }
        }
        switch error {
        case is NIOConnectionError, is IOError, is SocketAddressError:
            return proxy.unreachable(error)
        case let error as ChannelError:
            if case .connectTimeout = error { return proxy.unreachable(error) }
            return nil
        default:
            if String(reflecting: type(of: error)).hasPrefix("NIOSOCKS.") {
                return ForwardProxyFailure(proxy: proxy, target: target, status: nil,
                                           reason: "refused the SOCKS5 connection to \(target) (\(error))")
            }
            return nil
        }
    }

    /// NIO's method for `method`, sent as spelled. NIO parses `M-SEARCH` into `.MSEARCH`, which
    /// HTTP types then spell `MSEARCH`, and writes `.MSEARCH` without the hyphen: an origin would
    /// get a method that does not exist. It goes out as `M-SEARCH` again.
    static func method(_ method: HTTPRequest.Method) -> HTTPMethod {
        switch method.rawValue {
        case "MSEARCH", "M-SEARCH": return .RAW(value: "M-SEARCH")
        default: return HTTPMethod(rawValue: method.rawValue)
        }
    }
}
