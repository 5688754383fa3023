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
        var gzip: Bool?
        var star: Bool?
        for value in fields[values: .acceptEncoding] {
            for member in value.split(separator: ",") {
                let parts = member.split(separator: ";")
                guard let coding = parts.first?.trimmingOWS().lowercased(), !coding.isEmpty else { continue }
                var weight = 1.0
                for parameter in parts.dropFirst() {
                    let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingOWS().lowercased() }
                    if pair.count == 2, pair[0] == "q" { weight = Double(pair[1]) ?? 0 }
                }
                if coding == "gzip" || coding == "x-gzip" { gzip = weight > 0 } else if coding == "*" { star = weight > 0 }
            }
        }
        return gzip ?? star ?? false
    }
}
