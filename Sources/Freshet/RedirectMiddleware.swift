import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Follows redirects by Freshet's rules rather than the transport's (the live transports have
/// redirect-following turned off).
///
/// - At most ``maxRedirects`` hops (default 10); a loop fails at once with an error naming it.
/// - `Authorization`, `Cookie` and `Proxy-Authorization` are dropped when the scheme, host or
///   port changes, and stay dropped for the rest of the chain.
/// - An https → http downgrade is refused.
/// - 303 (and 301/302 after a POST) continue as GET without a body; 307/308 keep the method
///   and the body, which must be replayable.
public struct RedirectMiddleware: ClientMiddleware {
    /// The most redirects followed for one request.
    public var maxRedirects: Int

    /// Creates the middleware.
    public init(maxRedirects: Int = 10) {
        self.maxRedirects = maxRedirects
    }

    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]
    static let credentialHeaders: [HTTPField.Name] = [.authorization, .cookie, .proxyAuthorization]

    /// Sends the request and follows any redirect.
    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var current = request
        var currentBody = body
        var currentBase = baseURL
        // The URL is only built once a redirect arrives: most exchanges never need it.
        var chain: [URL] = []
        while true {
            let (response, responseBody) = try await next(current, currentBody, currentBase)
            guard Self.redirectStatuses.contains(response.status.code),
                  let location = response.headerFields[.location] else {
                return (response, responseBody)
            }
            if chain.isEmpty {
                guard let first = request.url(relativeTo: baseURL) else { return (response, responseBody) }
                chain = [first]
            }
            let currentURL = chain[chain.count - 1]
            let shown = Redaction.redact(currentURL)
            guard chain.count <= maxRedirects else {
                throw APIError.redirectRefused(reason: "more than \(maxRedirects) redirects", url: shown)
            }
            guard let target = URL(string: location, relativeTo: currentURL)?.absoluteURL,
                  let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https",
                  let split = URLTarget.split(target) else {
                throw APIError.redirectRefused(reason: "the Location \"\(location.prefix(200))\" is not an http(s) URL", url: shown)
            }
            if currentURL.scheme?.lowercased() == "https", scheme == "http" {
                throw APIError.redirectRefused(
                    reason: "it downgrades https to http (\(Redaction.redact(target)))", url: shown)
            }
            if chain.contains(target) {
                let loop = (chain + [target]).map(Redaction.redact).joined(separator: " → ")
                throw APIError.redirectRefused(reason: "redirect loop: \(loop)", url: shown)
            }
            await HTTPBody.discard(responseBody)

            let code = response.status.code
            if code == 303 && current.method != .head || (code == 301 || code == 302) && current.method == .post {
                current.method = .get
                currentBody = nil
                for name in [HTTPField.Name.contentType, .contentLength, .contentEncoding] {
                    current.headerFields[name] = nil
                }
            } else if let body = currentBody, body.iterationBehavior == .single {
                throw APIError.redirectRefused(reason: "the request body cannot be sent twice", url: shown)
            }
            if !currentURL.isSameOrigin(as: target) {
                for name in Self.credentialHeaders { current.headerFields[name] = nil }
            }
            current.path = split.target
            currentBase = split.origin
            chain.append(target)
        }
    }
}
