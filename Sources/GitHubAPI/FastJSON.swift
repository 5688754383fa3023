import Foundation

/// A strict, allocation-light JSON reader producing ``JSONValue`` trees, used to decode events
/// without `JSONDecoder` (whose `JSONValue` decoding probes every value with failing `try?`s).
///
/// It only ever answers for input that `JSONDecoder` reads the same way: anything unusual — a
/// number with a fraction or exponent, `-0`, an integer beyond `Int`, a duplicate key, an escape
/// it does not know, a lone surrogate, invalid UTF-8, a control character in a string, trailing
/// bytes — makes it return `nil`, and the caller falls back to `JSONDecoder` (which then gives
/// the same value, or the error to report).
enum FastJSON {
    /// The JSON document in `data`, or `nil` when the fast reader does not vouch for it.
    static func parse(_ data: Data) -> JSONValue? {
        data.withUnsafeBytes { raw -> JSONValue? in
            var reader = Reader(bytes: raw.bindMemory(to: UInt8.self))
            guard let value = reader.value(depth: 0) else { return nil }
            reader.skipWhitespace()
            return reader.index == reader.bytes.count ? value : nil
        }
    }

    /// Calls `body` with each element of the top-level array in `data`, parsed; `nil` when the
    /// document is not an array the fast reader vouches for, or when `body` returns `false`.
    static func forEachElement(_ data: Data, _ body: (JSONValue) -> Bool) -> Bool {
        data.withUnsafeBytes { raw -> Bool in
            var reader = Reader(bytes: raw.bindMemory(to: UInt8.self))
            reader.skipWhitespace()
            guard reader.consume(UInt8(ascii: "[")) else { return false }
            reader.skipWhitespace()
            if !reader.consume(UInt8(ascii: "]")) {
                while true {
                    guard let element = reader.value(depth: 1), body(element) else { return false }
                    reader.skipWhitespace()
                    if reader.consume(UInt8(ascii: ",")) { continue }
                    guard reader.consume(UInt8(ascii: "]")) else { return false }
                    break
                }
            }
            reader.skipWhitespace()
            return reader.index == reader.bytes.count
        }
    }

    /// Deeper documents are left to `JSONDecoder` (which has its own limit).
    static let maxDepth = 256

    struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
        }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func consume(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func literal(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard bytes.count - index >= count else { return false }
            let start = text.utf8Start
            for offset in 0..<count where bytes[index + offset] != start[offset] { return false }
            index += count
            return true
        }

        mutating func value(depth: Int) -> JSONValue? {
            skipWhitespace()
            guard index < bytes.count, depth < FastJSON.maxDepth else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                return object(depth: depth + 1)
            case UInt8(ascii: "["):
                index += 1
                return array(depth: depth + 1)
            case UInt8(ascii: "\""):
                index += 1
                return string().map(JSONValue.string)
            case UInt8(ascii: "t"):
                return literal("true") ? .bool(true) : nil
            case UInt8(ascii: "f"):
                return literal("false") ? .bool(false) : nil
            case UInt8(ascii: "n"):
                return literal("null") ? .null : nil
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return integer().map(JSONValue.int)
            default:
                return nil
            }
        }

        mutating func object(depth: Int) -> JSONValue? {
            var members: [String: JSONValue] = [:]
            skipWhitespace()
            if consume(UInt8(ascii: "}")) { return .object(members) }
            while true {
                skipWhitespace()
                guard consume(UInt8(ascii: "\"")), let key = string() else { return nil }
                skipWhitespace()
                guard consume(UInt8(ascii: ":")), let member = value(depth: depth) else { return nil }
                // A repeated key: which one JSONDecoder keeps is its business.
                guard members.updateValue(member, forKey: key) == nil else { return nil }
                skipWhitespace()
                if consume(UInt8(ascii: ",")) { continue }
                return consume(UInt8(ascii: "}")) ? .object(members) : nil
            }
        }

        mutating func array(depth: Int) -> JSONValue? {
            var elements: [JSONValue] = []
            skipWhitespace()
            if consume(UInt8(ascii: "]")) { return .array(elements) }
            while true {
                guard let element = value(depth: depth) else { return nil }
                elements.append(element)
                skipWhitespace()
                if consume(UInt8(ascii: ",")) { continue }
                return consume(UInt8(ascii: "]")) ? .array(elements) : nil
            }
        }

        /// An integer without fraction or exponent that fits in `Int`, not `-0` and without
        /// leading zeros; anything else is `nil` (left to `JSONDecoder`).
        mutating func integer() -> Int? {
            let negative = consume(UInt8(ascii: "-"))
            let start = index
            var magnitude: UInt64 = 0
            while index < bytes.count, case let byte = bytes[index], byte >= 0x30, byte <= 0x39 {
                let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - 0x30))
                guard !overflow1, !overflow2 else { return nil }
                magnitude = sum
                index += 1
            }
            let digits = index - start
            guard digits > 0, digits == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
            if index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return nil
                default: break
                }
            }
            if negative {
                guard magnitude != 0, magnitude <= UInt64(Int.max) + 1 else { return nil }
                return magnitude == UInt64(Int.max) + 1 ? Int.min : -Int(magnitude)
            }
            guard magnitude <= UInt64(Int.max) else { return nil }
            return Int(magnitude)
        }

        /// The rest of a string whose opening quote was consumed.
        mutating func string() -> String? {
            let start = index
            var ascii = true
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                    index += 1
                    if ascii { return String(decoding: slice, as: UTF8.self) }
                    return String(validating: slice, as: UTF8.self)
                }
                if byte == UInt8(ascii: "\\") {
                    index = start
                    return escapedString()
                }
                if byte < 0x20 { return nil }
                if byte >= 0x80 { ascii = false }
                index += 1
            }
            return nil
        }

        /// A string with escapes, from its first character.
        private mutating func escapedString() -> String? {
            var utf8: [UInt8] = []
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return utf8.withUnsafeBufferPointer { String(validating: $0, as: UTF8.self) }
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { return nil }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
                    case UInt8(ascii: "b"): utf8.append(0x08)
                    case UInt8(ascii: "f"): utf8.append(0x0C)
                    case UInt8(ascii: "n"): utf8.append(0x0A)
                    case UInt8(ascii: "r"): utf8.append(0x0D)
                    case UInt8(ascii: "t"): utf8.append(0x09)
                    case UInt8(ascii: "u"):
                        guard let unit = hex4() else { return nil }
                        let scalar: Unicode.Scalar?
                        if (0xD800..<0xDC00).contains(unit) {
                            guard literal("\\u"), let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                            scalar = Unicode.Scalar(0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00))
                        } else {
                            scalar = Unicode.Scalar(unit)
                        }
                        // A lone surrogate, or NUL (kept out to stay clear of C-string edge cases).
                        guard let scalar, scalar.value != 0 else { return nil }
                        utf8.append(contentsOf: UTF8.encode(scalar)!)
                    default:
                        return nil
                    }
                default:
                    if byte < 0x20 { return nil }
                    utf8.append(byte)
                }
            }
            return nil
        }

        private mutating func hex4() -> UInt16? {
            guard bytes.count - index >= 4 else { return nil }
            var value: UInt16 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt16(digit)
                index += 1
            }
            return value
        }
    }
}
