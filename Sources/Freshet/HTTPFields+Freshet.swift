import Foundation
import HTTPTypes

extension HTTPField.Name {
    /// `X-RateLimit-Limit`.
    public static let xRateLimitLimit = HTTPField.Name("X-RateLimit-Limit")!
    /// `X-RateLimit-Remaining`.
    public static let xRateLimitRemaining = HTTPField.Name("X-RateLimit-Remaining")!
    /// `X-RateLimit-Reset` (UTC epoch seconds).
    public static let xRateLimitReset = HTTPField.Name("X-RateLimit-Reset")!
    /// `X-RateLimit-Used`.
    public static let xRateLimitUsed = HTTPField.Name("X-RateLimit-Used")!
    /// `X-RateLimit-Resource` (`core`, `search`, …).
    public static let xRateLimitResource = HTTPField.Name("X-RateLimit-Resource")!
    /// `X-Poll-Interval` (seconds).
    public static let xPollInterval = HTTPField.Name("X-Poll-Interval")!
    /// `Link` (RFC 8288).
    public static let link = HTTPField.Name("Link")!
    /// `Freshet-Attempt`: set by the retry middleware to the attempt that produced the response.
    public static let freshetAttempt = HTTPField.Name("Freshet-Attempt")!
}

extension HTTPRequest {
    /// The absolute URL of this request when sent relative to `baseURL` (as transports do).
    public func url(relativeTo baseURL: URL) -> URL? {
        let base = baseURL.absoluteString.hasSuffix("/") ? String(baseURL.absoluteString.dropLast()) : baseURL.absoluteString
        return URL(string: base + (path ?? "/"))
    }

    /// Whether the method is idempotent (RFC 9110 §9.2.2) and so safe to retry.
    public var isIdempotent: Bool {
        [.get, .head, .options, .put, .delete, .trace].contains(method)
    }
}

/// Splits an absolute URL into the origin (a transport's `baseURL`) and the request target.
enum URLTarget {
    static func split(_ url: URL) -> (origin: URL, target: String)? {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              let scheme = components.scheme, let host = components.host else { return nil }
        var origin = URLComponents()
        origin.scheme = scheme
        origin.host = host
        origin.port = components.port
        guard let originURL = origin.url else { return nil }
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        return (originURL, path + (components.percentEncodedQuery.map { "?\($0)" } ?? ""))
    }
}
