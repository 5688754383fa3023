import Foundation
import HTTPTypes

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
        for line in fields[values: .cacheControl] {
            parse(line)
        }
        if fields[.cacheControl] == nil,
           fields[values: HTTPField.Name("Pragma")!].contains(where: { $0.lowercased().contains("no-cache") }) {
            directives["no-cache"] = .some(nil)
        }
    }

    /// Parses one field value.
    public init(parsing value: String) {
        parse(value)
    }

    private mutating func parse(_ value: String) {
        let characters = Array(value.unicodeScalars)
        var index = 0
        func skipSpace() {
            while index < characters.count, characters[index] == " " || characters[index] == "\t" { index += 1 }
        }
        while index < characters.count {
            skipSpace()
            var name = ""
            while index < characters.count, characters[index] != "=", characters[index] != "," {
                name.unicodeScalars.append(characters[index])
                index += 1
            }
            name = name.trimmingCharacters(in: .whitespaces).lowercased()
            var directiveValue: String?
            if index < characters.count, characters[index] == "=" {
                index += 1
                skipSpace()
                var text = ""
                if index < characters.count, characters[index] == "\"" {
                    index += 1
                    while index < characters.count, characters[index] != "\"" {
                        if characters[index] == "\\", index + 1 < characters.count { index += 1 }
                        text.unicodeScalars.append(characters[index])
                        index += 1
                    }
                    index += 1  // closing quote (or past the end)
                    // Anything after the closing quote up to the comma is junk; skip it.
                    while index < characters.count, characters[index] != "," { index += 1 }
                } else {
                    while index < characters.count, characters[index] != "," {
                        text.unicodeScalars.append(characters[index])
                        index += 1
                    }
                    text = text.trimmingCharacters(in: .whitespaces)
                }
                directiveValue = text
            }
            if index < characters.count, characters[index] == "," { index += 1 }
            if !name.isEmpty, !name.contains(" "), directives[name] == nil {
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
        return text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
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
