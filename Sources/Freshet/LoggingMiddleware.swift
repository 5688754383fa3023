import Foundation
import HTTPTypes
import Logging
import OpenAPIRuntime

/// Logs one line per exchange with swift-log: method, URL, status, duration, cache outcome and
/// attempt. Failures are logged with their ``APIError`` description.
///
/// More at lower levels: `debug` adds a line with the fields that explain caching and rate
/// limits, the request's validators (`If-None-Match`, `If-Modified-Since`, `Cache-Control`) and
/// the response's (`Cache-Control`, `ETag`, `Last-Modified`, `Age`, `Vary`, `Content-Encoding`,
/// `X-RateLimit-*`, `Retry-After`); `trace` logs every request and response field.
///
/// Nothing secret is logged: URLs go through ``Redaction/redact(_:)-(URL)`` (token-like query
/// values replaced), and header fields only through ``Redaction/redact(_:)-(HTTPFields)``.
public struct LoggingMiddleware: ClientMiddleware {
    /// The logger lines go to.
    public var logger: Logger
    /// The level of the per-exchange line (default `.info`).
    public var level: Logger.Level

    /// Creates the middleware.
    public init(logger: Logger = Logger(label: "freshet.http"), level: Logger.Level = .info) {
        self.logger = logger
        self.level = level
    }

    /// Sends the request and logs the outcome.
    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let url = request.url(relativeTo: baseURL).map(Redaction.redact) ?? "?"
        let start = ContinuousClock.now
        logger.trace("request headers", metadata: ["headers": "\(Self.describe(Redaction.redact(request.headerFields)))"])
        do {
            // Read what the inner middlewares report; bind a report when the caller has none.
            let ((response, responseBody), report) = try await ExchangeReport.observing { try await next(request, body, baseURL) }
            logger.log(level: level, "\(request.method.rawValue) \(url) \(response.status.code)", metadata: [
                "duration_ms": "\(Self.milliseconds(since: start))",
                "cache": "\(report.cache?.rawValue ?? "none")",
                "attempt": "\(report.attempt)",
            ])
            if logger.logLevel <= .debug {
                logger.debug("validators and limits", metadata: [
                    "request": "\(Self.describe(Self.explaining(request.headerFields, Self.requestNames)))",
                    "response": "\(Self.describe(Self.explaining(response.headerFields, Self.responseNames)))",
                ])
            }
            logger.trace("response headers", metadata: ["headers": "\(Self.describe(Redaction.redact(response.headerFields)))"])
            return (response, responseBody)
        } catch {
            let description = APIError.wrapping(error, url: request.url(relativeTo: baseURL)).description
            logger.log(level: error is CancellationError ? level : .warning,
                       "\(request.method.rawValue) \(url) failed: \(description)",
                       metadata: ["duration_ms": "\(Self.milliseconds(since: start))"])
            throw error
        }
    }

    private static func milliseconds(since start: ContinuousClock.Instant) -> Int64 {
        let elapsed = ContinuousClock.now - start
        return elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
    }

    private static let requestNames: Set<HTTPField.Name> = [.ifNoneMatch, .ifModifiedSince, .cacheControl]
    private static let responseNames: Set<HTTPField.Name> = [
        .cacheControl, .eTag, .lastModified, .age, .vary, .contentEncoding, .retryAfter,
        HTTPField.Name("X-RateLimit-Limit")!, HTTPField.Name("X-RateLimit-Remaining")!,
        HTTPField.Name("X-RateLimit-Reset")!, HTTPField.Name("X-RateLimit-Resource")!,
    ]

    /// The fields of `fields` named in `names` (none of them secret, redacted all the same).
    private static func explaining(_ fields: HTTPFields, _ names: Set<HTTPField.Name>) -> HTTPFields {
        Redaction.redact(HTTPFields(fields.filter { names.contains($0.name) }))
    }

    private static func describe(_ fields: HTTPFields) -> String {
        fields.map { "\($0.name.canonicalName): \($0.value)" }.joined(separator: "; ")
    }
}
