import Freshet
import HTTPTypes

/// A `304 Not Modified` head read from the bytes received, for ``HTTP1RawExchange``: an answer
/// without a body by its status, so its head is the whole answer. Only the plainest form is read
/// here — `HTTP/1.1 304`, a reason phrase of visible ASCII, each field on one line as
/// `name: value` with nothing but ASCII in the value and no whitespace before its CRLF; anything
/// else (an obs-fold, obs-text, a bare LF, a head past ``maxLength``) is NIO's decoder's to read,
/// with its own rules and limits.
package struct NotModifiedHead: Sendable {
    /// The fields, as received and in order.
    package var fields: HTTPFields
    /// The connection may carry another exchange: no `close` in `Connection`.
    package var keepAlive: Bool
    /// The head's length in bytes, its closing empty line included.
    package var length: Int

    /// The longest head read here.
    package static let maxLength = 16 * 1024
    /// The most fields read here.
    static let maxFields = 128

    /// What the start of some bytes is.
    package enum Reading: Sendable {
        /// A whole `304` head read here.
        case head(NotModifiedHead)
        /// The start of one, not whole yet.
        case incomplete
        /// Anything else: NIO's decoder reads it.
        case other
    }

    private static let cr: UInt8 = 13, lf: UInt8 = 10, space: UInt8 = 32, tab: UInt8 = 9, colon: UInt8 = 58
    private static let statusLine: StaticString = "HTTP/1.1 304 "

    /// Reads the `304` head at the start of `bytes`.
    package static func read(_ bytes: UnsafeRawBufferPointer) -> Reading {
        let prefix = statusLine.utf8CodeUnitCount
        for offset in 0..<min(prefix, bytes.count) where bytes[offset] != statusLine.utf8Start[offset] { return .other }
        guard let end = headEnd(bytes) else { return bytes.count < maxLength ? .incomplete : .other }
        // The reason phrase, then the fields, each line ending in CRLF, up to `end` (after the empty line).
        var index = prefix
        while index < end, bytes[index] == tab || (bytes[index] >= space && bytes[index] < 0x7F) { index += 1 }
        guard bytes[index] == cr, bytes[index + 1] == lf else { return .other }
        index += 2
        var fields = HTTPFields()
        var keepAlive = true
        while bytes[index] != cr {
            guard fields.count < maxFields else { return .other }
            let nameStart = index
            while bytes[index].isHTTPTokenByte { index += 1 }
            guard index > nameStart, bytes[index] == colon else { return .other }
            let nameEnd = index
            index += 1
            while bytes[index] == space || bytes[index] == tab { index += 1 }
            let valueStart = index
            while bytes[index] == tab || (bytes[index] >= space && bytes[index] < 0x7F) { index += 1 }
            guard bytes[index] == cr, bytes[index + 1] == lf else { return .other }
            if index > valueStart, bytes[index - 1] == space || bytes[index - 1] == tab { return .other }
            let rawName = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[nameStart..<nameEnd]), as: UTF8.self)
            let value = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[valueStart..<index]), as: UTF8.self)
            index += 2
            guard let name = HTTPField.Name.common(spelled: rawName) ?? HTTPField.Name(rawName) else { return .other }
            if name == .connection, value.split(separator: ",").contains(where: { $0.trimmingOWS().lowercased() == "close" }) {
                keepAlive = false
            }
            fields.append(HTTPField(name: name, value: value))
        }
        guard index + 2 == end, bytes[index + 1] == lf else { return .other }
        return .head(NotModifiedHead(fields: fields, keepAlive: keepAlive, length: end))
    }

    /// The offset just past the first CRLF CRLF within ``maxLength``, or `nil`.
    private static func headEnd(_ bytes: UnsafeRawBufferPointer) -> Int? {
        let limit = min(bytes.count, maxLength)
        guard limit >= 4 else { return nil }
        var index = 0
        while index + 3 < limit {
            if bytes[index + 3] != lf {
                index += bytes[index + 3] == cr ? 1 : 4
                continue
            }
            if bytes[index] == cr, bytes[index + 1] == lf, bytes[index + 2] == cr { return index + 4 }
            index += 1
        }
        return nil
    }
}
