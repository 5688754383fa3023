import Foundation
import Freshet
import HTTPTypes

/// Who a cache serves (RFC 9111 §1): one user, or many.
public enum CacheMode: Sendable, Equatable {
    /// A private cache (the client's own): may store `private` responses; ignores `s-maxage`.
    case `private`
    /// A shared cache (a proxy): honours `s-maxage` and `proxy-revalidate`, never stores
    /// `private` responses (nor fields named by `private="…"`), and stores responses to requests with
    /// `Authorization` or `Cookie` only when they say so (`public`, `s-maxage`,
    /// `must-revalidate`; RFC 9111 §3.5).
    case shared
}

/// Statuses cacheable by default, so heuristic freshness may apply (RFC 9110 §15.1).
let heuristicallyCacheableStatuses: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]

/// Statuses whose caching rules this cache implements, for `must-understand` (RFC 9111 §5.2.2.3):
/// the heuristically cacheable ones it stores, and the redirects it stores when told to.
let understoodStatuses: Set<Int> = heuristicallyCacheableStatuses.subtracting([206]).union([302, 303, 307])

/// The freshness of a stored response at one moment (RFC 9111 §4.2).
public struct Freshness: Sendable, Equatable {
    /// The freshness lifetime in seconds (§4.2.1).
    public var lifetime: Double
    /// The current age in seconds (§4.2.3).
    public var age: Double

    /// Fresh when the age has not reached the lifetime.
    public var isFresh: Bool { age < lifetime }
    /// Seconds past the lifetime (0 while fresh).
    public var staleness: Double { max(0, age - lifetime) }
    /// The `Age` field's value (RFC 9111 §5.1): whole seconds, capped like every delta-seconds value.
    public var ageSeconds: Int { Int(min(age, Double(CacheControl.deltaSecondsCap)).rounded(.down)) }

    /// Freshness from its two numbers.
    init(lifetime: Double, age: Double) {
        self.lifetime = lifetime
        self.age = age
    }

    /// Computes freshness for `stored` at `now`.
    /// - Parameters:
    ///   - stored: the stored response.
    ///   - mode: the cache's mode: `s-maxage` counts only in ``CacheMode/shared``.
    ///   - now: the current time, for the resident time and the age.
    ///   - lifetimeOverride: a caller's own lifetime, replacing what the response says.
    ///   - heuristicFraction: the share of `Date − Last-Modified` used when the response gives no
    ///     explicit lifetime (§4.2.2; 10% by default) and its status is cacheable by default or
    ///     it says `public` (§4.2.2 allows either).
    ///   - targeted: a targeted field's directives (RFC 9213, e.g. `CDN-Cache-Control`) that
    ///     replace `Cache-Control` and `Expires`; `nil` reads `Cache-Control`.
    public init(stored: CachedResponse, mode: CacheMode, now: Date, lifetimeOverride: Double? = nil,
                heuristicFraction: Double = 0.1, targeted: CacheControl? = nil) {
        self.init(stored: stored, mode: mode, now: now, lifetimeOverride: lifetimeOverride,
                  heuristicFraction: heuristicFraction, targeted: targeted, control: targeted ?? CacheControl(stored.headers))
    }

    /// The same, with the directives that apply (`targeted`, else `Cache-Control`'s) already parsed.
    init(stored: CachedResponse, mode: CacheMode, now: Date, lifetimeOverride: Double? = nil,
         heuristicFraction: Double = 0.1, targeted: CacheControl?, control: CacheControl) {
        let headers = stored.headers
        let dateValue = headers.combinedValue(.date).flatMap(HTTPDate.parse) ?? stored.responseTime
        if let lifetimeOverride {
            lifetime = lifetimeOverride
        } else if mode == .shared, let sharedMaxAge = control.sharedMaxAge {
            lifetime = Double(sharedMaxAge)
        } else if let maxAge = control.maxAge {
            lifetime = Double(maxAge)
        } else if targeted == nil, let expires = headers.combinedValue(.expires) {
            // An invalid Expires (e.g. "0") means already expired (§5.3).
            lifetime = HTTPDate.parse(expires).map { max(0, $0.timeIntervalSince(dateValue)) } ?? 0
        } else if heuristicallyCacheableStatuses.contains(stored.status) || control.isPublic,
                  let lastModified = headers.combinedValue(.lastModified).flatMap(HTTPDate.parse) {
            lifetime = max(0, dateValue.timeIntervalSince(lastModified)) * heuristicFraction
        } else {
            lifetime = 0
        }
        // Current age (§4.2.3). Of a list (`Age: 7200, 0`, or two lines) the first member counts,
        // without parameters; an Age that is not delta-seconds is ignored.
        let ageValue = headers.combinedValue(.age).flatMap { text -> Double? in
            let first = text.prefix { $0 != "," && $0 != ";" }
            let trimmed = first.trimmingOWS()
            guard !trimmed.isEmpty, trimmed.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }) else { return nil }
            return trimmed.count > 10 ? Double(CacheControl.deltaSecondsCap) : Double(trimmed)
        } ?? 0
        let apparentAge = max(0, stored.responseTime.timeIntervalSince(dateValue))
        let responseDelay = max(0, stored.responseTime.timeIntervalSince(stored.requestTime))
        let correctedAgeValue = ageValue + responseDelay
        let correctedInitialAge = max(apparentAge, correctedAgeValue)
        let residentTime = max(0, now.timeIntervalSince(stored.responseTime))
        age = correctedInitialAge + residentTime
    }
}
