import Foundation
import Freshet
import HTTPTypes

/// The rules of RFC 9111 a cache follows, as functions of their inputs: whether a stored response
/// may be reused, whether a response may be stored and which of its fields, how a stored response
/// is updated from a `304`, the conditional request that validates it, and when it may be served
/// stale. No I/O and no clock: ``CacheMiddleware`` reads and writes the store, talks to the
/// server and passes the time in; this type decides.
///
/// What a stored response says about its own reuse is worked out once per stored response (a memo
/// keyed by ``CachedResponse/Version``): the decisions stay pure, the hit path stays cheap.
struct CachePolicy: Sendable {
    /// The behaviour switches (mode, heuristics, targeted fields, the caller's lifetime override,
    /// serving stale on failure).
    var options: CacheMiddleware.Options
    /// Memoized facts of stored responses.
    let memo: StoredFacts

    /// Fields never stored: the hop-by-hop fields (``Freshet/HTTPField/Name/hopByHop``), and the
    /// proxy credentials fields.
    static let unstoredFields: Set<String> = HTTPField.Name.hopByHop.union(["proxy-authenticate", "proxy-authorization"])

    /// Whether `name` (lowercased) is one of ``unstoredFields``: asked of every field of every
    /// answer stored or freshened, so the names are compared by length first instead of hashed
    /// (a test holds the two alike).
    static func isUnstored(_ name: String) -> Bool {
        switch name.utf8.count {
        case 18: name == "proxy-authenticate"
        case 19: name == "proxy-authorization"
        default: HTTPField.Name.isHopByHop(name)
        }
    }

    // MARK: - Selecting a stored response (§4.1)

    /// The variant among `variants` that `request` selects (RFC 9111 §4.1), if any.
    /// - Parameter normalizingEncoding: `Accept-Encoding` is keyed as gzip or identity (see
    ///   ``CacheKey/variant(varyNames:request:normalizingEncoding:)``).
    static func selectedVariant(_ variants: [CachedResponse], request: HTTPRequest,
                                normalizingEncoding: Bool = false) -> CachedResponse? {
        variants.first { candidate in
            let names = CacheKey.varyNames(candidate.headers)
            return names.isEmpty ? candidate.variant.isEmpty
                : names != ["*"] && CacheKey.variant(varyNames: names, request: request.headerFields,
                                                     normalizingEncoding: normalizingEncoding) == candidate.variant
        }
    }

    /// What `stored` answers to `request`: itself, or for a `Range` request the bytes asked for
    /// (a `206`), or itself whole when `If-Range` does not match; `nil` when it cannot answer.
    static func servable(_ stored: CachedResponse, rangeValue: String?, request: HTTPRequest) -> CachedResponse? {
        guard let rangeValue else { return stored }
        switch rangeAnswer(stored, rangeValue: rangeValue, request: request.headerFields) {
        case .partial(let answer): return answer
        case .whole: return stored
        case .forward: return nil
        }
    }

    // MARK: - Reuse (§4)

    /// How a stored response may answer: as it is, stale because the request allows it, or only
    /// after validation.
    enum Reuse { case fresh, staleAllowed, mustValidate }

    /// - Parameter control: `stored`'s `Cache-Control` directives when they were parsed already.
    func freshness(of stored: CachedResponse, url: URL, now: Date, control: CacheControl? = nil) -> Freshness {
        freshness(of: stored, facts: facts(of: stored, control: control), override: lifetimeOverride(for: url), now: now)
    }

    /// The freshness of `stored`, whose ``facts(of:control:)`` are `facts`, under the lifetime
    /// `override` (``lifetimeOverride(for:)``) if any.
    func freshness(of stored: CachedResponse, facts: StoredFacts.Facts, override: Double?, now: Date) -> Freshness {
        Freshness(lifetime: override ?? facts.lifetime,
                  age: facts.initialAge + max(0, now.timeIntervalSince(stored.responseTime)))
    }

    /// The caller's lifetime for `url` (``Options/lifetimeOverride``), which applies in private mode only.
    func lifetimeOverride(for url: URL) -> Double? {
        options.mode == .private ? options.lifetimeOverride?(url) : nil
    }

    /// `stored` updated by a `304` with `fields` (``updated(_:with:requestTime:responseTime:)``),
    /// and its freshness at `now`.
    func revalidated(_ stored: CachedResponse, notModified fields: HTTPFields, requestTime: Date, responseTime: Date,
                     url: URL, now: Date) -> (response: CachedResponse, freshness: Freshness) {
        let (updated, control) = Self.updatedWithControl(stored, with: fields, requestTime: requestTime,
                                                         responseTime: responseTime)
        return (updated, freshness(of: updated, url: url, now: now, control: control))
    }

    /// What a stored response says about its own reuse, worked out once per stored response
    /// (parsing its fields on every hit was most of a proxy hit's time).
    /// - Parameter control: `stored`'s `Cache-Control` directives when they were parsed already.
    func facts(of stored: CachedResponse, control parsed: CacheControl? = nil) -> StoredFacts.Facts {
        memo.facts(of: stored) { computedFacts(of: stored, control: parsed) }
    }

    /// ``facts(of:control:)`` worked out, not looked up in the memo nor kept there.
    func computedFacts(of stored: CachedResponse, control parsed: CacheControl? = nil) -> StoredFacts.Facts {
        let targeted = targetedControl(stored.headers)
        let control = targeted ?? parsed ?? CacheControl(stored.headers)
        // The age it had when it arrived (§4.2.3): the current age with no resident time.
        let initial = Freshness(stored: stored, mode: options.mode, now: stored.responseTime,
                                heuristicFraction: options.heuristicFraction, targeted: targeted, control: control)
        return .init(control: control, lifetime: initial.lifetime, initialAge: initial.age)
    }

    /// The response directives of a stored response (see ``responseControl(_:)``), memoized.
    func storedControl(_ stored: CachedResponse) -> CacheControl {
        facts(of: stored).control
    }

    /// The directives of the first of ``Options/targetedFields`` present in `fields`, if any.
    func targetedControl(_ fields: HTTPFields) -> CacheControl? {
        // Most responses carry none: one pass that compares a name only when its length matches
        // (a lookup per targeted name compares every field's name, ~800 instructions a lookup).
        let targeted = options.targetedFields
        guard !targeted.isEmpty, fields.contains(where: { field in
            let length = field.name.canonicalName.utf8.count
            return targeted.contains { $0.canonicalName.utf8.count == length && $0 == field.name }
        }) else { return nil }
        for name in targeted {
            if let control = CacheControl(targeted: fields, field: name), !control.directives.isEmpty { return control }
        }
        return nil
    }

    /// The response directives this cache obeys: a targeted field's when one is present, else
    /// `Cache-Control`'s.
    func responseControl(_ fields: HTTPFields) -> CacheControl {
        targetedControl(fields) ?? CacheControl(fields)
    }

    /// Whether ``Options/lifetimeOverride`` decides the freshness of `url`. Then the caller's
    /// policy replaces the server's reuse directives too (`no-cache`, `must-revalidate`), which
    /// APIs without useful freshness send (Firebase, and so Hacker News, sends `no-cache`).
    func overrides(_ url: URL) -> Bool {
        lifetimeOverride(for: url) != nil
    }

    /// Whether `stored` may be used without contacting the server.
    /// - Parameters:
    ///   - overridden: the caller's lifetime override applies (see ``overrides(_:)``).
    ///   - control: `stored`'s directives (``storedControl(_:)``) when they are at hand.
    func reuse(_ stored: CachedResponse, freshness: Freshness, request: CacheControl, overridden: Bool = false,
               control: CacheControl? = nil) -> Reuse {
        let response = control ?? storedControl(stored)
        if (response.noCache && !overridden) || request.noCache { return .mustValidate }
        // `max-age=0` (a reload) always validates, whatever sub-second age the response has.
        if let maxAge = request.maxAge, maxAge == 0 || freshness.age > Double(maxAge) {
            // `immutable` (RFC 8246): a fresh response needs no revalidation even on reload.
            guard response.immutable, freshness.isFresh else { return .mustValidate }
        }
        if let minFresh = request.minFresh, freshness.lifetime - freshness.age < Double(minFresh) {
            return .mustValidate
        }
        if freshness.isFresh { return options.revalidatesEveryHit && !request.onlyIfCached ? .mustValidate : .fresh }
        if let maxStale = request.maxStale, !forbidsStale(stored, overridden: overridden) {
            if let limit = maxStale, freshness.staleness > Double(limit) { return .mustValidate }
            return .staleAllowed
        }
        return .mustValidate
    }

    /// Directives that forbid serving the response stale (§4.2.4), unless the caller's lifetime
    /// override applies (`overridden`).
    func forbidsStale(_ stored: CachedResponse, overridden: Bool = false) -> Bool {
        let control = storedControl(stored)
        if !overridden, control.mustRevalidate || control.noCache { return true }
        if options.mode == .shared, control.proxyRevalidate || control.sharedMaxAge != nil { return true }
        return false
    }

    /// Whether a failure (network error or 5xx) may be answered with `stored`, stale.
    /// - Parameter disconnected: the failure is the connection's (no status was received, or the
    ///   body broke off), not a `5xx`.
    func mayServeStaleOnError(_ stored: CachedResponse, freshness: Freshness, request: CacheControl,
                              overridden: Bool = false, disconnected: Bool = false) -> Bool {
        guard !forbidsStale(stored, overridden: overridden) else { return false }
        if options.serveStaleOnFailure || (disconnected && options.serveStaleWhenDisconnected) { return true }
        let windows = [storedControl(stored).staleIfError, request.staleIfError].compactMap { $0 }
        return windows.contains { freshness.staleness <= Double($0) }
    }

    /// Whether a response to a `POST` may answer later `GET`s of `url` (RFC 9110 §9.3.3): it has
    /// explicit freshness and a `Content-Location` equal to the request URI.
    func isReusablePostResponse(_ response: HTTPResponse, url: URL) -> Bool {
        guard let location = response.headerFields[.contentLocation],
              let target = URL(string: location, relativeTo: url)?.absoluteURL,
              target.absoluteString == url.absoluteString else { return false }
        let control = responseControl(response.headerFields)
        let targeted = targetedControl(response.headerFields) != nil
        return control.maxAge != nil || (options.mode == .shared && control.sharedMaxAge != nil)
            || (!targeted && response.headerFields[.expires] != nil)
    }

    /// Whether a `200` to `HEAD` describes `stored` (RFC 9111 §4.3.5): each validator it carries
    /// (`ETag`, `Last-Modified`) equals the stored one, and so does its `Content-Length`, if any.
    static func headResponse(_ fields: HTTPFields, describes stored: CachedResponse) -> Bool {
        guard stored.status == 200 else { return false }
        for name in [HTTPField.Name.eTag, .lastModified] {
            if let value = fields.combinedValue(name), value != stored.headers.combinedValue(name) { return false }
        }
        if let length = fields.combinedValue(.contentLength), Int(length.trimmingOWS()) != stored.body.count {
            return false
        }
        return true
    }

    // MARK: - Validation (§4.3)

    /// `request` with the stored validators: `ETag` verbatim as `If-None-Match`, `Last-Modified`
    /// as `If-Modified-Since`.
    static func conditional(_ request: HTTPRequest, for stored: CachedResponse) -> HTTPRequest {
        var conditional = request
        if let etag = stored.headers.combinedValue(.eTag) { conditional.headerFields[.ifNoneMatch] = etag }
        if let lastModified = stored.headers.combinedValue(.lastModified) { conditional.headerFields[.ifModifiedSince] = lastModified }
        return conditional
    }

    /// The stored response with the header fields of a `304` (all but `Content-Length` and the
    /// fields never stored), and new request/response times (§3.2).
    static func updated(_ stored: CachedResponse, with fields: HTTPFields, requestTime: Date, responseTime: Date) -> CachedResponse {
        updatedWithControl(stored, with: fields, requestTime: requestTime, responseTime: responseTime).response
    }

    /// ``updated(_:with:requestTime:responseTime:)``, and the `Cache-Control` directives of the
    /// updated response when they are the `304`'s (parsed here anyway: its `Cache-Control` lines
    /// replace the stored ones); `nil` when the stored lines stay.
    private static func updatedWithControl(_ stored: CachedResponse, with fields: HTTPFields, requestTime: Date,
                                           responseTime: Date) -> (response: CachedResponse, control: CacheControl?) {
        var updated = stored
        let control = CacheControl(fields)
        let incoming = storableFields(fields, control: control, mode: .private)
        let carried = incoming.contains(.cacheControl) ? control : nil
        updated.requestTime = requestTime
        updated.responseTime = responseTime
        if let headers = replacedInPlace(stored.headers, with: incoming) {
            updated.headers = headers
            return (updated, carried)
        }
        // A few names each way: a list searched in place costs less than a set built per `304`.
        var replaced: [String] = []
        replaced.reserveCapacity(incoming.count)
        for field in incoming where field.name != .contentLength && !replaced.contains(field.name.canonicalName) {
            replaced.append(field.name.canonicalName)
        }
        if !replaced.isEmpty {
            var headers = HTTPFields()
            headers.reserveCapacity(stored.headers.count + incoming.count)
            for field in stored.headers where !replaced.contains(field.name.canonicalName) { headers.append(field) }
            for field in incoming where field.name != .contentLength { headers.append(field) }
            updated.headers = headers
        }
        return (updated, carried)
    }

    /// `stored` with the fields of `incoming` (all but `Content-Length`) in place of its own, when
    /// no name occurs twice on either side: a field whose value did not change is not written, a
    /// changed one is replaced where it stands, a new one is appended. A `304` mostly repeats the
    /// stored fields (its `Date` aside), so this rebuilds nothing; `nil` when a name repeats (the
    /// caller replaces every line of such a name).
    private static func replacedInPlace(_ stored: HTTPFields, with incoming: HTTPFields) -> HTTPFields? {
        /// Names compared by length first: most pairs differ in it, and a name past 15 bytes is
        /// not a small string, whose comparison takes a slower path.
        func same(_ a: HTTPField.Name, _ b: HTTPField.Name) -> Bool {
            a.canonicalName.utf8.count == b.canonicalName.utf8.count && a == b
        }
        var headers = stored
        for (position, field) in incoming.enumerated() where field.name != .contentLength {
            if incoming.prefix(position).contains(where: { same($0.name, field.name) }) { return nil }
            var found: HTTPFields.Index?
            for index in headers.indices where same(headers[index].name, field.name) {
                guard found == nil else { return nil }
                found = index
            }
            if let found {
                if headers[found].value != field.value { headers[found] = field }
            } else {
                headers.append(field)
            }
        }
        return headers
    }

    // MARK: - Storing (§3)

    /// Whether a response may be stored (§3, §3.5).
    func isStorable(_ response: HTTPResponse, request: HTTPRequest, requestControl: CacheControl) -> Bool {
        let code = response.status.code
        guard request.method == .get, code >= 200, code != 304 else { return false }
        // Partial content is stored for the ranges it holds (RFC 9111 §3.3), only in answer to a
        // `Range` request; its `Content-Range` is checked against the body in `storeIfAllowed`.
        if code == 206, request.headerFields[.range] == nil { return false }
        let control = responseControl(response.headerFields)
        let targeted = targetedControl(response.headerFields) != nil
        if requestControl.noStore { return false }
        if control.has("must-understand") {
            // §5.2.2.3: stored only when the status's caching rules are understood, and then
            // `no-store` (there for caches that do not understand `must-understand`) is ignored.
            guard understoodStatuses.contains(code) else { return false }
        } else if control.noStore {
            return false
        }
        if CacheKey.varyNames(response.headerFields) == ["*"] { return false }
        let shared = options.mode == .shared
        if shared, control.isPrivate { return false }
        // §3.5 for `Authorization`; `Cookie` is treated the same way, since a shared cache keys
        // on the URL: a response to one user's cookies is shared only when it says it may be.
        if shared, request.headerFields[.authorization] != nil || request.headerFields[.cookie] != nil,
           !(control.isPublic || control.sharedMaxAge != nil || control.mustRevalidate) { return false }
        if control.isPublic || control.maxAge != nil || (!targeted && response.headerFields[.expires] != nil) { return true }
        if shared, control.sharedMaxAge != nil { return true }
        if !shared, control.has("private") { return true }
        return heuristicallyCacheableStatuses.contains(code)
    }

    /// Whether the caller's lifetime override lets a `200` be stored that the server's fields
    /// would not (private mode only).
    func isStorableByOverride(_ response: HTTPResponse, url: URL, request: HTTPRequest,
                                      requestControl: CacheControl) -> Bool {
        guard options.mode == .private, options.lifetimeOverride?(url) != nil, request.method == .get,
              response.status.code == 200, !requestControl.noStore,
              !CacheControl(response.headerFields).noStore else { return false }
        return true
    }

    /// The fields of a response that may be stored.
    static func storableFields(_ fields: HTTPFields, control: CacheControl, mode: CacheMode) -> HTTPFields {
        // Only added to when there is something to add: a copy of the shared set otherwise.
        var named: [String] = []
        for value in fields[values: .connection] {
            for name in value.split(separator: ",") { named.append(name.trimmingOWS().lowercased()) }
        }
        named += control.fieldNames("no-cache") ?? []
        if mode == .shared {
            named += control.fieldNames("private") ?? []
            // `Set-Cookie` is stored and replayed like any other field (RFC 9111 §7.3: it does not
            // inhibit caching); an origin that sets per-user cookies says `private` or
            // `no-cache="Set-Cookie"`, and both are obeyed above.
        }
        if named.isEmpty {
            // Most answers carry none of them: then the fields are kept as they are, not copied.
            guard fields.contains(where: { isUnstored($0.name.canonicalName) }) else { return fields }
            var kept = HTTPFields()
            for field in fields where !isUnstored(field.name.canonicalName) { kept.append(field) }
            return kept
        }
        let excluded = unstoredFields.union(named)
        guard fields.contains(where: { excluded.contains($0.name.canonicalName) }) else { return fields }
        var kept = HTTPFields()
        for field in fields where !excluded.contains(field.name.canonicalName) { kept.append(field) }
        return kept
    }

    // MARK: - Invalidation (§4.4)

    static func isSafe(_ method: HTTPRequest.Method) -> Bool {
        [.get, .head, .options, .trace].contains(method)
    }
}
