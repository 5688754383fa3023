import Foundation

extension URL {
    /// Whether scheme, host and port are all equal (default ports filled in): the same origin.
    public func isSameOrigin(as other: URL) -> Bool {
        func origin(_ url: URL) -> (String, String, Int) {
            let scheme = url.scheme?.lowercased() ?? ""
            return (scheme, url.host?.lowercased() ?? "", url.port ?? (scheme == "https" ? 443 : 80))
        }
        return origin(self) == origin(other)
    }

    /// This URL's text with `target` (a request target starting with `/`) appended, one slash
    /// between them: how a transport spells a request's URL.
    package func joined(target: String) -> String {
        let base = absoluteString
        return (base.hasSuffix("/") ? String(base.dropLast()) : base) + target
    }
}

/// Splits an absolute URL into the origin (a transport's `baseURL`) and the request target.
enum URLTarget {
    /// The origin and target of `url`; `isWhole` when origin and target put back together spell
    /// `url` itself (no user, password or fragment, a path), so a caller need not build it again.
    static func split(_ url: URL) -> (origin: URL, target: String, isWhole: Bool)? {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              let scheme = components.scheme, let host = components.host else { return nil }
        var origin = URLComponents()
        origin.scheme = scheme
        origin.host = host
        origin.port = components.port
        guard let originURL = origin.url else { return nil }
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        let isWhole = components.user == nil && components.password == nil && components.fragment == nil
            && !components.percentEncodedPath.isEmpty
        return (originURL, path + (components.percentEncodedQuery.map { "?\($0)" } ?? ""), isWhole)
    }
}
