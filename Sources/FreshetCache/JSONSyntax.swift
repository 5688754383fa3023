/// A one-pass check that bytes are JSON (RFC 8259, UTF-8), for the cache's question "does this
/// body declared JSON parse?" without building the value: `JSONSerialization` built every object
/// of every stored body (some 120k instructions for a 300-byte Hacker News item, a tenth of a cold
/// fan-out's CPU).
///
/// It answers `true` only where it is sure `JSONSerialization` would parse the bytes; anything it
/// is not sure of — a number that is long or has an exponent (which may not fit a `Double`),
/// nesting deeper than ``maxDepth``, a byte order mark, anything it finds wrong — it answers
/// `false`, and ``CacheMiddleware/isBrokenJSON(_:fields:)`` then asks `JSONSerialization`. So a
/// body is refused exactly as before; only the common case is cheaper.
enum JSONSyntax {
    /// The deepest nesting judged here (`JSONSerialization` refuses past 512).
    static let maxDepth = 256

    /// Whether `bytes` are surely one JSON value (a fragment allowed), with whitespace around it.
    static func isSurelyValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var scanner = Scanner(bytes: bytes)
        scanner.skipWhitespace()
        guard scanner.value(depth: 0) else { return false }
        scanner.skipWhitespace()
        return scanner.position == bytes.count
    }

    private struct Scanner {
        let bytes: UnsafeRawBufferPointer
        var position = 0

        init(bytes: UnsafeRawBufferPointer) {
            self.bytes = bytes
        }

        var current: UInt8? { position < bytes.count ? bytes[position] : nil }

        mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
                position += 1
            }
        }

        mutating func value(depth: Int) -> Bool {
            guard let byte = current else { return false }
            switch byte {
            case UInt8(ascii: "{"): return container(depth: depth + 1, isObject: true)
            case UInt8(ascii: "["): return container(depth: depth + 1, isObject: false)
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            default: return number()
            }
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard bytes.count - position >= count else { return false }
            for offset in 0..<count where bytes[position + offset] != word.utf8Start[offset] {
                return false
            }
            position += count
            return true
        }

        /// An object (`{"name": value, …}`) or an array (`[value, …]`).
        mutating func container(depth: Int, isObject: Bool) -> Bool {
            guard depth <= JSONSyntax.maxDepth else { return false }
            let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
            position += 1  // { or [
            skipWhitespace()
            if current == close {
                position += 1
                return true
            }
            while true {
                if isObject {
                    guard current == UInt8(ascii: "\""), string() else { return false }
                    skipWhitespace()
                    guard current == UInt8(ascii: ":") else { return false }
                    position += 1
                    skipWhitespace()
                }
                guard value(depth: depth) else { return false }
                skipWhitespace()
                if current == UInt8(ascii: ",") {
                    position += 1
                    skipWhitespace()
                } else if current == close {
                    position += 1
                    return true
                } else {
                    return false
                }
            }
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)?`, at most 15 characters: surely a `Double`
        /// (or an integer) as `JSONSerialization` reads it. An exponent is left to it.
        mutating func number() -> Bool {
            let start = position
            if current == UInt8(ascii: "-") { position += 1 }
            guard let first = current, isDigit(first) else { return false }
            position += 1
            if first != UInt8(ascii: "0") {
                while let byte = current, isDigit(byte) { position += 1 }
            }
            if current == UInt8(ascii: ".") {
                position += 1
                guard let byte = current, isDigit(byte) else { return false }
                while let byte = current, isDigit(byte) { position += 1 }
            }
            if let byte = current, byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") { return false }
            return position - start <= 15
        }

        func isDigit(_ byte: UInt8) -> Bool {
            byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
        }

        /// A string: no control characters, valid escapes (`\u` surrogates in pairs), valid UTF-8.
        mutating func string() -> Bool {
            position += 1  // "
            while let byte = current {
                switch byte {
                case UInt8(ascii: "\""):
                    position += 1
                    return true
                case UInt8(ascii: "\\"):
                    position += 1
                    guard escape() else { return false }
                case ..<0x20:
                    return false
                case ..<0x80:
                    position += 1
                default:
                    guard utf8Scalar() else { return false }
                }
            }
            return false
        }

        mutating func escape() -> Bool {
            guard let byte = current else { return false }
            position += 1
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                 UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                return true
            case UInt8(ascii: "u"):
                guard let unit = hex4() else { return false }
                switch unit {
                case 0xD800...0xDBFF:
                    // A high surrogate must be followed by an escaped low one.
                    guard bytes.count - position >= 2, bytes[position] == UInt8(ascii: "\\"),
                          bytes[position + 1] == UInt8(ascii: "u") else { return false }
                    position += 2
                    guard let low = hex4(), (0xDC00...0xDFFF).contains(low) else { return false }
                    return true
                case 0xDC00...0xDFFF:
                    return false
                default:
                    return true
                }
            default:
                return false
            }
        }

        mutating func hex4() -> UInt16? {
            guard bytes.count - position >= 4 else { return nil }
            var value: UInt16 = 0
            for _ in 0..<4 {
                let byte = bytes[position]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt16(digit)
                position += 1
            }
            return value
        }

        /// One multi-byte UTF-8 scalar: no overlong forms, no surrogates, nothing past U+10FFFF.
        mutating func utf8Scalar() -> Bool {
            let lead = bytes[position]
            let count: Int
            var scalar: UInt32
            switch lead {
            case 0xC2...0xDF: count = 2; scalar = UInt32(lead & 0x1F)
            case 0xE0...0xEF: count = 3; scalar = UInt32(lead & 0x0F)
            case 0xF0...0xF4: count = 4; scalar = UInt32(lead & 0x07)
            default: return false
            }
            guard bytes.count - position >= count else { return false }
            for offset in 1..<count {
                let byte = bytes[position + offset]
                guard byte & 0xC0 == 0x80 else { return false }
                scalar = scalar << 6 | UInt32(byte & 0x3F)
            }
            switch count {
            case 3: guard scalar >= 0x800, !(0xD800...0xDFFF).contains(scalar) else { return false }
            case 4: guard scalar >= 0x10000, scalar <= 0x10FFFF else { return false }
            default: break
            }
            position += count
            return true
        }
    }
}
