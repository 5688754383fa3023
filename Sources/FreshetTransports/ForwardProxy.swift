import Foundation
import Freshet
import NIOCore
import NIOPosix

/// A forward proxy that requests go through: an HTTP proxy (`http://`) or a SOCKS5 proxy
/// (`socks5://`), with optional credentials.
///
/// Through an HTTP proxy a plain `http` request is sent to the proxy in absolute form
/// (`GET http://host/path HTTP/1.1`) and an `https` request goes through a tunnel the proxy opens
/// with `CONNECT host:443`, inside which TLS is made with the origin (the origin's name is
/// verified, as without a proxy). Credentials are sent as `Proxy-Authorization: Basic …`, to the
/// proxy only. Through a SOCKS5 proxy every connection is a tunnel; the origin's host name is
/// sent to the proxy, which resolves it (as curl's `socks5h://`).
///
/// ``description`` never shows the credentials: `http://127.0.0.1:3128`. Errors that name a proxy
/// use it, and neither logs nor metrics see the credentials (they are added below the
/// middleware chain).
public struct ForwardProxy: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The protocol spoken with the proxy.
    public enum Kind: String, Hashable, Sendable {
        /// An HTTP/1.1 proxy: absolute-form requests for `http`, `CONNECT` tunnels for `https`.
        case http
        /// A SOCKS5 proxy (no authentication): a tunnel for every connection.
        case socks5
    }

    /// A user name and password for the proxy. Its descriptions and reflection never show the
    /// password.
    public struct Credentials: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        /// The user name.
        public var user: String
        /// The password.
        public var password: String

        /// Credentials of `user` and `password`.
        public init(user: String, password: String) {
            self.user = user
            self.password = password
        }

        /// `user:***`.
        public var description: String { "\(user):***" }
        /// `user:***`.
        public var debugDescription: String { description }
        /// The user name only.
        public var customMirror: Mirror { Mirror(self, children: ["user": user]) }
    }

    /// The protocol spoken with the proxy.
    public var kind: Kind
    /// The proxy's host name or IP address (an IPv6 address without brackets).
    public var host: String
    /// The proxy's port.
    public var port: Int
    /// The credentials sent to the proxy (HTTP proxies only), if any.
    public var credentials: Credentials?

    /// The port a proxy URL without one means: 1080, as curl assumes for every kind.
    public static let defaultPort = 1080

    /// A proxy of `kind` at `host`:`port`.
    public init(_ kind: Kind = .http, host: String, port: Int, credentials: Credentials? = nil) {
        self.kind = kind
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.port = port
        self.credentials = credentials
    }

    /// Parses a proxy URL as curl reads one: `[SCHEME://][USER:PASSWORD@]HOST[:PORT][/]`.
    ///
    /// The scheme is `http` (the default), `socks5` or `socks5h` (both mean a SOCKS5 proxy that
    /// resolves the origin's name); the port defaults to 1080 (curl's default). The user and
    /// password are percent-decoded.
    /// - Throws: ``ProxySettings/ConfigurationError`` saying what is wrong; the message never
    ///   shows the password.
    public init(url text: String) throws(ProxySettings.ConfigurationError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let shown = Self.redacted(trimmed)
        guard !trimmed.isEmpty else { throw .init("the proxy URL is empty") }
        var rest = Substring(trimmed)
        var scheme = "http"
        if let range = rest.range(of: "://") {
            scheme = rest[..<range.lowerBound].lowercased()
            rest = rest[range.upperBound...]
        }
        switch scheme {
        case "http": kind = .http
        case "socks5", "socks5h": kind = .socks5
        case "https":
            throw .init("\"\(shown)\": https:// proxies (TLS to the proxy) are not supported; use an http:// or socks5:// proxy")
        default:
            throw .init("\"\(shown)\": the proxy scheme \(scheme) is not supported; use http:// or socks5://")
        }
        // The authority ends at the first "/" (a path, ignored as curl does), "?" or "#".
        if let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
            rest = rest[..<end]
        }
        credentials = nil
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let user: Substring
            let password: Substring
            if let colon = userInfo.firstIndex(of: ":") {
                user = userInfo[..<colon]
                password = userInfo[userInfo.index(after: colon)...]
            } else {
                user = userInfo
                password = ""
            }
            guard let decodedUser = String(user).removingPercentEncoding,
                  let decodedPassword = String(password).removingPercentEncoding else {
                throw .init("\"\(shown)\": the user name or password is not valid percent-encoding")
            }
            if kind == .socks5 {
                throw .init("\"\(shown)\": SOCKS5 proxies with a user name and password are not supported")
            }
            credentials = Credentials(user: decodedUser, password: decodedPassword)
        }
        var hostPart = rest
        var portText: Substring?
        if hostPart.hasPrefix("[") {
            guard let close = hostPart.firstIndex(of: "]") else { throw .init("\"\(shown)\": the IPv6 address has no closing ]") }
            let after = hostPart[hostPart.index(after: close)...]
            if after.hasPrefix(":") {
                portText = after.dropFirst()
            } else if !after.isEmpty {
                throw .init("\"\(shown)\": unexpected text after the IPv6 address")
            }
            hostPart = hostPart[hostPart.index(after: hostPart.startIndex)..<close]
        } else if let colon = hostPart.lastIndex(of: ":") {
            portText = hostPart[hostPart.index(after: colon)...]
            hostPart = hostPart[..<colon]
        }
        guard !hostPart.isEmpty, !hostPart.contains(where: { $0 == " " || $0 == "@" }) else {
            throw .init("\"\(shown)\": no proxy host name")
        }
        host = String(hostPart).lowercased()
        if let portText {
            guard let port = Int(portText), (1...65_535).contains(port) else {
                throw .init("\"\(shown)\": the port must be a number from 1 to 65535")
            }
            self.port = port
        } else {
            port = Self.defaultPort
        }
    }

    /// `SCHEME://HOST:PORT`, without the credentials.
    public var description: String {
        "\(kind.rawValue)://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    /// Same as ``description``: without the credentials.
    public var debugDescription: String { description }

    /// The `Proxy-Authorization` value for ``credentials`` (`Basic` with base64 of `user:password`).
    var proxyAuthorization: String? {
        guard kind == .http, let credentials else { return nil }
        return "Basic " + Data("\(credentials.user):\(credentials.password)".utf8).base64EncodedString()
    }

    /// Whether a connection to an origin of `scheme` through this proxy is a tunnel (`CONNECT`, or
    /// SOCKS5), rather than requests in absolute form to the proxy (plain `http` through an HTTP proxy).
    func tunnels(_ scheme: String) -> Bool {
        kind == .socks5 || scheme != "http"
    }

    /// `text` with any user information replaced by `***`.
    static func redacted(_ text: String) -> String {
        let start = text.range(of: "://")?.upperBound ?? text.startIndex
        let authorityEnd = text[start...].firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? text.endIndex
        guard let at = text[start..<authorityEnd].lastIndex(of: "@") else { return text }
        return String(text[..<start]) + "***" + String(text[at...])
    }

    /// The failure for a connection to this proxy that could not be made (`error`, from the
    /// connect): `unreachable`, naming the proxy (never its credentials).
    func unreachable(_ error: any Error) -> TransportFailure {
        if let failure = error as? TransportFailure, failure.kind == .cancelled { return failure }
        if Task.isCancelled || error is CancellationError { return TransportFailure(.cancelled, reason: "cancelled") }
        switch Self.errno(of: error) {
        case ECONNREFUSED?:
            return TransportFailure(.unreachable, reason: "the proxy \(self) refused the connection")
        case ENETUNREACH?, EHOSTUNREACH?:
            return TransportFailure(.unreachable, reason: "the proxy \(self) could not be reached (no route to host)")
        default:
            break
        }
        if case .connectTimeout = error as? ChannelError {
            return TransportFailure(.unreachable, reason: "the proxy \(self) did not accept the connection in time")
        }
        if error is NIOConnectionError || error is SocketAddressError {
            return TransportFailure(.unreachable, reason: "the proxy \(self) could not be reached (its address did not resolve or connect)")
        }
        let reason = TransportErrorClassifier.failure(for: error, requestSent: false)?.reason ?? String(describing: error)
        return TransportFailure(.unreachable, reason: "the proxy \(self) could not be reached (\(reason))")
    }

    /// The OS error number of a failed connect, if `error` carries one.
    private static func errno(of error: any Error) -> CInt? {
        if let error = error as? IOError { return error.errnoCode }
        if let error = error as? NIOConnectionError {
            for attempt in error.connectionErrors {
                if let code = (attempt.error as? IOError)?.errnoCode { return code }
            }
            if let dns = error.dnsAError ?? error.dnsAAAAError { return (dns as? IOError)?.errnoCode }
        }
        return nil
    }
}

/// A forward proxy answered, but would not pass the request on: it refused the tunnel (`CONNECT`
/// answered with a status other than `2xx`, such as `407 Proxy Authentication Required` or
/// `403`), or answered a request with `407`, or a SOCKS5 proxy refused the connection.
///
/// Transports throw it as it is (it is not a `TransportFailure`, so the retry middleware does not
/// retry it: the proxy would answer the same way); `APIClient` reports it as `APIError.transport`
/// with this failure as its `cause` and ``description`` as the reason.
public struct ForwardProxyFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The proxy (its description never shows credentials).
    public var proxy: ForwardProxy
    /// The origin the request was for, `HOST:PORT`.
    public var target: String
    /// The proxy's status code, when it answered with one (`nil` for SOCKS5, and for
    /// AsyncHTTPClient, which does not say, except for `407`).
    public var status: Int?
    /// What happened, in words.
    public var reason: String

    /// A failure of `proxy` for `target`.
    public init(proxy: ForwardProxy, target: String, status: Int?, reason: String) {
        self.proxy = proxy
        self.target = target
        self.status = status
        self.reason = reason
    }

    /// `the proxy http://HOST:PORT …`.
    public var description: String { "the proxy \(proxy) \(reason)" }

    /// A proxy's refusal with `status` (and its reason phrase) for `target`.
    static func refused(_ proxy: ForwardProxy, target: String, status: Int, phrase: String, tunnel: Bool) -> ForwardProxyFailure {
        let what = tunnel ? "refused the tunnel to \(target)" : "refused the request for \(target)"
        var reason = "\(what): \(status)\(phrase.isEmpty ? "" : " \(phrase)")"
        if status == 407 {
            reason += proxy.credentials == nil
                ? " (it asks for credentials: put them in the proxy URL, http://USER:PASSWORD@HOST:PORT)"
                : " (the credentials in the proxy URL were refused)"
        }
        return ForwardProxyFailure(proxy: proxy, target: target, status: status, reason: reason)
    }
}
