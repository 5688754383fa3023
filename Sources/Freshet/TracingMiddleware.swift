import Foundation
import HTTPTypes
import Instrumentation
import OpenAPIRuntime
import Synchronization
import Tracing

/// Records one client span per exchange with swift-distributed-tracing, and sends the trace
/// context along in the request's header fields (W3C `traceparent` with swift-otel).
///
/// The span is named after the operation (`GET /repos/{owner}/{repo}`: see ``Endpoint/named(_:)``;
/// an endpoint without a route is named by its first path segment, `GET /repos`, which
/// `url.template` then holds too) and carries OpenTelemetry's HTTP client attributes — `http.request.method`, `url.template`,
/// `url.full` (redacted), `server.address`, `server.port`, `http.response.status_code`,
/// `error.type` — plus `freshet.cache` (the cache's outcome) and `freshet.attempt` (from the
/// retry middleware; with `http.request.resend_count` after a retry). It ends when the response body has been read (or dropped), so it covers
/// the whole exchange. A status of 400 or more, or a failure, marks the span as an error.
///
/// Put it outermost (``Middlewares/standard(logger:tracing:metrics:authentication:retry:rateLimit:coalescing:decompression:innermost:)``
/// does) so the span covers redirects, retries and token refreshes, and log lines written inside
/// it carry its context. With swift-otel, bootstrap the `InstrumentationSystem` once and use
/// the default tracer:
///
/// ```swift
/// let observability = try OTel.bootstrap()          // swift-otel: sets InstrumentationSystem;
/// // run `observability` (a Service) in your ServiceGroup, or spans are never exported
/// let client = APIClient.live(baseURL: api, middlewares: Middlewares.standard(tracing: TracingMiddleware()))
/// ```
public struct TracingMiddleware: ClientMiddleware {
    /// The tracer spans go to; `nil` uses `InstrumentationSystem.tracer` (what swift-otel bootstraps).
    public var tracer: (any Tracer)?

    /// Creates the middleware.
    /// - Parameter tracer: the tracer to use instead of the global one (tests pass an `InMemoryTracer`).
    public init(tracer: (any Tracer)? = nil) {
        self.tracer = tracer
    }

    /// Sends the request inside a client span.
    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let tracer = self.tracer ?? InstrumentationSystem.tracer
        let span = tracer.startSpan(operationID, context: ServiceContext.current ?? .topLevel, ofKind: .client)
        let url = request.url(relativeTo: baseURL)
        span.attributes["http.request.method"] = request.method.rawValue
        if let route = operationID.split(separator: " ", maxSplits: 1).dropFirst().first {
            span.attributes["url.template"] = String(route)
        }
        if let url {
            span.attributes["url.full"] = Redaction.redact(url)
            if let host = url.host { span.attributes["server.address"] = host }
            if let port = url.port ?? (url.scheme == "https" ? 443 : url.scheme == "http" ? 80 : nil) {
                span.attributes["server.port"] = port
            }
        }
        var traced = request
        tracer.inject(span.context, into: &traced.headerFields, using: HTTPFieldsInjector())
        let end = SpanEnd(span)
        do {
            let ((response, responseBody), report) = try await ServiceContext.withValue(span.context) {
                try await ExchangeReport.observing { try await next(traced, body, baseURL) }
            }
            let code = response.status.code
            span.attributes["http.response.status_code"] = code
            if let cache = report.cache { span.attributes["freshet.cache"] = cache.rawValue }
            span.attributes["freshet.attempt"] = report.attempt
            if report.attempt > 1 { span.attributes["http.request.resend_count"] = report.attempt - 1 }
            if code >= 400 {
                span.attributes["error.type"] = String(code)
                span.setStatus(SpanStatus(code: .error))
            }
            guard let responseBody else {
                end.finish()
                return (response, nil)
            }
            return (response, responseBody.observed(onEnd: { end.finish(error: $0) }))
        } catch {
            let failure = APIError.wrapping(error, url: url)
            span.attributes["error.type"] = Self.errorType(failure)
            span.recordError(failure)
            span.setStatus(SpanStatus(code: .error, message: failure.description))
            end.finish()
            throw error
        }
    }

    /// A low-cardinality name for a failure (OpenTelemetry's `error.type`).
    static func errorType(_ error: APIError) -> String {
        switch error {
        case .invalidRequest: return "invalid_request"
        case .unreachable: return "unreachable"
        case .timedOut: return "timeout"
        case .cancelled: return "cancelled"
        case .httpStatus(let code, _, _, _): return String(code)
        case .decodingFailed: return "decoding"
        case .bodyTooLarge: return "body_too_large"
        case .rateLimited: return "rate_limited"
        case .transport: return "transport"
        case .retryLater: return "retry_later"
        case .redirectRefused: return "redirect_refused"
        case .authenticationFailed: return "authentication_failed"
        case .fileAccess: return "file_access"
        case .undecodableBody: return "undecodable_body"
        case .notAnEventStream: return "not_an_event_stream"
        }
    }
}

/// Writes trace headers into `HTTPFields`.
struct HTTPFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout HTTPFields) {
        guard let name = HTTPField.Name(key) else { return }
        carrier[name] = value
    }
}

/// Ends a span once: when the body ends, fails, or is dropped unread.
private final class SpanEnd: Sendable {
    private let span: Mutex<(any Span)?>

    init(_ span: any Span) { self.span = Mutex(span) }

    func finish(error: (any Error)? = nil) {
        guard let span = span.withLock({ s -> (any Span)? in defer { s = nil }; return s }) else { return }
        if let error {
            span.attributes["error.type"] = TracingMiddleware.errorType(APIError.wrapping(error, url: nil))
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error))
        }
        span.end()
    }

    deinit { finish() }
}
