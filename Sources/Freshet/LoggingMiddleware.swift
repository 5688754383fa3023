import Foundation
import HTTPTypes
import Logging
import OpenAPIRuntime

/// Logs one line per exchange with swift-log: method, URL, status, duration, cache outcome and
/// attempt. Failures are logged with their ``APIError`` description.
///
/// Nothing secret is logged: URLs go through ``Redaction/redact(_:)-(URL)`` (token-like query
/// values replaced), and headers are never logged except through ``Redaction/redact(_:)-(HTTPFields)``
/// at `trace` level.
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

    private static func describe(_ fields: HTTPFields) -> String {
        fields.map { "\($0.name.canonicalName): \($0.value)" }.joined(separator: "; ")
    }
}
