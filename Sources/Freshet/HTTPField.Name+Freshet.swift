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
    /// `Last-Event-ID`: the last event ID an event stream's reconnection resumes after.
    public static let lastEventID = HTTPField.Name("Last-Event-ID")!
}

extension HTTPField.Name {
    /// The hop-by-hop fields (RFC 9110 §7.6.1), lowercased: they concern one connection, so a
    /// cache never stores them and a proxy never forwards them (nor the fields `Connection` lists).
    public static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
    ]

    /// Whether `name` (lowercased) is one of ``hopByHop``: asked of every field of every answer a
    /// cache stores or a proxy forwards, so it compares by length first instead of hashing (tests
    /// hold it alike to the set, through its callers).
    @inlinable
    package static func isHopByHop(_ name: String) -> Bool {
        switch name.utf8.count {
        case 2: name == "te"
        case 7: name == "trailer" || name == "upgrade"
        case 10: name == "connection" || name == "keep-alive"
        case 16: name == "proxy-connection"
        case 17: name == "transfer-encoding"
        default: false
        }
    }
}

extension HTTPField.Name {
    /// The name spelled exactly `name` when it is one an HTTP API commonly answers with, as a
    /// constant: `HTTPField.Name(_:)` checks every byte and lowercases the name into a new string
    /// (~500 instructions a field, every field of every answer a transport converts). `nil`: not
    /// one of those, or spelled otherwise (the caller makes it the usual way, keeping its spelling).
    package static func common(spelled name: String) -> HTTPField.Name? {
        switch name.utf8.count {
        case 3:
            if name == "Age" { return .age }
        case 4:
            if name == "Date" { return .date }
            if name == "ETag" { return .eTag }
            if name == "Vary" { return .vary }
            if name == "Link" { return .link }
        case 6:
            if name == "Server" { return .server }
        case 7:
            if name == "Expires" { return .expires }
        case 8:
            if name == "Location" { return .location }
        case 10:
            if name == "Connection" { return .connection }
            if name == "Set-Cookie" { return .setCookie }
        case 12:
            if name == "Content-Type" { return .contentType }
        case 13:
            if name == "Cache-Control" { return .cacheControl }
            if name == "Last-Modified" { return .lastModified }
            if name == "Accept-Ranges" { return .acceptRanges }
        case 14:
            if name == "Content-Length" { return .contentLength }
        case 16:
            if name == "Content-Encoding" { return .contentEncoding }
            if name == "X-RateLimit-Used" { return .xRateLimitUsed }
        case 17:
            if name == "Transfer-Encoding" { return .transferEncoding }
            if name == "X-RateLimit-Limit" { return .xRateLimitLimit }
            if name == "X-RateLimit-Reset" { return .xRateLimitReset }
        case 20:
            if name == "X-RateLimit-Resource" { return .xRateLimitResource }
        case 21:
            if name == "X-RateLimit-Remaining" { return .xRateLimitRemaining }
        default:
            break
        }
        return nil
    }
}
