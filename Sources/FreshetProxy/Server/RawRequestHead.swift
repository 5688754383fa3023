import FreshetTransports
import HTTPTypes

/// A request head recognised in the bytes a connection read, before NIO's HTTP/1 decoder: the
/// raw hit path's way in (``RawHitHandler``).
///
/// It takes only the plainest requests and says `nil` to everything else, which then goes to
/// NIO's decoder as before: `GET` or `HEAD`, an origin-form target of visible ASCII without `#`,
/// `HTTP/1.1`, fields of token names and visible-ASCII values (spaces and tabs inside), lines
/// ended by CRLF, exactly one `Host`, the whole head in the bytes and at most ``maxLength`` of
/// them. No `Content-Length`, `Transfer-Encoding`, `Expect`, `Upgrade`, `Keep-Alive`,
/// `Proxy-Connection`, and no `Connection` but `Connection: keep-alive` (HTTP/1.1's default). So
/// the request has no body and its end is the empty line, for every reader: nothing here can be
/// framed two ways. Whatever it accepts, NIO's decoder accepts too, and the ``HTTPRequest`` is
/// the one `HTTP1ToHTTPServerCodec` would make of it (`http` scheme, the `Host` as authority and
/// out of the fields, values without surrounding whitespace) but for `Connection: keep-alive`,
/// which is dropped (a hop-by-hop field, never part of a lookup).
struct RawRequestHead {
    /// The request, as the HTTPTypes codec would hand it on.
    var request: HTTPRequest
    /// The head's length in bytes, its closing empty line included.
    var length: Int

    /// The longest head taken (longer ones go to the decoder and its own limits).
    static let maxLength = 8 * 1024
    /// The most fields taken.
    static let maxFields = 64

    private static let cr: UInt8 = 13, lf: UInt8 = 10, space: UInt8 = 32, tab: UInt8 = 9, colon: UInt8 = 58

    /// The request head at the start of `bytes`, or `nil` when it is not one taken here (or not
    /// whole yet).
    static func recognise(_ bytes: UnsafeRawBufferPointer) -> RawRequestHead? {
        let end = min(bytes.count, maxLength)
        var index: Int
        let method: HTTPRequest.Method
        if matches(bytes, at: 0, end: end, "GET ") {
            (method, index) = (.get, 4)
        } else if matches(bytes, at: 0, end: end, "HEAD ") {
            (method, index) = (.head, 5)
        } else {
            return nil
        }

        let targetStart = index
        guard index < end, bytes[index] == UInt8(ascii: "/") else { return nil }
        while index < end, bytes[index] != space {
            let byte = bytes[index]
            guard byte > space, byte < 0x7F, byte != UInt8(ascii: "#") else { return nil }
            index += 1
        }
        guard index < end else { return nil }
        let target = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[targetStart..<index]), as: UTF8.self)
        index += 1
        guard matches(bytes, at: index, end: end, "HTTP/1.1\r\n") else { return nil }
        index += 10

        var fields = HTTPFields()
        var authority: String?
        while true {
            guard index + 1 < end else { return nil }
            if bytes[index] == cr {
                guard bytes[index + 1] == lf else { return nil }
                index += 2
                break
            }
            guard fields.count < maxFields else { return nil }
            let nameStart = index
            while index < end, bytes[index].isHTTPTokenByte { index += 1 }
            guard index < end, index > nameStart, bytes[index] == colon else { return nil }
            let nameEnd = index
            index += 1
            while index < end, bytes[index] == space || bytes[index] == tab { index += 1 }
            let valueStart = index
            while index < end, bytes[index].isPlainFieldTextByte { index += 1 }
            // A value ends at CRLF and nothing else (a bare LF, a control byte, obs-text, or
            // whitespace before the CRLF: the decoder's business).
            guard index + 1 < end, bytes[index] == cr, bytes[index + 1] == lf else { return nil }
            if index > valueStart, bytes[index - 1] == space || bytes[index - 1] == tab { return nil }
            let rawName = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[nameStart..<nameEnd]), as: UTF8.self)
            let value = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[valueStart..<index]), as: UTF8.self)
            index += 2
            guard let name = HTTPField.Name(rawName) else { return nil }
            switch name {
            case .hostField:
                guard authority == nil else { return nil }
                authority = value
            case .connection:
                guard value.lowercased() == "keep-alive" else { return nil }
            case .contentLength, .transferEncoding, .expect, .upgrade, .keepAlive, .proxyConnection:
                // `Proxy-Connection` too: llhttp reads it as `Connection` (a `close` there ends
                // the connection for the decoder).
                return nil
            default:
                fields.append(HTTPField(name: name, value: value))
            }
        }
        guard let authority else { return nil }
        let request = HTTPRequest(method: method, scheme: "http", authority: authority, path: target, headerFields: fields)
        return RawRequestHead(request: request, length: index)
    }

    /// Whether `bytes` are whole request heads taken here, one after another, and nothing else:
    /// handed to the decoder, they leave it holding nothing.
    static func areWholeHeads(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var rest = bytes
        while !rest.isEmpty {
            guard let head = recognise(rest) else { return false }
            rest = UnsafeRawBufferPointer(rebasing: rest[head.length...])
        }
        return true
    }

    private static func matches(_ bytes: UnsafeRawBufferPointer, at index: Int, end: Int, _ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard index + count <= end else { return false }
        for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] { return false }
        return true
    }
}

extension HTTPField.Name {
    /// `Host`, read here into the request's authority as the HTTPTypes codec does (HTTPTypes
    /// marks its own `.host` unavailable).
    static let hostField = HTTPField.Name("Host")!
    /// `Keep-Alive` (RFC 2068), a hop-by-hop field.
    static let keepAlive = HTTPField.Name("Keep-Alive")!
    /// `Proxy-Connection`, an old clients' `Connection` that llhttp honours as one.
    static let proxyConnection = HTTPField.Name("Proxy-Connection")!
}
