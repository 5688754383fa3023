import NIOCore

extension ByteBuffer {
    /// An HTTP/1 message head as bytes: `startLine` (with its CRLF), then each (name, value) line,
    /// then the empty line. Sized first and copied in at once: a `ByteBuffer` write per piece costs
    /// NIO's checks each time (~200 instructions, some 50 pieces a head). Names and values must be
    /// valid already (as `HTTPField`s' are): nothing is checked here.
    package init(headStartLine startLine: String, lines: [(String, String)]) {
        var size = startLine.utf8.count + 2
        for (name, value) in lines { size += name.utf8.count + value.utf8.count + 4 }
        self = ByteBufferAllocator().buffer(capacity: size)
        writeWithUnsafeMutableBytes(minimumWritableBytes: size) { target in
            var at = 0
            func put(_ text: String) {
                var text = text
                text.withUTF8 { bytes in
                    guard let from = bytes.baseAddress, bytes.count > 0 else { return }
                    target.baseAddress!.advanced(by: at).copyMemory(from: from, byteCount: bytes.count)
                    at += bytes.count
                }
            }
            func put(_ byte: UInt8) {
                target[at] = byte
                at += 1
            }
            put(startLine)
            for (name, value) in lines {
                put(name)
                put(UInt8(ascii: ":"))
                put(UInt8(ascii: " "))
                put(value)
                put(UInt8(ascii: "\r"))
                put(UInt8(ascii: "\n"))
            }
            put(UInt8(ascii: "\r"))
            put(UInt8(ascii: "\n"))
            return at
        }
    }
}

extension UInt8 {
    /// Whether this byte is an RFC 9110 `tchar`, one of a field name's.
    @inlinable
    package var isHTTPTokenByte: Bool {
        switch self {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Whether this byte may stand in a field value (or a reason phrase) in the plainest form the
    /// raw readers take: visible ASCII, space or tab (no obs-text, no other control byte).
    @inlinable
    package var isPlainFieldTextByte: Bool {
        self == UInt8(ascii: "\t") || (self >= UInt8(ascii: " ") && self < 0x7F)
    }
}
