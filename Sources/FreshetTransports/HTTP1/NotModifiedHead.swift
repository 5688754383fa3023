import Freshet
import HTTPTypes

/// A `304 Not Modified` head read from the bytes received, for ``HTTP1RawExchange``: an answer
/// without a body by its status, so its head is the whole answer. Only the plainest form is read
/// here — `HTTP/1.1 304`, a reason phrase of visible ASCII, each field on one line as
/// `name: value` with nothing but ASCII in the value and no whitespace before its CRLF, and no
/// `Content-Length` or `Transfer-Encoding`; anything else (an obs-fold, obs-text, a bare LF, a
/// framing field, a head past ``maxLength``) is NIO's decoder's to read, with its own rules and
/// limits. What is read here is what NIO's codec reads of the same bytes (a test holds the two
/// side by side on mutated answers).
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

    /// Reads the `304` head at the start of `bytes`, as far as they go: the first byte outside the
    /// plainest form makes it NIO's decoder's at once (which may refuse it at once: an answer it
    /// refuses must not wait here for bytes that never come), and only bytes that are so far the
    /// start of such a head wait for more.
    package static func read(_ bytes: UnsafeRawBufferPointer) -> Reading {
        let prefix = statusLine.utf8CodeUnitCount
        for offset in 0..<min(prefix, bytes.count) where bytes[offset] != statusLine.utf8Start[offset] { return .other }
        // What running out of bytes means: wait for more, unless the head may not grow any longer.
        let end = min(bytes.count, maxLength)
        let short: Reading = bytes.count < maxLength ? .incomplete : .other
        // The reason phrase, then the fields, each line ending in CRLF, then the empty line.
        var index = prefix
        while index < end, bytes[index].isPlainFieldTextByte { index += 1 }
        switch lineEnd(bytes, at: index, end: end) {
        case nil: return short
        case false?: return .other
        case true?: index += 2
        }
        var fields = HTTPFields()
        var keepAlive = true
        while true {
            guard index < end else { return short }
            if bytes[index] == cr {
                switch lineEnd(bytes, at: index, end: end) {
                case nil: return short
                case false?: return .other
                case true?: return .head(NotModifiedHead(fields: fields, keepAlive: keepAlive, length: index + 2))
                }
            }
            guard fields.count < maxFields else { return .other }
            let nameStart = index
            while index < end, bytes[index].isHTTPTokenByte { index += 1 }
            guard index < end else { return short }
            guard index > nameStart, bytes[index] == colon else { return .other }
            let nameEnd = index
            // A 304's body is empty by its status, but llhttp still judges these (an invalid or
            // repeated `Content-Length` fails the answer): theirs to judge, before their values come.
            let nameBytes = UnsafeRawBufferPointer(rebasing: bytes[nameStart..<nameEnd])
            if Self.spells(nameBytes, "content-length") || Self.spells(nameBytes, "transfer-encoding") { return .other }
            index += 1
            while index < end, bytes[index] == space || bytes[index] == tab { index += 1 }
            let valueStart = index
            while index < end, bytes[index].isPlainFieldTextByte { index += 1 }
            switch lineEnd(bytes, at: index, end: end) {
            case nil: return short
            case false?: return .other
            case true?: break
            }
            if index > valueStart, bytes[index - 1] == space || bytes[index - 1] == tab { return .other }
            let rawName = String(decoding: nameBytes, as: UTF8.self)
            let value = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[valueStart..<index]), as: UTF8.self)
            index += 2
            guard let name = HTTPField.Name.common(spelled: rawName) ?? HTTPField.Name(rawName) else { return .other }
            if name == .connection, value.split(separator: ",").contains(where: { $0.trimmingOWS().lowercased() == "close" }) {
                keepAlive = false
            }
            fields.append(HTTPField(name: name, value: value))
        }
    }

    /// Whether `name` is `lowercased`, in any case (`lowercased` is ASCII letters and `-`).
    private static func spells(_ name: UnsafeRawBufferPointer, _ lowercased: StaticString) -> Bool {
        guard name.count == lowercased.utf8CodeUnitCount else { return false }
        for offset in 0..<name.count where name[offset] | 0x20 != lowercased.utf8Start[offset] { return false }
        return true
    }

    /// Whether a CRLF starts at `index`: `nil` when the bytes before `end` do not tell yet.
    private static func lineEnd(_ bytes: UnsafeRawBufferPointer, at index: Int, end: Int) -> Bool? {
        guard index < end else { return nil }
        guard bytes[index] == cr else { return false }
        guard index + 1 < end else { return nil }
        return bytes[index + 1] == lf
    }
}
