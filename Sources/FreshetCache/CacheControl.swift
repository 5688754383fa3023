import Foundation
import HTTPTypes
import RawStructuredFieldValues
import Freshet

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
        // Works on UTF-8 bytes: every delimiter is ASCII, so slicing between them is safe.
        var bytes = value.utf8[...]
        func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        func text(_ slice: Substring.UTF8View.SubSequence) -> String { String(Substring(slice)) }
        while !bytes.isEmpty {
            while let first = bytes.first, isSpace(first) || first == UInt8(ascii: ",") { bytes = bytes.dropFirst() }
            guard !bytes.isEmpty else { break }
            let nameEnd = bytes.firstIndex { $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: ",") } ?? bytes.endIndex
            let rawName = bytes[..<nameEnd]
            let name = text(rawName).trimmingOWS().lowercased()
            bytes = bytes[nameEnd...]
            var directiveValue: String?
            if bytes.first == UInt8(ascii: "=") {
                bytes = bytes.dropFirst()
                // RFC 9111 §5.2: `token [ "=" ( token / quoted-string ) ]`, no whitespace around
                // "=". `max-age =60` or `max-age= 60` has no valid value: like any invalid value
                // it counts as the most restrictive reading (for freshness, 0).
                // (A bare `private`/`no-cache` is the broadest reading; a bare `max-age` is 0.)
                if rawName.last.map(isSpace) == true || bytes.first.map(isSpace) == true {
                    while let first = bytes.first, isSpace(first) { bytes = bytes.dropFirst() }
                    if bytes.first == UInt8(ascii: "\"") {
                        // Skip the quoted string whole, so a comma inside it does not start a directive.
                        bytes = bytes.dropFirst()
                        while let byte = bytes.first, byte != UInt8(ascii: "\"") {
                            bytes = bytes.dropFirst()
                            if byte == UInt8(ascii: "\\"), !bytes.isEmpty { bytes = bytes.dropFirst() }
                        }
                        bytes = bytes.dropFirst()
                    }
                    bytes = bytes[(bytes.firstIndex(of: UInt8(ascii: ",")) ?? bytes.endIndex)...]
                    if !name.isEmpty, !name.utf8.contains(UInt8(ascii: " ")), directives[name] == nil { directives[name] = .some(nil) }
                    continue
                }
                if bytes.first == UInt8(ascii: "\"") {
                    bytes = bytes.dropFirst()
                    var unquoted: [UInt8] = []
                    while let byte = bytes.first, byte != UInt8(ascii: "\"") {
                        bytes = bytes.dropFirst()
                        if byte == UInt8(ascii: "\\"), let escaped = bytes.first {
                            unquoted.append(escaped)
                            bytes = bytes.dropFirst()
                        } else {
                            unquoted.append(byte)
                        }
                    }
                    bytes = bytes.dropFirst()  // the closing quote (if any)
                    // Anything after the closing quote up to the comma is junk; skip it.
                    bytes = bytes[(bytes.firstIndex(of: UInt8(ascii: ",")) ?? bytes.endIndex)...]
                    directiveValue = String(decoding: unquoted, as: UTF8.self)
                } else {
                    let end = bytes.firstIndex(of: UInt8(ascii: ",")) ?? bytes.endIndex
                    directiveValue = text(bytes[..<end]).trimmingOWS()
                    bytes = bytes[end...]
                }
            }
            if !name.isEmpty, !name.utf8.contains(UInt8(ascii: " ")), directives[name] == nil {
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
