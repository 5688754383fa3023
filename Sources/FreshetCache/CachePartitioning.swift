import Foundation
import Freshet
import HTTPTypes

/// How a shared cache treats requests that carry a credential (`Authorization`, `Cookie`).
public enum CachePartitioning: Sendable, Equatable {
    /// RFC 9111's shared cache: one partition, keyed on the URL. A response to a request with a
    /// credential is stored only when it says it may be shared (`public`, `s-maxage`,
    /// `must-revalidate`; §3.5), never when it is `private`.
    case none
    /// A partition per credential beside the shared one (ghproxy's model for GitHub). A request
    /// with a credential is looked up in its credential's partition first, then in the shared
    /// one. Its answer is stored in the shared partition when the shared rules allow (`public`
    /// answers stay shared by all), else in its credential's partition, where the cache follows a
    /// private cache's rules: `private` answers are stored, `s-maxage` and `proxy-revalidate`
    /// do not apply. An answer stored for one credential never answers another credential or a
    /// request without one. Keys hold a SHA-256 of the credential, never the credential.
    case credential
}

/// Statuses on which a cache serves its stored response, stale, instead of the origin's answer
/// (a proxy's `--serve-stale`), where the stored response allows it.
public struct StaleStatuses: OptionSet, Sendable, Hashable {
    public let rawValue: Int

    /// Creates a set from its raw value.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Any `5xx`.
    public static let serverError = StaleStatuses(rawValue: 1 << 0)
    /// `429 Too Many Requests`.
    public static let tooManyRequests = StaleStatuses(rawValue: 1 << 1)
    /// A `403` or `429` saying a rate limit was hit: `X-RateLimit-Remaining: 0`, or a body that
    /// speaks of a primary or secondary rate limit (GitHub's "API rate limit exceeded", "You
    /// have exceeded a secondary rate limit").
    public static let rateLimited = StaleStatuses(rawValue: 1 << 2)

    /// The most of a `403`/`429` body read to tell whether it speaks of a rate limit.
    static let bodyPeek = 16 * 1024

    /// Whether `response` (with up to ``bodyPeek`` bytes of its body) is one of these statuses.
    func contains(_ response: HTTPResponse, body: Data) -> Bool {
        let code = response.status.code
        if contains(.serverError), (500..<600).contains(code) { return true }
        if contains(.tooManyRequests), code == 429 { return true }
        guard contains(.rateLimited), code == 403 || code == 429 else { return false }
        if response.headerFields[HTTPField.Name("X-RateLimit-Remaining")!]?.trimmingOWS() == "0" { return true }
        let text = String(decoding: body.prefix(Self.bodyPeek), as: UTF8.self).lowercased()
        return text.contains("rate limit")
    }

    /// Whether the body must be read to decide (``rateLimited`` on a `403` or `429`).
    func needsBody(_ response: HTTPResponse) -> Bool {
        contains(.rateLimited) && (response.status.code == 403 || response.status.code == 429)
    }
}

/// Where the answers to a request may be kept: a primary key, and the rules its entries follow
/// (a credential's partition follows a private cache's).
struct Partition: Sendable, Equatable {
    var key: String
    var mode: CacheMode
}

/// What a request's `Accept-Encoding` says about gzip.
package enum AcceptEncoding {
    /// Whether `Accept-Encoding` accepts gzip (RFC 9110 §12.5.3): `gzip`, `x-gzip` or `*` with a
    /// weight above 0, unless gzip itself is given weight 0. No field: not accepted (a client
    /// that sends none gets identity, as every server does in practice).
    package static func acceptsGzip(_ fields: HTTPFields) -> Bool {
        // Read on the UTF-8 bytes (every delimiter is ASCII): split by `Character`, this was
        // ~9,000 instructions for `br, gzip`, on every request a proxy forwards.
        var gzip: Bool?
        var star: Bool?
        for value in fields[values: .acceptEncoding] {
            var value = value
            value.withUTF8 { bytes in
                var start = 0
                while start < bytes.count {
                    var end = start
                    while end < bytes.count, bytes[end] != UInt8(ascii: ",") { end += 1 }
                    switch member(bytes, start..<end) {
                    case (.gzip, let weight): gzip = weight > 0
                    case (.star, let weight): star = weight > 0
                    case (.other, _): break
                    }
                    start = end + 1
                }
            }
        }
        return gzip ?? star ?? false
    }

    private enum Coding { case gzip, star, other }

    /// The coding of the member `bytes[range]` (`coding *( OWS ";" OWS parameter )`) and its
    /// weight (`q`, 1 when absent, 0 when not a number).
    private static func member(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> (Coding, Double) {
        var parameters = range.upperBound
        for index in range where bytes[index] == UInt8(ascii: ";") {
            parameters = index
            break
        }
        let coding = trimmed(bytes, range.lowerBound..<parameters)
        let kind: Coding = equals(bytes, coding, "gzip") || equals(bytes, coding, "x-gzip") ? .gzip
            : equals(bytes, coding, "*") ? .star : .other
        guard kind != .other else { return (.other, 0) }
        var weight = 1.0
        var start = parameters + 1
        while start < range.upperBound {
            var end = start
            while end < range.upperBound, bytes[end] != UInt8(ascii: ";") { end += 1 }
            if let equal = (start..<end).first(where: { bytes[$0] == UInt8(ascii: "=") }),
               equals(bytes, trimmed(bytes, start..<equal), "q") {
                // An empty value is no weight at all; any other that is not a number is 0.
                let number = trimmed(bytes, (equal + 1)..<end)
                if !number.isEmpty {
                    weight = Double(String(decoding: UnsafeBufferPointer(rebasing: bytes[number]), as: UTF8.self)) ?? 0
                }
            }
            start = end + 1
        }
        return (kind, weight)
    }

    /// `range` without leading and trailing spaces and tabs.
    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Range<Int> {
        var (start, end) = (range.lowerBound, range.upperBound)
        while start < end, bytes[start] == UInt8(ascii: " ") || bytes[start] == UInt8(ascii: "\t") { start += 1 }
        while start < end, bytes[end - 1] == UInt8(ascii: " ") || bytes[end - 1] == UInt8(ascii: "\t") { end -= 1 }
        return start..<end
    }

    /// Whether `bytes[range]` is `lowercase` (ASCII), ignoring case.
    private static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ lowercase: StaticString) -> Bool {
        guard range.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        for (offset, index) in range.enumerated() {
            let byte = bytes[index]
            let folded = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            if folded != expected[offset] { return false }
        }
        return true
    }
}
