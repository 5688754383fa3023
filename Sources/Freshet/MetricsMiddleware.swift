import CoreMetrics
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Synchronization

/// Counts requests and measures them with swift-metrics, for any metrics backend
/// (swift-prometheus, swift-otel, StatsD, …): see <doc:Metrics>.
///
/// With the default prefix `freshet_client`:
///
/// | metric | type | dimensions | what |
/// |---|---|---|---|
/// | `freshet_client_requests_total` | counter | `method`, `route`, `status_class`, `cache` | requests, counted once each when its exchange ends |
/// | `freshet_client_request_duration_seconds` | timer | `method`, `route`, `status_class`, `cache` | from the call until the response body was read, failed or dropped |
/// | `freshet_client_received_bytes_total` | counter | `method`, `route` | response body bytes as the caller reads them (decoded, in the standard chain: metrics sit above decompression), counted as the body streams through |
/// | `freshet_client_sent_bytes_total` | counter | `method`, `route` | request body bytes, counted as the transport takes them (again for each attempt that sends them) |
/// | `freshet_client_retries_total` | counter | `method`, `route` | attempts after the first (from the retry middleware) |
/// | `freshet_client_time_to_first_byte_seconds` | timer | `method`, `route` | ``ExchangeTiming/timeToFirstByte``, where the transport knows it |
/// | `freshet_client_connect_duration_seconds` | timer | — | ``ExchangeTiming/connect``, for each new connection the transport reports |
/// | `freshet_client_tls_handshake_duration_seconds` | timer | — | ``ExchangeTiming/tlsHandshake``, likewise |
///
/// The dimensions keep cardinality bounded and secrets out: `route` is the route template
/// (``Endpoint/named(_:)``: `/repos/{owner}/{repo}`; without one, the first path segment; in a
/// swift-openapi-generator client, the operation ID), never the URL. `status_class` is `2xx` …
/// `5xx` for a response, `error` for a failure (thrown, or a body that broke off) and
/// `cancelled`; `cache` is the cache's outcome (`hit`, `revalidated`, `miss`, `stale`), or
/// `none` when no cache answered.
///
/// Put it outside the retry and cache middlewares so that it sees the cache's outcome and counts
/// one request per call however many attempts it took:
/// ``Middlewares/standard(logger:tracing:metrics:authentication:retry:rateLimit:coalescing:decompression:innermost:)``
/// puts it inside tracing and logging, outside authentication, redirects and retries. The byte
/// counts are the bodies' bytes as the caller reads and writes them, a cache hit's included —
/// not the bytes on the wire (no header fields, framing or compression).
///
/// It reads what the middlewares inside it record in the current ``ExchangeReport``, and binds
/// one when there is none (as in a swift-openapi-generator client).
public struct MetricsMiddleware: ClientMiddleware {
    /// The factory that makes the metrics' handlers; `nil` uses `MetricsSystem.factory`, the
    /// one bootstrapped for the process, at each request.
    public var factory: (any MetricsFactory)?
    /// The metrics' names: `<labelPrefix>_requests_total`, … (default `freshet_client`).
    public var labelPrefix: String {
        didSet { names = Names(labelPrefix) }
    }
    private var names: Names

    /// Creates the middleware.
    /// - Parameters:
    ///   - factory: the metrics backend to use instead of the global one (tests pass swift-metrics'
    ///     `TestMetrics`; a process with two registries passes each its own).
    ///   - labelPrefix: what every metric's name starts with.
    public init(factory: (any MetricsFactory)? = nil, labelPrefix: String = "freshet_client") {
        self.factory = factory
        self.labelPrefix = labelPrefix
        names = Names(labelPrefix)
    }

    /// The metrics' full names.
    struct Names: Sendable {
        var requests, duration, received, sent, retries, timeToFirstByte, connect, tlsHandshake: String

        init(_ prefix: String) {
            requests = prefix + "_requests_total"
            duration = prefix + "_request_duration_seconds"
            received = prefix + "_received_bytes_total"
            sent = prefix + "_sent_bytes_total"
            retries = prefix + "_retries_total"
            timeToFirstByte = prefix + "_time_to_first_byte_seconds"
            connect = prefix + "_connect_duration_seconds"
            tlsHandshake = prefix + "_tls_handshake_duration_seconds"
        }
    }

    /// Sends the request and records its metrics when the exchange ends.
    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let factory = self.factory ?? MetricsSystem.factory
        let method = request.method.rawValue
        let route = Self.route(operationID, method: method)
        let exchange = ExchangeMetrics(names: names, factory: factory, method: method, route: route)
        var outbound = body
        if let body {
            let sent = Counter(label: names.sent, dimensions: exchange.routeDimensions, factory: factory)
            outbound = body.observed(onChunk: { sent.increment(by: $0) })
        }
        let bound = ExchangeReport.current
        let report = bound ?? ExchangeReport()
        let response: HTTPResponse
        let responseBody: HTTPBody?
        do {
            if bound != nil {
                (response, responseBody) = try await next(request, outbound, baseURL)
            } else {
                (response, responseBody) = try await ExchangeReport.$current.withValue(report) {
                    try await next(request, outbound, baseURL)
                }
            }
        } catch {
            exchange.finish(Self.statusClass(of: error), report: report.snapshot)
            throw error
        }
        let statusClass = Self.statusClass(response.status.code)
        guard let responseBody else {
            exchange.finish(statusClass, report: report.snapshot)
            return (response, nil)
        }
        let received = Counter(label: names.received, dimensions: exchange.routeDimensions, factory: factory)
        let end = ExchangeEnd(exchange: exchange, report: report, statusClass: statusClass)
        return (response, responseBody.observed(onChunk: { received.increment(by: $0) }, onEnd: { end.finish(error: $0) }))
    }

    /// The route template in an operation ID: `GET /repos/{owner}/{repo}` → `/repos/{owner}/{repo}`;
    /// an ID without the method in front (a generated client's `getRepo`) as it is.
    static func route(_ operationID: String, method: String) -> String {
        guard operationID.count > method.count, operationID.hasPrefix(method),
              operationID[operationID.index(operationID.startIndex, offsetBy: method.count)] == " " else {
            return operationID
        }
        return String(operationID.dropFirst(method.count + 1))
    }

    /// `2xx` for `204`, …
    static func statusClass(_ code: Int) -> String {
        switch code {
        case 100..<200: "1xx"
        case 200..<300: "2xx"
        case 300..<400: "3xx"
        case 400..<500: "4xx"
        case 500..<600: "5xx"
        default: "other"
        }
    }

    /// `cancelled` for a cancellation, `error` for any other failure.
    static func statusClass(of error: any Error) -> String {
        if case .cancelled = APIError.wrapping(error, url: nil) { return "cancelled" }
        return Task.isCancelled ? "cancelled" : "error"
    }
}

/// One exchange's metrics, recorded once when it ends.
private final class ExchangeMetrics: Sendable {
    let names: MetricsMiddleware.Names
    let factory: any MetricsFactory
    let method: String
    let route: String
    let start = ContinuousClock.now
    private let finished = Atomic<Bool>(false)

    init(names: MetricsMiddleware.Names, factory: any MetricsFactory, method: String, route: String) {
        self.names = names
        self.factory = factory
        self.method = method
        self.route = route
    }

    var routeDimensions: [(String, String)] { [("method", method), ("route", route)] }

    /// Counts the request and records its duration and phases (the first call only).
    func finish(_ statusClass: String, report: ExchangeReport.Snapshot) {
        guard !finished.exchange(true, ordering: .relaxed) else { return }
        let elapsed = ContinuousClock.now - start
        let dimensions = [("method", method), ("route", route), ("status_class", statusClass),
                          ("cache", report.cache?.rawValue ?? "none")]
        Counter(label: names.requests, dimensions: dimensions, factory: factory).increment()
        CoreMetrics.Timer(label: names.duration, dimensions: dimensions, factory: factory).recordNanoseconds(Self.nanoseconds(elapsed))
        if report.attempt > 1 {
            Counter(label: names.retries, dimensions: routeDimensions, factory: factory).increment(by: report.attempt - 1)
        }
        if let ttfb = report.timeToFirstByte {
            CoreMetrics.Timer(label: names.timeToFirstByte, dimensions: routeDimensions, factory: factory)
                .recordNanoseconds(Self.nanoseconds(ttfb))
        }
        if let connect = report.connect {
            CoreMetrics.Timer(label: names.connect, dimensions: [], factory: factory).recordNanoseconds(Self.nanoseconds(connect))
        }
        if let handshake = report.tlsHandshake {
            CoreMetrics.Timer(label: names.tlsHandshake, dimensions: [], factory: factory).recordNanoseconds(Self.nanoseconds(handshake))
        }
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

/// Ends an exchange's metrics when its response body ends, fails, or is dropped unread.
private final class ExchangeEnd: Sendable {
    let exchange: ExchangeMetrics
    let report: ExchangeReport
    let statusClass: String

    init(exchange: ExchangeMetrics, report: ExchangeReport, statusClass: String) {
        self.exchange = exchange
        self.report = report
        self.statusClass = statusClass
    }

    func finish(error: (any Error)?) {
        exchange.finish(error.map(MetricsMiddleware.statusClass(of:)) ?? statusClass, report: report.snapshot)
    }

    deinit { finish(error: nil) }
}
