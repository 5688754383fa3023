import AsyncHTTPClient
import Foundation
import Freshet
import HTTPTypes
import NIOCore
import NIOPosix
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import OpenAPIURLSession

/// The live transports Freshet ships with.
///
/// `Freshet` itself imports no networking stack; this module supplies the defaults:
/// AsyncHTTPClient (one shared connection pool, HTTP/1.1 keep-alive, HTTP/2 where the server
/// offers it) and, as an alternative, URLSession.
public enum Transports {
    /// Connect timeout of the shared client: 10 seconds.
    public static let connectTimeout: TimeAmount = .seconds(10)
    /// Default deadline for a whole request, headers and body: 30 seconds.
    public static let requestTimeout: Duration = .seconds(30)

    /// The process-wide AsyncHTTPClient: one connection pool for every Freshet client.
    ///
    /// Redirects are not followed here (Freshet's redirect policy decides), the connect timeout
    /// is 10 s, a refused connection fails at once (no silent pool retries), and idle keep-alive
    /// connections are kept for 60 s. It lives as long as the process.
    public static let sharedHTTPClient: HTTPClient = {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: connectTimeout, read: .seconds(30)),
            connectionPool: .init(idleTimeout: .seconds(60)),
            decompression: .disabled
        )
        configuration.httpVersion = .automatic
        // Fail fast on a refused connection: the retry middleware decides about retrying, with
        // backoff the caller controls, instead of the pool silently retrying until the timeout.
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }()

    /// The default transport: AsyncHTTPClient over ``sharedHTTPClient``, with failures classified
    /// as `TransportFailure` so ``APIError`` can say "unreachable" or "timed out".
    /// - Parameter timeout: the deadline for one whole request.
    public static func asyncHTTPClient(timeout: Duration = requestTimeout) -> any ClientTransport {
        let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        let transport = AsyncHTTPClientTransport(configuration: .init(
            client: sharedHTTPClient, timeout: .nanoseconds(nanoseconds)))
        return ClassifyingTransport(base: transport)
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

    /// Wraps `base`.
    public init(base: any ClientTransport) {
        self.base = base
    }

    /// Sends through `base`, classifying any failure.
    public func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws
        -> (HTTPResponse, HTTPBody?)
    {
        let response: HTTPResponse
        let responseBody: HTTPBody?
        do {
            (response, responseBody) = try await base.send(request, body: body, baseURL: baseURL, operationID: operationID)
        } catch {
            throw Self.classify(error)
        }
        guard let responseBody else { return (response, nil) }
        let classified = responseBody.mapChunksClassifyingErrors()
        return (response, classified)
    }

    /// Maps AsyncHTTPClient and NIO errors to `TransportFailure`; other errors pass through.
    public static func classify(_ error: any Error) -> any Error {
        if error is CancellationError || Task.isCancelled {
            return TransportFailure(.cancelled, reason: "cancelled")
        }
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout, .getConnectionFromPoolTimeout:
                return TransportFailure(.timedOut, reason: "connect timed out")
            case .deadlineExceeded, .readTimeout, .writeTimeout:
                return TransportFailure(.timedOut, reason: "request timed out")
            case .cancelled:
                return TransportFailure(.cancelled, reason: "cancelled")
            case .remoteConnectionClosed:
                return TransportFailure(.connectionLost, reason: "the server closed the connection early")
            case .bodyLengthMismatch:
                return TransportFailure(.connectionLost, reason: "the body was shorter than its Content-Length")
            default:
                return TransportFailure(.connectionLost, reason: String(describing: error))
            }
        }
        if error is NIOConnectionError {
            return TransportFailure(.unreachable, reason: "connection failed")
        }
        if let error = error as? IOError {
            switch error.errnoCode {
            case ECONNREFUSED: return TransportFailure(.unreachable, reason: "connection refused")
            case ENETUNREACH, EHOSTUNREACH: return TransportFailure(.unreachable, reason: "no route to host")
            case ECONNRESET, EPIPE: return TransportFailure(.connectionLost, reason: "connection reset by peer")
            default: return TransportFailure(.connectionLost, reason: "I/O error \(error.errnoCode)")
            }
        }
        if let error = error as? ChannelError {
            switch error {
            case .connectTimeout: return TransportFailure(.timedOut, reason: "connect timed out")
            default: return TransportFailure(.connectionLost, reason: String(describing: error))
            }
        }
        if let error = error as? ClientError {
            return classify(error.underlyingError)
        }
        return error
    }
}

extension HTTPBody {
    /// The same bytes, pulled on demand, with errors thrown mid-body classified.
    fileprivate func mapChunksClassifyingErrors() -> HTTPBody {
        HTTPBody(ClassifiedChunks(base: self), length: length, iterationBehavior: iterationBehavior)
    }
}

/// An async sequence of body chunks whose errors are passed through ``ClassifyingTransport/classify(_:)``.
private struct ClassifiedChunks: AsyncSequence, Sendable {
    typealias Element = HTTPBody.ByteChunk
    let base: HTTPBody

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: HTTPBody.AsyncIterator
        mutating func next() async throws -> HTTPBody.ByteChunk? {
            do {
                return try await base.next()
            } catch {
                throw ClassifyingTransport.classify(error)
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator()) }
}

extension APIClient {
    /// A client for a live API: the shared AsyncHTTPClient transport (or `transport`) and
    /// Freshet's standard middleware chain (``Middlewares/standard(logger:retry:rateLimit:coalescing:innermost:)``).
    public static func live(
        baseURL: URL,
        headers: HTTPFields = APIClient.standardHeaders,
        transport: any ClientTransport = Transports.asyncHTTPClient(),
        middlewares: [any ClientMiddleware] = Middlewares.standard()
    ) -> APIClient {
        APIClient(baseURL: baseURL, transport: transport, middlewares: middlewares, defaultHeaders: headers)
    }
}
