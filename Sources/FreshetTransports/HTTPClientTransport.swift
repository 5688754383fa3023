import AsyncHTTPClient
import Foundation
import Freshet
import HTTPTypes
import NIOCore
import NIOHTTP1
import OpenAPIRuntime

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
/// ``Transports/asyncHTTPClient(timeout:)`` does) to get `TransportFailure`s. A server certificate
/// chain refused in the handshake is a ``TLSTrustFailure`` (of kind `notTrusted`: AsyncHTTPClient's
/// TLS stack does not say why).
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

    private var source: ClientSource

    /// Where the client comes from: given, or the shared one, looked up on first use.
    private enum ClientSource: Sendable {
        case given(HTTPClient)
        case shared
        case trusting(TLSTrust.Roots)

        var client: HTTPClient {
            switch self {
            case .given(let client): return client
            case .shared: return Transports.sharedHTTPClient
            case .trusting(let roots): return Transports.sharedHTTPClient(trusting: roots)
            }
        }
    }

    /// Creates the transport over `client`.
    public init(headTimeout: TimeAmount, client: HTTPClient) {
        self.headTimeout = headTimeout
        self.source = .given(client)
    }

    /// Creates the transport over ``Transports/sharedHTTPClient``, which is only created (with
    /// its event loops) when the first request is sent.
    public init(headTimeout: TimeAmount) {
        self.headTimeout = headTimeout
        self.source = .shared
    }

    /// Creates the transport over ``Transports/sharedHTTPClient(trusting:)`` for `roots`, looked
    /// up when the first request is sent. (AsyncHTTPClient cannot check pins:
    /// ``Transports/asyncHTTPClient(timeout:trust:)`` sends pinned requests another way.)
    public init(headTimeout: TimeAmount, roots: TLSTrust.Roots) {
        self.headTimeout = headTimeout
        self.source = roots == .system ? .shared : .trusting(roots)
    }

    /// Sends `request` to `baseURL` + its path; the response body streams as it arrives.
    public func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws
        -> (HTTPResponse, HTTPBody?)
    {
        guard let url = request.url(relativeTo: baseURL) else {
            throw APIError.invalidRequest("the request target \(request.path ?? "") does not form a valid URL")
        }
        var outbound = HTTPClientRequest(url: url.absoluteString)
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
        let deadline: NIODeadline = TransferContext.isTransfer ? .distantFuture : .now() + headTimeout
        let response: HTTPClientResponse
        do {
            response = try await client.execute(outbound, deadline: deadline)
        } catch {
            // A refused certificate chain says so (BoringSSL's own error does not), and is not retried.
            if let refused = TransportErrorClassifier.trustFailure(for: error, host: url.host ?? "") { throw refused }
            throw error
        }
        let head = HTTPResponse(nioStatus: response.status, headers: response.headers)
        guard request.method != .head else { return (head, nil) }
        let length = head.announcedBodyLength
        return (head, HTTPBody(response.body.map { ArraySlice($0.readableBytesView) }, length: length,
                               iterationBehavior: .single))
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
