import Crypto
import HTTPTypes

/// The credential a request carries (`Authorization`, which also carries Kakao's `KakaoAK` key,
/// and `Cookie`), known only by its SHA-256: the cache partitions by it, and the proxy labels
/// metrics and log lines with it. The credential itself is never kept.
public struct RequestCredential: Sendable, Hashable {
    /// The SHA-256 of the request's `Authorization` and `Cookie` values, in lowercase hex.
    public let hash: String

    /// The credential of a request with these fields; `nil` when it has neither `Authorization`
    /// nor `Cookie`.
    public init?(_ fields: HTTPFields) {
        let authorization = fields[values: .authorization]
        let cookie = fields[values: .cookie]
        guard !authorization.isEmpty || !cookie.isEmpty else { return nil }
        var hasher = SHA256()
        CacheKey.updateCredential(&hasher, authorization: authorization, cookie: cookie)
        hash = CacheKey.hex(hasher.finalize())
    }

    /// The first 12 hex digits of ``hash``: a label for metrics and logs, short enough to read,
    /// long enough that a team's tokens do not collide.
    public var label: String { String(hash.prefix(12)) }
}
