import Foundation
import HTTPTypes
import RawStructuredFieldValues
import Freshet
import Synchronization

/// A parsed `Cache-Control` field (RFC 9111 §5.2), request or response.
///
/// Robust by design: directive names are case-insensitive; values may be tokens or quoted
/// strings (with `\` escapes, so `ext="max-age=0, no-store"` is one extension directive and not
/// two directives); every `Cache-Control` line is read, and when a directive appears twice the
/// first occurrence wins. Numbers that are not delta-seconds (`-1`, `1.5`, `abc`, empty) are
/// invalid, and an invalid freshness value counts as 0 (stale) — the most restrictive reading.
/// Values past 2³¹ are capped at 2³¹ (RFC 9111 §1.2.2).
public struct CacheControl: Sendable, Equatable {
    /// Directives by lowercased name; the value is `nil` for a bare directive (`no-store`).
    public private(set) var directives: [String: String?] = [:]

    /// The largest delta-seconds value: 2³¹ (RFC 9111 §1.2.2).
    public static let deltaSecondsCap = 2_147_483_648

    /// Parses every `Cache-Control` line of `fields` (and, for requests, `Pragma: no-cache`
    /// when there is no `Cache-Control`, RFC 9111 §5.4).
    public init(_ fields: HTTPFields) {
        // One pass over the fields, no array built: this runs for every request a cache sees.
        var pragmaNoCache = false
        var hasCacheControl = false
        for field in fields {
            if field.name == .cacheControl {
                hasCacheControl = true
                parse(field.value)
            } else if field.name == Self.pragma, field.value.lowercased().contains("no-cache") {
                pragmaNoCache = true
            }
        }
        if !hasCacheControl, pragmaNoCache {
            directives["no-cache"] = .some(nil)
        }
    }

    private static let pragma = HTTPField.Name("Pragma")!

    /// Reads a targeted cache-control field (RFC 9213, e.g. `CDN-Cache-Control`): a Structured
    /// Fields Dictionary (RFC 8941), every line of it. `nil` when the field is absent or is not a
    /// valid Dictionary (`max-age=10, &&&`, `MaX-aGe=10`, `max-age =10`): the whole field is then
    /// ignored (§2.1). A directive whose value has the wrong type (`max-age="10"`, `max-age=1.5`,
    /// `max-age=-1`) is ignored on its own; `?0` means the directive is absent.
    public init?(targeted fields: HTTPFields, field name: HTTPField.Name) {
        let lines = fields[values: name]
        guard !lines.isEmpty else { return nil }
        var parser = StructuredFieldValueParser(Array(lines.joined(separator: ", ").utf8))
        guard let dictionary = try? parser.parseDictionaryFieldValue() else { return nil }
        for (key, member) in dictionary {
            guard case .item(let item) = member else { continue }
            let counts = Self.secondsDirectives.contains(key)
            switch item.rfc9651BareItem {
            case .bool(true): directives[key] = counts ? nil : .some(nil)
            case .integer(let number) where number >= 0: directives[key] = .some(String(number))
            case .string(let text) where !counts, .token(let text) where !counts: directives[key] = .some(text)
            default: directives[key] = nil
            }
        }
    }

    /// Directives whose value is delta-seconds.
    private static let secondsDirectives: Set<String> = ["max-age", "s-maxage", "stale-while-revalidate", "stale-if-error"]

    /// Parses one field value.
    public init(parsing value: String) {
        parse(value)
    }

    private mutating func parse(_ value: String) {
        // The value parsed last, when this is a field's first line: a server sends the same
        // `Cache-Control` on every answer of a resource (each `304` of a revalidation repeats it),
        // and the directives of a value never change.
        let first = directives.isEmpty
        if first, let known = Self.lastParsed.withLock({ $0?.value == value ? $0?.directives : nil }) {
            directives = known
            return
        }
        var bytes = value
        // Works on the UTF-8 bytes in place (every delimiter is ASCII): a stored response's field
        // is parsed on each revalidation, and a request's on each request.
        bytes.withUTF8 { parse(bytes: $0) }
        if first, value.utf8.count <= Self.lastParsedLimit {
            let parsed = directives
            Self.lastParsed.withLock { $0 = (value, parsed) }
        }
    }

    /// The last value parsed as a field's first line, and its directives.
    private static let lastParsed = Mutex<(value: String, directives: [String: String?])?>(nil)
    /// The longest value kept in ``lastParsed``: a value longer than any server sends is not kept.
    private static let lastParsedLimit = 256

    private mutating func parse(bytes: UnsafeBufferPointer<UInt8>) {
        @inline(__always) func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        /// `bytes[range]` without leading and trailing spaces and tabs.
        func trimmed(_ range: Range<Int>) -> Range<Int> {
            var (start, end) = (range.lowerBound, range.upperBound)
            while start < end, isSpace(bytes[start]) { start += 1 }
            while start < end, isSpace(bytes[end - 1]) { end -= 1 }
            return start..<end
        }
        func text(_ range: Range<Int>) -> String { String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self) }
        /// A directive's name: trimmed and lowercased; `nil` when empty or with a space inside.
        func name(_ range: Range<Int>) -> String? {
            let range = trimmed(range)
            guard !range.isEmpty else { return nil }
            var ascii = true
            var upper = false
            for index in range {
                let byte = bytes[index]
                if byte == UInt8(ascii: " ") { return nil }
                if byte >= 0x80 { ascii = false }
                if byte >= UInt8(ascii: "A"), byte <= UInt8(ascii: "Z") { upper = true }
            }
            if !ascii { return text(range).lowercased() }
            guard upper else { return text(range) }
            return String(unsafeUninitializedCapacity: range.count) { buffer in
                for (offset, index) in range.enumerated() {
                    let byte = bytes[index]
                    buffer[offset] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
                }
                return range.count
            }
        }
        func nextComma(from start: Int) -> Int {
            var index = start
            while index < bytes.count, bytes[index] != UInt8(ascii: ",") { index += 1 }
            return index
        }
        if directives.isEmpty { directives.reserveCapacity(4) }
        var position = 0
        let end = bytes.count
        while position < end {
            while position < end, isSpace(bytes[position]) || bytes[position] == UInt8(ascii: ",") { position += 1 }
            guard position < end else { break }
            var nameEnd = position
            while nameEnd < end, bytes[nameEnd] != UInt8(ascii: "="), bytes[nameEnd] != UInt8(ascii: ",") { nameEnd += 1 }
            let rawName = position..<nameEnd
            position = nameEnd
            var directiveValue: String?
            if position < end, bytes[position] == UInt8(ascii: "=") {
                position += 1
                // RFC 9111 §5.2: `token [ "=" ( token / quoted-string ) ]`, no whitespace around
                // "=". `max-age =60` or `max-age= 60` has no valid value: like any invalid value
                // it counts as the most restrictive reading (for freshness, 0).
                // (A bare `private`/`no-cache` is the broadest reading; a bare `max-age` is 0.)
                if (!rawName.isEmpty && isSpace(bytes[nameEnd - 1])) || (position < end && isSpace(bytes[position])) {
                    while position < end, isSpace(bytes[position]) { position += 1 }
                    if position < end, bytes[position] == UInt8(ascii: "\"") {
                        // Skip the quoted string whole, so a comma inside it does not start a directive.
                        position += 1
                        while position < end, bytes[position] != UInt8(ascii: "\"") {
                            position += bytes[position] == UInt8(ascii: "\\") && position + 1 < end ? 2 : 1
                        }
                        position = min(position + 1, end)
                    }
                    position = nextComma(from: position)
                    if let name = name(rawName), directives[name] == nil { directives[name] = .some(nil) }
                    continue
                }
                if position < end, bytes[position] == UInt8(ascii: "\"") {
                    position += 1
                    var unquoted: [UInt8] = []
                    while position < end, bytes[position] != UInt8(ascii: "\"") {
                        if bytes[position] == UInt8(ascii: "\\"), position + 1 < end { position += 1 }
                        unquoted.append(bytes[position])
                        position += 1
                    }
                    // The closing quote (if any); anything after it up to the comma is junk.
                    position = nextComma(from: min(position + 1, end))
                    directiveValue = String(decoding: unquoted, as: UTF8.self)
                } else {
                    let valueEnd = nextComma(from: position)
                    directiveValue = text(trimmed(position..<valueEnd))
                    position = valueEnd
                }
            }
            if let name = name(rawName), directives[name] == nil {
                directives[name] = .some(directiveValue)
            }
        }
    }

    /// Whether the directive is present (with or without a value).
    public func has(_ name: String) -> Bool { directives[name] != nil }

    /// The directive's value, `nil` when absent or bare.
    public func value(_ name: String) -> String? { directives[name] ?? nil }

    /// A delta-seconds directive: `nil` when absent; 0 when invalid; capped at 2³¹.
    public func seconds(_ name: String) -> Int? {
        guard let entry = directives[name] else { return nil }
        guard let text = entry, !text.isEmpty, text.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }) else {
            return 0
        }
        guard text.count <= 10, let number = Int(text) else { return Self.deltaSecondsCap }
        return min(number, Self.deltaSecondsCap)
    }

    /// The field names of a qualified directive (`no-cache="Set-Cookie, X-Foo"`), lowercased;
    /// `nil` when the directive is absent or unqualified.
    public func fieldNames(_ name: String) -> [String]? {
        guard let text = value(name) else { return nil }
        return text.split(separator: ",").map { $0.trimmingOWS().lowercased() }.filter { !$0.isEmpty }
    }

    // MARK: Response directives

    /// `no-store`.
    public var noStore: Bool { has("no-store") }
    /// Unqualified `no-cache`: store, but revalidate before every use.
    public var noCache: Bool { has("no-cache") && fieldNames("no-cache") == nil }
    /// `private` without field names.
    public var isPrivate: Bool { has("private") && fieldNames("private") == nil }
    /// `public`.
    public var isPublic: Bool { has("public") }
    /// `must-revalidate`.
    public var mustRevalidate: Bool { has("must-revalidate") }
    /// `proxy-revalidate`.
    public var proxyRevalidate: Bool { has("proxy-revalidate") }
    /// `immutable` (RFC 8246).
    public var immutable: Bool { has("immutable") }
    /// `max-age`.
    public var maxAge: Int? { seconds("max-age") }
    /// `s-maxage`.
    public var sharedMaxAge: Int? { seconds("s-maxage") }
    /// `stale-while-revalidate` (RFC 5861).
    public var staleWhileRevalidate: Int? { seconds("stale-while-revalidate") }
    /// `stale-if-error` (RFC 5861).
    public var staleIfError: Int? { seconds("stale-if-error") }

    // MARK: Request directives

    /// `max-stale`: `.some(nil)` for "any staleness", `.some(n)` for at most n seconds.
    public var maxStale: Int?? {
        guard let entry = directives["max-stale"] else { return nil }
        return entry == nil ? .some(nil) : .some(seconds("max-stale"))
    }
    /// `min-fresh`.
    public var minFresh: Int? { seconds("min-fresh") }
    /// `only-if-cached`.
    public var onlyIfCached: Bool { has("only-if-cached") }
}
