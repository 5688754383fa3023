import Foundation
import FreshetSimulator

extension SplitMix64 {
    /// A number in `0..<n`; 0 when `n` is not positive.
    public mutating func below(_ n: Int) -> Int { n <= 0 ? 0 : Int(next() % UInt64(n)) }
}

/// Byte-level mutations of a seed input: what a broken proxy, a buggy server or an attacker sends.
public enum Mutator {
    /// Fragments that tend to break parsers: separators, quotes, escapes, signs, huge numbers,
    /// control characters, invalid UTF-8 and non-ASCII text.
    public static let dictionary: [[UInt8]] = [
        ",", ";", "=", "\"", "\\", "<", ">", " ", "\t", "\r\n", "\0", "-", "+", "0", "-1", "1.5", "99999999999999999999999",
        "9223372036854775808", "1e400", "-0", "null", "true", "[", "]", "{", "}", ":", "rel=", "max-age=", "GMT", "Sun,",
        "Nov", "%", "%00", "\u{FEFF}", "\u{0301}", "🦉", "스위프트", "&#x110000;", "&#xD800;", "&amp", "W/\"", "*",
    ].map { Array($0.utf8) } + [[0xFF], [0xC3, 0x28], [0xE2, 0x82], [0xF0, 0x9F, 0x98]]

    /// `input` changed in one to four places: bytes flipped, inserted, deleted, duplicated or
    /// swapped, a fragment of ``dictionary`` (or of `fragments`, a format's own) put in, a piece of
    /// another `corpus` entry spliced in, or the rest cut off.
    public static func mutate(_ input: [UInt8], corpus: [[UInt8]], fragments: [[UInt8]] = [],
                              random: inout SplitMix64) -> [UInt8] {
        let dictionary = fragments.isEmpty ? dictionary : dictionary + fragments
        var bytes = input
        for _ in 0..<(1 + random.below(4)) {
            let at = random.below(bytes.count + 1)
            switch random.below(9) {
            case 0:  // flip a byte
                if !bytes.isEmpty { bytes[random.below(bytes.count)] ^= UInt8(truncatingIfNeeded: 1 << random.below(8)) }
            case 1:  // random byte
                bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: at)
            case 2:  // delete a span
                if !bytes.isEmpty {
                    let start = random.below(bytes.count)
                    bytes.removeSubrange(start..<min(bytes.count, start + 1 + random.below(16)))
                }
            case 3:  // duplicate a span
                if !bytes.isEmpty {
                    let start = random.below(bytes.count)
                    let span = bytes[start..<min(bytes.count, start + 1 + random.below(32))]
                    bytes.insert(contentsOf: span, at: min(at, bytes.count))
                }
            case 4:  // a dictionary fragment
                bytes.insert(contentsOf: random.pick(dictionary), at: at)
            case 5:  // splice another corpus entry
                let other = random.pick(corpus)
                if !other.isEmpty {
                    let start = random.below(other.count)
                    bytes.insert(contentsOf: other[start..<min(other.count, start + 1 + random.below(64))], at: at)
                }
            case 6:  // truncate
                bytes = Array(bytes.prefix(at))
            case 7:  // a long run of one fragment
                let fragment = random.pick(dictionary)
                bytes.insert(contentsOf: Array(repeating: fragment, count: 50 + random.below(2000)).flatMap { $0 }, at: at)
            default:  // swap two bytes
                if bytes.count > 1 { bytes.swapAt(random.below(bytes.count), random.below(bytes.count)) }
            }
        }
        return bytes
    }

    /// How many mutated inputs a fuzz test tries: `FRESHET_FUZZ_ITERATIONS` when it is set (a
    /// longer hunt by hand), else `standard`.
    public static func iterations(_ standard: Int) -> Int {
        ProcessInfo.processInfo.environment["FRESHET_FUZZ_ITERATIONS"].flatMap(Int.init) ?? standard
    }

    /// The bytes as a header value would arrive as a Swift string (invalid UTF-8 repaired).
    public static func string(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
}
