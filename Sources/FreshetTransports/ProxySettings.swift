import Foundation

/// Which forward proxy, if any, each request goes through: one for `http` origins, one for
/// `https` origins, and the hosts that are reached directly.
///
/// ``environment`` reads them as curl does ( ``fromEnvironment(_:)``), and is what
/// ``Transports/asyncHTTPClient(timeout:proxies:)`` and ``HTTP1ConnectionPool`` use unless given
/// other settings; ``direct`` uses none.
///
/// ```swift
/// let proxies = ProxySettings(https: try ForwardProxy(url: "http://user:secret@proxy.internal:3128"),
///                             noProxy: try NoProxy(".internal, 10.0.0.0/8"))
/// let transport = Transports.asyncHTTPClient(proxies: proxies)
/// ```
public struct ProxySettings: Hashable, Sendable, CustomStringConvertible {
    /// The proxy for `http` origins.
    public var http: ForwardProxy?
    /// The proxy for `https` origins.
    public var https: ForwardProxy?
    /// The hosts reached without a proxy.
    public var noProxy: NoProxy
    /// Why the environment's settings cannot be used (``environment`` only): every request fails
    /// with it instead of silently going direct.
    private var problem: ConfigurationError?

    /// Settings with `http` for `http` origins and `https` for `https` origins, except the hosts
    /// `noProxy` matches.
    public init(http: ForwardProxy? = nil, https: ForwardProxy? = nil, noProxy: NoProxy = NoProxy()) {
        self.http = http
        self.https = https
        self.noProxy = noProxy
    }

    /// `proxy` for every origin, except the hosts `noProxy` matches.
    public static func all(_ proxy: ForwardProxy, noProxy: NoProxy = NoProxy()) -> ProxySettings {
        ProxySettings(http: proxy, https: proxy, noProxy: noProxy)
    }

    /// No proxy: every connection goes straight to the origin.
    public static let direct = ProxySettings()

    /// The process's environment as ``fromEnvironment(_:)`` reads it, read once (on first use)
    /// and kept, as Go's `ProxyFromEnvironment` does. When a variable is malformed, every request
    /// through these settings fails with the ``ConfigurationError`` that says which (rather than
    /// silently bypassing the proxy); call ``fromEnvironment(_:)`` to report it up front.
    public static let environment: ProxySettings = {
        do throws(ConfigurationError) {
            return try fromEnvironment()
        } catch {
            var settings = ProxySettings()
            settings.problem = error
            return settings
        }
    }()

    /// The proxies the environment names, as curl reads them.
    ///
    /// - `http_proxy` for `http` origins, `https_proxy` for `https` origins, and `all_proxy` for
    ///   either when its own is not set; the uppercase names (`HTTP_PROXY`, `HTTPS_PROXY`,
    ///   `ALL_PROXY`) are read when the lowercase one is unset or empty. Uppercase `HTTP_PROXY` is
    ///   ignored when `REQUEST_METHOD` is set: in a CGI program it can come from a request's
    ///   `Proxy:` header ("httpoxy"), as Go and curl know.
    /// - Each is a proxy URL (``ForwardProxy/init(url:)``): `http://[USER:PASSWORD@]HOST[:PORT]`
    ///   or `socks5://HOST[:PORT]`; without a scheme, `http`; without a port, 1080.
    /// - `no_proxy` (or `NO_PROXY`) lists the hosts reached directly (``NoProxy``). Loopback
    ///   addresses are not special: list them there to reach them directly.
    /// - Throws: ``ConfigurationError`` naming the variable that is malformed (never showing a
    ///   password).
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigurationError) -> ProxySettings {
        func value(_ name: String, upper: Bool = true) -> (name: String, value: String)? {
            if let text = environment[name.lowercased()], !text.trimmingCharacters(in: .whitespaces).isEmpty {
                return (name.lowercased(), text)
            }
            if upper, let text = environment[name], !text.trimmingCharacters(in: .whitespaces).isEmpty {
                return (name, text)
            }
            return nil
        }
        func proxy(_ name: String, upper: Bool = true) throws(ConfigurationError) -> ForwardProxy? {
            guard let (variable, text) = value(name, upper: upper) else { return nil }
            do {
                return try ForwardProxy(url: text)
            } catch {
                throw ConfigurationError("\(variable): \(error.description)")
            }
        }
        let all = try proxy("ALL_PROXY")
        let http = try proxy("HTTP_PROXY", upper: environment["REQUEST_METHOD"] == nil) ?? all
        let https = try proxy("HTTPS_PROXY") ?? all
        var noProxy = NoProxy()
        if let (variable, text) = value("NO_PROXY") {
            do {
                noProxy = try NoProxy(text)
            } catch {
                throw ConfigurationError("\(variable): \(error.description)")
            }
        }
        return ProxySettings(http: http, https: https, noProxy: noProxy)
    }

    /// Whether no request goes through a proxy.
    public var isDirect: Bool { problem == nil && (http == nil && https == nil || noProxy.matchesAll) }

    /// The proxy for a request to `url`: ``http`` or ``https`` by its scheme, `nil` when
    /// ``noProxy`` matches its host and port (or its scheme is neither).
    /// - Throws: the ``ConfigurationError`` of a malformed environment (``environment`` only).
    public func proxy(for url: URL) throws(ConfigurationError) -> ForwardProxy? {
        if let problem { throw problem }
        // Direct (the usual case): nothing to read from the URL.
        guard http != nil || https != nil else { return nil }
        guard let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else { return nil }
        let proxy: ForwardProxy?
        switch scheme {
        case "http": proxy = http
        case "https": proxy = https
        default: return nil
        }
        guard let proxy else { return nil }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return noProxy.matches(host: host, port: port) ? nil : proxy
    }

    /// `http: …, https: …, no proxy for: …` (proxies without their credentials), or `direct`.
    public var description: String {
        if let problem { return "invalid (\(problem))" }
        if http == nil && https == nil { return "direct" }
        var parts: [String] = []
        if let http { parts.append("http: \(http)") }
        if let https { parts.append("https: \(https)") }
        if !noProxy.rules.isEmpty { parts.append("no proxy for: \(noProxy)") }
        return parts.joined(separator: ", ")
    }

    /// A proxy setting that cannot be used: a malformed proxy URL or `NO_PROXY` entry. Its
    /// message names the variable and never shows a password.
    public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
        /// What is wrong.
        public var description: String

        /// A configuration error saying `description`.
        public init(_ description: String) {
            self.description = description
        }
    }
}

/// The hosts reached without a proxy, as curl and Go read `NO_PROXY`.
///
/// A comma- or space-separated list of:
/// - `*`: every host (no proxy at all);
/// - a domain: `example.com` and `.example.com` both match `example.com` and every name under
///   it (`api.example.com`), not `notexample.com`; a leading `*.` is read as `.`;
/// - an IP address (`10.1.2.3`, `::1` or `[::1]`), or a range in CIDR notation (`10.0.0.0/8`,
///   `fd00::/8`): matches a request to that address (host names are not resolved);
/// - any of these with `:PORT`: matches that port only (`example.com:8080`, `[::1]:8443`).
///
/// Names are compared case-insensitively, a trailing dot ignored. Loopback is not special:
/// `localhost` and `127.0.0.1` go through the proxy unless listed.
public struct NoProxy: Hashable, Sendable, CustomStringConvertible {
    /// One entry of the list.
    public enum Rule: Hashable, Sendable {
        /// Every host.
        case all
        /// A domain and every name under it (lowercase, no leading or trailing dot), on `port` or any.
        case domain(String, port: Int?)
        /// Addresses whose first `prefixLength` bits equal `address`'s (4 or 16 bytes), on `port` or any.
        case network(address: [UInt8], prefixLength: Int, port: Int?)
    }

    /// The entries, in the order given.
    public var rules: [Rule]

    /// The entries given.
    public init(rules: [Rule] = []) {
        self.rules = rules
    }

    /// Parses a `NO_PROXY` value.
    /// - Throws: ``ProxySettings/ConfigurationError`` naming the entry that is malformed.
    public init(_ text: String) throws(ProxySettings.ConfigurationError) {
        var rules: [Rule] = []
        for raw in text.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }) {
            let entry = raw.lowercased()
            if entry == "*" {
                rules.append(.all)
                continue
            }
            rules.append(try Self.rule(entry))
        }
        self.rules = rules
    }

    private static func rule(_ entry: String) throws(ProxySettings.ConfigurationError) -> Rule {
        var host = Substring(entry)
        var port: Int?
        func parsePort(_ text: Substring) throws(ProxySettings.ConfigurationError) -> Int {
            guard let value = Int(text), (1...65_535).contains(value) else {
                throw .init("the entry \"\(entry)\" has a port that is not a number from 1 to 65535")
            }
            return value
        }
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { throw .init("the entry \"\(entry)\" has no closing ]") }
            let after = host[host.index(after: close)...]
            if after.hasPrefix(":") {
                port = try parsePort(after.dropFirst())
            } else if after.hasPrefix("/") {
                let range = String(host[host.index(after: host.startIndex)..<close] + after)
                guard let rule = try network(range, port: nil, entry: entry) else {
                    throw .init("the entry \"\(entry)\" is not an IPv6 address followed by /PREFIX")
                }
                return rule
            } else if !after.isEmpty {
                throw .init("the entry \"\(entry)\" has text after its IPv6 address")
            }
            host = host[host.index(after: host.startIndex)..<close]
        } else if host.filter({ $0 == ":" }).count == 1, let colon = host.firstIndex(of: ":") {
            port = try parsePort(host[host.index(after: colon)...])
            host = host[..<colon]
        }
        if let rule = try network(String(host), port: port, entry: entry) { return rule }
        if host.hasPrefix("*.") { host = host.dropFirst(2) }
        while host.hasPrefix(".") { host = host.dropFirst() }
        while host.hasSuffix(".") { host = host.dropLast() }
        guard !host.isEmpty, !host.contains(where: { $0 == "/" || $0 == "*" || $0 == ":" || $0 == "@" }) else {
            throw .init("the entry \"\(entry)\" is not a host name, domain, IP address or CIDR range")
        }
        return .domain(String(host), port: port)
    }

    /// The rule for an IP address or CIDR range, `nil` when `text` is neither.
    private static func network(_ text: String, port: Int?, entry: String) throws(ProxySettings.ConfigurationError) -> Rule? {
        var addressText = Substring(text)
        var prefixLength: Int?
        if let slash = text.firstIndex(of: "/") {
            addressText = text[..<slash]
            guard let length = Int(text[text.index(after: slash)...]) else {
                throw .init("the entry \"\(entry)\" has a CIDR prefix length that is not a number")
            }
            prefixLength = length
        }
        guard let address = ipBytes(String(addressText)) else {
            if prefixLength != nil { throw .init("the entry \"\(entry)\" is not an IP address followed by /PREFIX") }
            return nil
        }
        let bits = address.count * 8
        let length = prefixLength ?? bits
        guard (0...bits).contains(length) else {
            throw .init("the entry \"\(entry)\" has a CIDR prefix length above \(bits)")
        }
        return .network(address: address, prefixLength: length, port: port)
    }

    /// Whether `host` (a name, or an IP address with or without brackets) on `port` is reached
    /// without a proxy.
    public func matches(host: String, port: Int) -> Bool {
        var name = Substring(host.lowercased())
        if name.hasPrefix("["), name.hasSuffix("]") { name = name.dropFirst().dropLast() }
        while name.hasSuffix(".") { name = name.dropLast() }
        let address = Self.ipBytes(String(name))
        for rule in rules {
            switch rule {
            case .all:
                return true
            case .domain(let domain, let rulePort):
                guard rulePort == nil || rulePort == port, address == nil else { continue }
                if name == domain || name.hasSuffix("." + domain) { return true }
            case .network(let network, let prefixLength, let rulePort):
                guard rulePort == nil || rulePort == port, let address, address.count == network.count else { continue }
                if Self.samePrefix(address, network, bits: prefixLength) { return true }
            }
        }
        return false
    }

    /// Whether every host is reached without a proxy (`*`).
    public var matchesAll: Bool { rules.contains(.all) }

    /// The entries as `NO_PROXY` would list them.
    public var description: String {
        rules.map { rule in
            switch rule {
            case .all: return "*"
            case .domain(let domain, let port): return port.map { "\(domain):\($0)" } ?? domain
            case .network(let address, let length, let port):
                var text = Self.format(address)
                if length != address.count * 8 { text += "/\(length)" }
                if let port { text = (address.count == 16 ? "[\(text)]" : text) + ":\(port)" }
                return text
            }
        }.joined(separator: ",")
    }

    private static func samePrefix(_ a: [UInt8], _ b: [UInt8], bits: Int) -> Bool {
        var remaining = bits
        for index in a.indices where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if a[index] & mask != b[index] & mask { return false }
            remaining -= 8
        }
        return true
    }

    /// The 4 or 16 bytes of an IPv4 or IPv6 literal, `nil` for anything else.
    static func ipBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }

    private static func format(_ address: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let family = address.count == 4 ? AF_INET : AF_INET6
        let ok = address.withUnsafeBytes { bytes in
            inet_ntop(family, bytes.baseAddress, &buffer, socklen_t(buffer.count)) != nil
        }
        guard ok else { return address.map(String.init).joined(separator: ".") }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
