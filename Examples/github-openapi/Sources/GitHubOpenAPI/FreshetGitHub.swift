import Foundation
import Freshet
import FreshetCache
import FreshetTransports
import GitHubAPI
import HTTPTypes
import Logging
import OpenAPIRuntime

/// The generated GitHub `Client` on Freshet: its `HTTPClientTransport`, `Middlewares.standard`
/// (redirects that drop credentials across hosts, retries with `Retry-After`, coalescing, GitHub's
/// rate limits as a typed error) and the RFC 9111 cache in front of the transport.
///
/// ```swift
/// let client = FreshetGitHub.client(serverURL: url, token: token, store: SQLiteCacheStore(writer: pool))
/// let (output, report) = try await ExchangeReport.collect {
///     try await client.getUser(path: .init(username: "octocat"))
/// }
/// print(try output.ok.body.json.login, report.cache ?? .miss)
/// ```
public enum FreshetGitHub {
    /// A generated client for the GitHub API at `serverURL`.
    /// - Parameters:
    ///   - serverURL: the API's base (`https://api.github.com`, or the simulator).
    ///   - token: sent as `Authorization: Bearer` (never to another host after a redirect).
    ///   - store: where the HTTP cache keeps responses (a `SQLiteCacheStore` for one on disk).
    ///   - transport: the transport (default: Freshet's AsyncHTTPClient transport).
    ///   - now: the cache's clock.
    ///   - logger: one line per exchange, when given.
    public static func client(
        serverURL: URL, token: String?, store: any CacheStore,
        transport: any ClientTransport = Transports.asyncHTTPClient(),
        now: @escaping @Sendable () -> Date = { Date() }, logger: Logger? = nil
    ) -> Client {
        var headers = APIClient.standardHeaders
        headers[.accept] = "application/vnd.github+json"
        if let token { headers[.authorization] = "Bearer \(token)" }
        let cache = CacheMiddleware(
            store: store, options: .init(mode: .private, serveStaleOnFailure: true),
            backgroundTransport: transport, now: now)
        let middlewares: [any ClientMiddleware] = [HeaderFieldsMiddleware(headers)] + Middlewares.standard(
            logger: logger, rateLimit: RateLimitMiddleware(errorBody: .gitHub), innermost: [cache])
        return Client(serverURL: serverURL, transport: transport, middlewares: middlewares)
    }
}

/// Adds header fields the request does not set (the token, `Accept`, `User-Agent`): outermost,
/// so the redirect middleware sees the `Authorization` it must drop on another host.
struct HeaderFieldsMiddleware: ClientMiddleware {
    let fields: HTTPFields

    init(_ fields: HTTPFields) {
        self.fields = fields
    }

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        for field in fields where request.headerFields[field.name] == nil {
            request.headerFields.append(field)
        }
        return try await next(request, body, baseURL)
    }
}
