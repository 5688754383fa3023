/// A key press, decoded from the bytes a terminal in raw mode sends.
public enum Key: Equatable, Sendable {
    /// A printable character (any script; multi-byte UTF-8 is decoded).
    case character(Character)
    /// Return or Enter.
    case enter
    /// Escape on its own (not the start of a sequence).
    case escape
    /// Backspace (DEL or BS).
    case backspace
    /// Delete, forward.
    case delete
    /// Tab.
    case tab
    /// An arrow key.
    case up, down, left, right
    /// Home, End, Page Up and Page Down.
    case home, end, pageUp, pageDown
    /// Ctrl and a letter (`ctrl("c")` is Ctrl-C).
    case ctrl(Character)
}

/// Turns terminal input bytes into ``Key``s: UTF-8 text, control characters, and the CSI / SS3
/// sequences of arrow and editing keys. Incomplete input (a lone ESC, half a UTF-8 character,
/// half an escape sequence) is kept until more bytes arrive or ``flush()`` says none will.
public struct KeyParser {
    /// A parser with nothing pending.
    public init() {}

    private var pending: [UInt8] = []

    /// Feeds bytes; returns the keys they complete.
    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [Key] {
        pending.append(contentsOf: bytes)
        var keys: [Key] = []
        var index = 0
        while index < pending.count {
            guard let (key, length) = Self.parse(pending[index...]) else { break }
            if let key { keys.append(key) }
            index += length
        }
        pending.removeFirst(index)
        return keys
    }

    /// Whether bytes are waiting for the rest of a sequence.
    public var hasPending: Bool { !pending.isEmpty }

    /// No more bytes are coming soon: a waiting lone ESC is the Escape key; anything else
    /// incomplete is dropped.
    public mutating func flush() -> [Key] {
        defer { pending.removeAll() }
        return pending == [0x1B] ? [.escape] : []
    }

    /// One key from the front of `bytes` and how many bytes it used (`nil` key: bytes to
    /// ignore), or `nil` when more bytes are needed.
    private static func parse(_ bytes: ArraySlice<UInt8>) -> (Key?, Int)? {
        let start = bytes.startIndex
        let first = bytes[start]
        switch first {
        case 0x1B:
            guard bytes.count >= 2 else { return nil }
            let second = bytes[start + 1]
            if second == UInt8(ascii: "[") || second == UInt8(ascii: "O") {
                // CSI: parameters 0x30–0x3F, intermediates 0x20–0x2F, final 0x40–0x7E.
                var end = start + 2
                while end < bytes.endIndex, (0x20...0x3F).contains(bytes[end]) { end += 1 }
                guard end < bytes.endIndex else { return nil }
                let final = bytes[end]
                let parameters = String(decoding: bytes[(start + 2)..<end], as: UTF8.self)
                let length = end - start + 1
                switch final {
                case UInt8(ascii: "A"): return (.up, length)
                case UInt8(ascii: "B"): return (.down, length)
                case UInt8(ascii: "C"): return (.right, length)
                case UInt8(ascii: "D"): return (.left, length)
                case UInt8(ascii: "H"): return (.home, length)
                case UInt8(ascii: "F"): return (.end, length)
                case UInt8(ascii: "~"):
                    switch parameters {
                    case "1", "7": return (.home, length)
                    case "4", "8": return (.end, length)
                    case "3": return (.delete, length)
                    case "5": return (.pageUp, length)
                    case "6": return (.pageDown, length)
                    default: return (nil, length)
                    }
                default: return (nil, length)
                }
            }
            if second == 0x1B { return (.escape, 1) }
            // Alt+key: ignore the ESC, keep the key.
            return (nil, 1)
        case 0x0D, 0x0A: return (.enter, 1)
        case 0x7F, 0x08: return (.backspace, 1)
        case 0x09: return (.tab, 1)
        case 0x01...0x1A:
            return (.ctrl(Character(Unicode.Scalar(first + 0x60))), 1)
        case 0x00, 0x1C...0x1F: return (nil, 1)
        default:
            let length: Int
            switch first {
            case 0xC0...0xDF: length = 2
            case 0xE0...0xEF: length = 3
            case 0xF0...0xF7: length = 4
            case 0x80...0xBF, 0xF8...0xFF: return (nil, 1)
            default: length = 1
            }
            guard bytes.count >= length else { return nil }
            let text = String(decoding: bytes[start..<(start + length)], as: UTF8.self)
            guard let character = text.first, text.unicodeScalars.first != "\u{FFFD}" else { return (nil, length) }
            return (.character(character), length)
        }
    }
}
