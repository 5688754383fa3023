import Foundation
import HTTPTypes

/// A decoded response value together with what the server said about it.
public struct Response<Value: Sendable>: Sendable {
    /// The decoded body.
    public var value: Value
    /// The final status (a revalidated cache entry reports its stored `200`).
    public var status: HTTPResponse.Status
    /// The response headers, as delivered by the middleware chain.
    public var headers: HTTPFields
    /// The URL that was requested.
    public var url: URL
    /// How the HTTP cache answered, or `nil` when no cache middleware is installed.
    public var cache: CacheOutcome?
    /// Why a stored response was served stale (the refresh's failure), when it was: the status
    /// the server answered, or the error the refresh failed with.
    public var staleReason: StaleReason?
    /// The attempt that produced the response (1 for the first; the retry middleware counts).
    public var attempt: Int
    /// The number of body bytes received by the client.
    public var bodyBytes: Int
    /// How long the exchange took: until the response head, and in all (a cache hit takes
    /// microseconds; a retried exchange counts every attempt and the waits between them).
    public var timing: ExchangeTiming

    /// Creates a response.
    public init(value: Value, status: HTTPResponse.Status, headers: HTTPFields, url: URL,
                cache: CacheOutcome? = nil, staleReason: StaleReason? = nil, attempt: Int = 1, bodyBytes: Int,
                timing: ExchangeTiming = ExchangeTiming()) {
        self.value = value
        self.status = status
        self.headers = headers
        self.url = url
        self.cache = cache
        self.staleReason = staleReason
        self.attempt = attempt
        self.bodyBytes = bodyBytes
        self.timing = timing
    }

    /// The same metadata with another value.
    public func map<T: Sendable>(_ transform: (Value) throws -> T) rethrows -> Response<T> {
        Response<T>(value: try transform(value), status: status, headers: headers, url: url,
                    cache: cache, staleReason: staleReason, attempt: attempt, bodyBytes: bodyBytes, timing: timing)
    }
}

/// Why a stored response was served although it was stale: the refresh it stood in for failed.
/// Its ``description`` says how, in words meant for a person.
public enum StaleReason: Sendable, Equatable, CustomStringConvertible {
    /// The server answered the refresh with `status` (a `5xx`, or a status the cache was told to
    /// serve stored responses over); `url` is the request's URL, redacted.
    case status(HTTPResponse.Status, url: String)
    /// The server's new answer was not valid JSON, so it did not replace the stored response;
    /// `url` is the request's URL, redacted.
    case invalidJSON(url: String)
    /// The refresh failed with `error`: no connection, a broken-off body, a retry that gave up, …
    case failed(APIError)

    /// The status the server answered the refresh with, when it answered with one.
    public var status: HTTPResponse.Status? {
        switch self {
        case .status(let status, _): status
        case .failed(.httpStatus(let code, _, _, _)), .failed(.retryLater(let code, _, _, _)): HTTPResponse.Status(code: code)
        case .invalidJSON, .failed: nil
        }
    }

    /// The error the refresh failed with, for ``failed(_:)``.
    public var error: APIError? {
        if case .failed(let error) = self { return error }
        return nil
    }

    /// What failed, for a person: `HTTP 503 from <url>`, or the error's description.
    public var description: String {
        switch self {
        case .status(let status, let url): "HTTP \(status.code) from \(url)"
        case .invalidJSON(let url): "the response from \(url) is not valid JSON"
        case .failed(let error): error.description
        }
    }
}

/// How long an exchange took, measured by ``APIClient`` around the whole middleware chain.
public struct ExchangeTiming: Sendable, Equatable {
    /// From the start of the call until the transport handed back the last response head
    /// (redirects, retries and a token refresh included; a middleware that reads the body before
    /// handing the head on, like coalescing, is not counted). For a cache hit, until the stored
    /// response was handed back.
    public var timeToHeaders: Duration
    /// From the start of the call until the whole body was read.
    public var total: Duration
    /// How long making the connection took (TCP, name resolution included), for the transport's
    /// last exchange. `nil` on a reused connection, for a cache hit, and with a transport that
    /// does not say (AsyncHTTPClient, URLSession); `HTTP1Transport` does.
    public var connect: Duration?
    /// How long the TLS handshake of that connection took; `nil` for `http`, on a reused
    /// connection, for a cache hit, and with a transport that does not say.
    public var tlsHandshake: Duration?
    /// From the transport's starting to send the last request on its connection (made or reused)
    /// until the first byte of the response arrived: the server's time and one round trip.
    /// `nil` for a cache hit and with a transport that does not say.
    public var timeToFirstByte: Duration?

    /// Creates a timing (zero by default, phases unknown).
    public init(timeToHeaders: Duration = .zero, total: Duration = .zero, connect: Duration? = nil,
                tlsHandshake: Duration? = nil, timeToFirstByte: Duration? = nil) {
        self.timeToHeaders = timeToHeaders
        self.total = total
        self.connect = connect
        self.tlsHandshake = tlsHandshake
        self.timeToFirstByte = timeToFirstByte
    }
}

/// How a cache middleware answered a request. It reports this through ``ExchangeReport``, and
/// the client hands it on as ``Response/cache``.
public enum CacheOutcome: String, Sendable, Codable, CaseIterable {
    /// Served from the store without contacting the server.
    case hit
    /// The server confirmed the stored response with `304 Not Modified`.
    case revalidated
    /// Fetched from the server (nothing usable was stored).
    case miss
    /// Served from the store although stale, because the server could not be reached.
    case stale
}
