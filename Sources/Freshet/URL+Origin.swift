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
        if let plain = splitPlain(url.absoluteString) { return plain }
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

    /// The split read off the text of a plain URL, `scheme://host[:port]/path[?query]` with a host
    /// of letters, digits, `.`, `-` and `_` (what an API's URLs are): no `URLComponents` parse.
    /// `nil` for anything else (a user, an IP literal, an escape, a fragment, no path), which
    /// ``split(_:)`` takes apart the long way.
    static func splitPlain(_ text: String) -> (origin: URL, target: String, isWhole: Bool)? {
        let bytes = text.utf8
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon != bytes.startIndex,
              bytes[colon...].starts(with: "://".utf8),
              bytes[..<colon].allSatisfy({ isSchemeByte($0) })
        else { return nil }
        let hostStart = bytes.index(colon, offsetBy: 3)
        guard let slash = bytes[hostStart...].firstIndex(where: { !isHostByte($0) && $0 != UInt8(ascii: ":") }),
              bytes[slash] == UInt8(ascii: "/"), slash != hostStart,
              !bytes[slash...].contains(UInt8(ascii: "#"))
        else { return nil }
        // At most one `:`, followed by at least one digit and nothing else.
        let authority = bytes[hostStart..<slash]
        if let portColon = authority.firstIndex(of: UInt8(ascii: ":")) {
            let port = authority[authority.index(after: portColon)...]
            guard portColon != hostStart, !port.isEmpty, port.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
            else { return nil }
        }
        guard let origin = URL(string: String(text[..<slash])) else { return nil }
        return (origin, String(text[slash...]), true)
    }

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        isHostByte(byte) || byte == UInt8(ascii: "+")
    }

    private static func isHostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }
}
