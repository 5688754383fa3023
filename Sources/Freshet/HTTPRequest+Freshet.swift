import Foundation
import HTTPTypes

extension HTTPRequest {
    /// The absolute URL of this request when sent relative to `baseURL` (as transports do).
    public func url(relativeTo baseURL: URL) -> URL? {
        URL(string: baseURL.joined(target: path ?? "/"))
    }

    /// Whether a `Cache-Control` line of the request contains `directive` (lowercase; compared
    /// case-insensitively).
    func cacheControlMentions(_ directive: String) -> Bool {
        headerFields[values: .cacheControl].contains { $0.lowercased().contains(directive) }
    }

    /// Whether the method is idempotent (RFC 9110 §9.2.2) and so safe to retry.
    public var isIdempotent: Bool {
        [.get, .head, .options, .put, .delete, .trace].contains(method)
    }
}
