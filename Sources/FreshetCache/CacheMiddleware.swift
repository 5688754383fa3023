import Foundation
import Freshet
import HTTPTypes
import OpenAPIRuntime

/// An RFC 9111 HTTP cache as a `ClientMiddleware`.
///
/// Place it innermost, right before the transport (see `Middlewares`): a retried or
/// coalesced request then still hits it. It reports how it answered through
/// `ExchangeReport` (never in a header field), which `APIClient` turns into
/// `Response.cache` and `Response.staleReason`:
/// `hit` (served from the store), `revalidated` (a `304` confirmed the stored response, which is
/// delivered as the stored `200`), `miss` (from the server) or `stale` (served stale: a caller's
/// `max-stale`, `stale-while-revalidate`, `stale-if-error`, or ``Options/serveStaleOnFailure``).
///
/// What it implements: freshness from `s-maxage` (shared), `max-age`, `Expires`/`Date`, and
/// heuristics (§4.2); the current-age computation with `Age` (§4.2.3); storage rules (§3):
/// `no-store`, `no-cache` (also `no-cache="Field"`), `private`, authenticated requests in shared
/// mode (§3.5), hop-by-hop and `Connection`-listed fields never stored; `Vary` variants (§4.1);
/// validation with the stored `ETag` and `Last-Modified` (§4.3) and header update from `304`
/// (§3.2, §4.3.4); request directives `max-age`, `max-stale`, `min-fresh`, `no-cache`,
/// `no-store`, `only-if-cached` (§5.2.1); `must-revalidate`, `proxy-revalidate`, `immutable`;
/// invalidation after unsafe methods (§4.4); `stale-while-revalidate` and `stale-if-error`;
/// single byte ranges (`Range`, `If-Range`) answered from a stored complete response or from
/// stored partial content (a `206` is stored for the range it holds, RFC 9111 §3.3–3.4); a `200`
/// to `HEAD` freshens the stored `GET` response it describes (§4.3.5); a `POST` response with
/// explicit freshness and `Content-Location` equal to its URI answers later `GET`s (RFC 9110 §9.3.3).
public struct CacheMiddleware: ClientMiddleware, StoredResponseSource {
    /// How the cache behaves beyond the RFC's fixed rules.
    public struct Options: Sendable {
        /// Private (the default, for a client) or shared (for a proxy).
        public var mode: CacheMode
        /// Serve a stored response, flagged `stale`, when the server cannot be reached, answers
        /// 5xx, or sends a new answer that breaks off mid-body or is declared JSON but does not
        /// parse — unless the response forbids it (`must-revalidate`, `no-cache`, …). The apps use
        /// this so a dead network still shows stored data. (A body that is not valid JSON is never
        /// stored, with or without this option.)
        public var serveStaleOnFailure: Bool
        /// The largest body stored; larger responses pass through unstored.
        public var maxEntryBytes: Int
        /// The share of `Date − Last-Modified` used as heuristic lifetime (default 0.1).
        public var heuristicFraction: Double
        /// The caller's own lifetime for a URL, in seconds, replacing what the server says
        /// (private mode only). For APIs that send no useful freshness, like Hacker News.
        public var lifetimeOverride: (@Sendable (URL) -> Double?)?
        /// Serve a stored response, flagged `stale`, when the server cannot be reached or drops
        /// the connection (never on a status) — unless the response forbids it. RFC 9111 §4.2.4
        /// allows this to a disconnected cache; ``serveStaleOnFailure`` implies it.
        public var serveStaleWhenDisconnected: Bool
        /// Targeted cache-control fields this cache obeys (RFC 9213), in order of precedence,
        /// e.g. `CDN-Cache-Control`: the first one present in a response replaces its
        /// `Cache-Control` and `Expires` for this cache's decisions. Empty by default.
        public var targetedFields: [HTTPField.Name]

        /// Creates options.
        public init(mode: CacheMode = .private, serveStaleOnFailure: Bool = false,
                    serveStaleWhenDisconnected: Bool = false,
                    maxEntryBytes: Int = 8 * 1024 * 1024, heuristicFraction: Double = 0.1,
                    lifetimeOverride: (@Sendable (URL) -> Double?)? = nil,
                    targetedFields: [HTTPField.Name] = []) {
            self.mode = mode
            self.serveStaleOnFailure = serveStaleOnFailure
            self.serveStaleWhenDisconnected = serveStaleWhenDisconnected
            self.targetedFields = targetedFields
            self.maxEntryBytes = maxEntryBytes
            self.heuristicFraction = heuristicFraction
            self.lifetimeOverride = lifetimeOverride
        }
    }

    /// Where responses are kept.
    public let store: any CacheStore
    /// The behaviour switches.
    public var options: Options
    /// Used for `stale-while-revalidate` refreshes after the caller has been answered. Since the
    /// cache is innermost, pass the same transport the client uses; without one, a response in
    /// its stale-while-revalidate window is revalidated in line instead.
    public var backgroundTransport: (any ClientTransport)?
    private let now: @Sendable () -> Date
    private let memo = StoredFacts()

    /// The RFC 9111 decisions with these options.
    var policy: CachePolicy { CachePolicy(options: options, memo: memo) }

    /// Creates the middleware.
    public init(store: any CacheStore, options: Options = .init(), backgroundTransport: (any ClientTransport)? = nil,
                now: @escaping @Sendable () -> Date = { Date() }) {
        self.store = store
        self.options = options
        self.backgroundTransport = backgroundTransport
        self.now = now
    }

    // MARK: - The middleware

    /// Answers from the store when it may, revalidates when it must, and stores what it can.
    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard let url = request.url(relativeTo: baseURL) else { return try await next(request, body, baseURL) }
        let requestControl = CacheControl(request.headerFields)
        guard request.method == .get || request.method == .head else {
            let requestTime = now()
            let (response, responseBody) = try await next(request, body, baseURL)
            if !CachePolicy.isSafe(request.method), (200..<400).contains(response.status.code) {
                await invalidate(url, response: response)
            }
            if request.method == .post, policy.isReusablePostResponse(response, url: url) {
                // RFC 9110 §9.3.3: stored as the answer to a GET of the same URI.
                var asGet = request
                asGet.method = .get
                return try await storeIfAllowed(
                    response, body: responseBody, request: asGet, requestControl: requestControl, url: url,
                    requestTime: requestTime, key: CacheKey.primary(url: url, request: asGet, mode: options.mode))
            }
            return (response, responseBody)
        }
        // `Range` concerns GET only (RFC 9110 §14.2); a HEAD ignores it.
        let rangeValue = request.method == .get ? request.headerFields[.range] : nil
        let callerConditional = request.headerFields[.ifNoneMatch] != nil || request.headerFields[.ifModifiedSince] != nil
        let key = CacheKey.primary(url: url, request: request, mode: options.mode)
        let matched = await storedVariant(forKey: key, request: request)
        // Stored partial content (a `206`) answers only the ranges it holds.
        let stored = matched?.status == 206 && rangeValue == nil ? nil : matched
        let completeStored = matched.map { $0.status != 206 } ?? false

        if let stored, !callerConditional,
           let (answer, freshness, outcome) = assess(stored, request: request, requestControl: requestControl,
                                                     url: url, rangeValue: rangeValue) {
            if let outcome {
                return await serve(answer, freshness: freshness, outcome: outcome, head: request.method == .head)
            }
            if requestControl.onlyIfCached {
                return await gatewayTimeout()
            }
            if rangeValue == nil {
                if request.method == .get, let transport = backgroundTransport,
                   let window = policy.storedControl(stored).staleWhileRevalidate,
                   freshness.staleness <= Double(window), !policy.forbidsStale(stored, overridden: policy.overrides(url)) {
                    revalidateInBackground(stored, request: request, baseURL: baseURL, url: url, transport: transport)
                    return await serve(stored, freshness: freshness, outcome: .stale, head: false)
                }
                if request.method == .head {
                    return try await forwardHead(request, body: body, baseURL: baseURL, url: url, stored: stored, next: next)
                }
                return try await revalidate(stored, freshness: freshness, request: request, requestControl: requestControl,
                                            baseURL: baseURL, url: url, next: next)
            }
        }
        if requestControl.onlyIfCached {
            return await gatewayTimeout()
        }
        func fetch() async throws -> (HTTPResponse, HTTPBody?) {
            let requestTime = now()
            let (response, responseBody) = try await next(request, body, baseURL)
            return try await storeIfAllowed(response, body: responseBody, request: request, requestControl: requestControl,
                                            url: url, requestTime: requestTime, key: key,
                                            keepsPartial: !completeStored)
        }
        // A plain miss on a store shared by several callers or processes: one fills the key, the
        // others wait for it and answer from the store.
        guard matched == nil, request.method == .get, rangeValue == nil, !callerConditional, body == nil,
              !requestControl.noStore, let coordinator = store as? any CacheFillCoordinating else {
            return try await fetch()
        }
        return try await coordinator.withFillLock(forKey: key) { locked in
            if locked, let filled = await storedVariant(forKey: key, request: request),
               let (answer, freshness, outcome) = assess(filled, request: request, requestControl: requestControl,
                                                         url: url, rangeValue: nil),
               let outcome {
                return await serve(answer, freshness: freshness, outcome: outcome, head: false)
            }
            return try await fetch()
        }
    }


    /// The stored variant of `key` that `request` selects (RFC 9111 §4.1), if any.
    func storedVariant(forKey key: String, request: HTTPRequest) async -> CachedResponse? {
        CachePolicy.selectedVariant((try? await store.variants(forKey: key)) ?? [], request: request)
    }


    // MARK: - Answers without an exchange

    /// What the store alone answers: the response (with its `Age`), its body (`nil` for `HEAD`)
    /// and how the cache answered (`hit`, or `stale` where the request allowed it).
    public typealias StoredAnswer = (response: HTTPResponse, body: Data?, outcome: CacheOutcome)

    /// The answer the store gives `request` right now without contacting the server — fresh, or
    /// stale where the request allows it (`max-stale`) — or `nil` when the request must go on to
    /// the server (nothing stored, a validation is due, or it carries its own validators).
    ///
    /// It is what ``intercept(_:body:baseURL:operationID:next:)`` would answer from the store, and
    /// counts the same outcome; a proxy calls it first so that a hit never enters the
    /// origin-side chain. The outcome is also reported through `ExchangeReport`.
    public func answerFromStore(for request: HTTPRequest, baseURL: URL) async -> StoredAnswer? {
        guard Self.answersAlone(request), let location = location(of: request, baseURL: baseURL),
              let decision = decide(request, url: location.url,
                                    variants: (try? await store.variants(forKey: location.key)) ?? [])
        else { return nil }
        let (response, body) = await serve(decision.answer, freshness: decision.freshness, outcome: decision.outcome,
                                           head: request.method == .head)
        return (response, body == nil ? nil : decision.answer.body, decision.outcome)
    }

    /// Where the answers to a request are kept: its URL and primary key; `nil` when the request
    /// has no URL. A shared cache keys on the URL alone, so a server may keep the location per
    /// request target and skip parsing and hashing on every hit.
    public struct StoreLocation: Sendable {
        /// The request's URL.
        public let url: URL
        /// The primary key (see `CacheKey`).
        let key: String
    }

    /// The location of `request`'s answers (see ``StoreLocation``).
    public func location(of request: HTTPRequest, baseURL: URL) -> StoreLocation? {
        guard let url = request.url(relativeTo: baseURL) else { return nil }
        return StoreLocation(url: url, key: CacheKey.primary(url: url, request: request, mode: options.mode))
    }

    /// How the store answers a request, before any response is built.
    public struct StoreDecision: Sendable {
        /// What answers: the stored response itself, or for a `Range` request the part asked for
        /// (a `206`).
        public var answer: CachedResponse
        /// The stored response's freshness now.
        public var freshness: Freshness
        /// `hit`, or `stale` where the request allows it.
        public var outcome: CacheOutcome

        /// The answer's head: its stored fields with `Age`.
        public var response: HTTPResponse { CacheMiddleware.response(answer, freshness: freshness) }
    }

    /// ``answerFromStore(for:baseURL:)`` without suspending and without building the response:
    /// from the memory of a store that keeps one (``MemoryLookup``), for a server that answers
    /// hits on its event loop. Counts the outcome. `nil` whenever the memory cannot decide; then
    /// ask ``answerFromStore(for:baseURL:)``.
    public func decisionFromMemory(for request: HTTPRequest, at location: StoreLocation) -> StoreDecision? {
        guard Self.answersAlone(request), let memory = store as? any MemoryLookup,
              let variants = memory.variantsInMemory(forKey: location.key),
              let decision = decide(request, url: location.url, variants: variants) else { return nil }
        memory.count(decision.outcome)
        return decision
    }

    /// Whether the store may answer `request` alone: a `GET` or `HEAD` without the caller's own
    /// validators (those go on to the server).
    private static func answersAlone(_ request: HTTPRequest) -> Bool {
        (request.method == .get || request.method == .head)
            && request.headerFields[.ifNoneMatch] == nil && request.headerFields[.ifModifiedSince] == nil
    }

    /// What of `variants` answers `request` now, with its freshness and outcome; `nil` when the
    /// request must go to the server.
    private func decide(_ request: HTTPRequest, url: URL, variants: [CachedResponse]) -> StoreDecision? {
        guard let matched = CachePolicy.selectedVariant(variants, request: request),
              let (answer, freshness, outcome) = assess(
                matched, request: request, requestControl: CacheControl(request.headerFields), url: url,
                rangeValue: request.method == .get ? request.headerFields[.range] : nil),
              let outcome else { return nil }
        return StoreDecision(answer: answer, freshness: freshness, outcome: outcome)
    }

    /// Whether `matched` may answer `request` from the store (RFC 9111 §4.2–4.3): what it answers
    /// (itself, or the range asked for), its freshness, and the outcome — `hit`, `stale` where
    /// the request allows it, or `nil` when it must be validated first. `nil` altogether when it
    /// cannot answer this request (stored partial content that holds no asked-for range).
    private func assess(_ matched: CachedResponse, request: HTTPRequest, requestControl: CacheControl, url: URL,
                        rangeValue: String?) -> (answer: CachedResponse, freshness: Freshness, outcome: CacheOutcome?)? {
        guard matched.status != 206 || rangeValue != nil,
              let answer = CachePolicy.servable(matched, rangeValue: rangeValue, request: request) else { return nil }
        let policy = self.policy
        let freshness = policy.freshness(of: matched, url: url, now: now())
        switch policy.reuse(matched, freshness: freshness, request: requestControl, overridden: policy.overrides(url)) {
        case .fresh: return (answer, freshness, .hit)
        case .staleAllowed: return (answer, freshness, .stale)
        case .mustValidate: return (answer, freshness, nil)
        }
    }

    /// The stored response for `request`, stale or not, unless it forbids being served stale
    /// (`StoredResponseSource`: `APIClient.sendOrStored(_:)` asks after a
    /// failure raised outside the cache). Counted as a `stale` answer.
    public func storedResponse(for request: HTTPRequest, baseURL: URL) async -> (HTTPResponse, Data)? {
        guard request.method == .get, let url = request.url(relativeTo: baseURL) else { return nil }
        let key = CacheKey.primary(url: url, request: request, mode: options.mode)
        guard let stored = await storedVariant(forKey: key, request: request), stored.status != 206,
              !policy.forbidsStale(stored, overridden: policy.overrides(url)) else { return nil }
        let (response, _) = await serve(stored, freshness: policy.freshness(of: stored, url: url, now: now()), outcome: .stale, head: true)
        return (response, stored.body)
    }


    // MARK: - Reuse (RFC 9111 §4)










    // MARK: - Validation (§4.3)

    private func revalidate(
        _ stored: CachedResponse, freshness: Freshness, request: HTTPRequest, requestControl: CacheControl,
        baseURL: URL, url: URL,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let conditional = CachePolicy.conditional(request, for: stored)
        let requestTime = now()
        let response: HTTPResponse
        let responseBody: HTTPBody?
        do {
            (response, responseBody) = try await next(conditional, nil, baseURL)
        } catch {
            if !(error is CancellationError), !Task.isCancelled,
               policy.mayServeStaleOnError(stored, freshness: freshness, request: requestControl, overridden: policy.overrides(url),
                                    disconnected: true) {
                let reason = APIError.wrapping(error, url: url).description
                return await serve(stored, freshness: freshness, outcome: .stale, head: false, staleReason: reason)
            }
            throw error
        }
        if response.status.code == 304 {
            await HTTPBody.discard(responseBody)
            let updated = CachePolicy.updated(stored, with: response.headerFields, requestTime: requestTime, responseTime: now())
            try? await store.save(updated)
            return await serve(updated, freshness: policy.freshness(of: updated, url: url, now: now()), outcome: .revalidated, head: false)
        }
        if response.status.code >= 500,
           policy.mayServeStaleOnError(stored, freshness: freshness, request: requestControl, overridden: policy.overrides(url)) {
            await HTTPBody.discard(responseBody)
            let reason = "HTTP \(response.status.code) from \(Redaction.redact(url))"
            return await serve(stored, freshness: freshness, outcome: .stale, head: false, staleReason: reason)
        }
        // A new answer that breaks off mid-body, or whose JSON is not JSON, is a failed refresh too:
        // it must not replace the stored response, which is served instead when it may be.
        // A body that breaks off is the connection's failure; a body that is not JSON is the
        // server's answer (served stale only where a 5xx would be).
        let serveStored = { (reason: String) in
            await serve(stored, freshness: freshness, outcome: .stale, head: false, staleReason: reason)
        }
        let staleOnBadJSON = policy.mayServeStaleOnError(stored, freshness: freshness, request: requestControl, overridden: policy.overrides(url))
        let staleOnBrokenBody = policy.mayServeStaleOnError(stored, freshness: freshness, request: requestControl,
                                                     overridden: policy.overrides(url), disconnected: true)
        do {
            return try await storeIfAllowed(response, body: responseBody, request: request, requestControl: requestControl,
                                            url: url, requestTime: requestTime, key: stored.key,
                                            fallback: staleOnBadJSON ? serveStored : nil)
        } catch {
            guard staleOnBrokenBody, !(error is CancellationError), !Task.isCancelled else { throw error }
            return await serveStored(APIError.wrapping(error, url: url).description)
        }
    }



    private func revalidateInBackground(
        _ stored: CachedResponse, request: HTTPRequest, baseURL: URL, url: URL, transport: any ClientTransport
    ) {
        let conditional = CachePolicy.conditional(request, for: stored)
        let cache = self
        Task.detached {
            let requestTime = cache.now()
            guard let (response, body) = try? await transport.send(conditional, body: nil, baseURL: baseURL,
                                                                   operationID: "cache-revalidation") else { return }
            if response.status.code == 304 {
                await HTTPBody.discard(body)
                let updated = CachePolicy.updated(stored, with: response.headerFields, requestTime: requestTime, responseTime: cache.now())
                try? await cache.store.save(updated)
            } else if let (_, rest) = try? await cache.storeIfAllowed(
                response, body: body, request: request, requestControl: CacheControl(request.headerFields),
                url: url, requestTime: requestTime, key: stored.key) {
                await HTTPBody.discard(rest)
            }
        }
    }

    // MARK: - Storing (§3)



    /// Stores the response when the rules allow. A body that claims to be JSON but does not parse is
    /// never stored; with a `fallback` (the stored response, served stale) that is answered instead.
    /// - Parameter keepsPartial: whether a `206` may be stored (not when it would replace a
    ///   complete stored response).
    private func storeIfAllowed(
        _ response: HTTPResponse, body: HTTPBody?, request: HTTPRequest, requestControl: CacheControl,
        url: URL, requestTime: Date, key: String, keepsPartial: Bool = true,
        fallback: ((String) async -> (HTTPResponse, HTTPBody?))? = nil
    ) async throws -> (HTTPResponse, HTTPBody?) {
        ExchangeReport.current?.recordCache(.miss)
        try? await store.record(.miss)
        let storable = policy.isStorable(response, request: request, requestControl: requestControl)
            || policy.isStorableByOverride(response, url: url, request: request, requestControl: requestControl)
        guard storable else { return (response, body) }
        let (data, rest) = try await Self.prefix(of: body, limit: options.maxEntryBytes)
        guard rest == nil else {
            return (response, Self.concatenate(data, rest))
        }
        // A `206` never replaces a complete stored response, and is kept only when its body is
        // the range its `Content-Range` names.
        if response.status.code == 206,
           !keepsPartial || !CachePolicy.isStorablePartial(response.headerFields, bodyCount: data.count) {
            return (response, HTTPBody(data))
        }
        if Self.isBrokenJSON(data, fields: response.headerFields) {
            if let fallback { return await fallback("the response from \(Redaction.redact(url)) is not valid JSON") }
            return (response, HTTPBody(data))
        }
        let names = CacheKey.varyNames(response.headerFields)
        let entry = CachedResponse(
            key: key, variant: CacheKey.variant(varyNames: names, request: request.headerFields),
            url: Redaction.redact(url), status: response.status.code,
            headers: CachePolicy.storableFields(response.headerFields, control: policy.responseControl(response.headerFields), mode: options.mode),
            body: data, requestTime: requestTime, responseTime: now())
        try? await store.save(entry)
        return (response, HTTPBody(data))
    }


    /// Reads `body` up to `limit` bytes. When it is longer, returns what was read and an iterator
    /// for the rest, so the caller still gets every byte, streamed.
    static func prefix(of body: HTTPBody?, limit: Int) async throws -> (Data, HTTPBody.AsyncIterator?) {
        guard let body else { return (Data(), nil) }
        var iterator = body.makeAsyncIterator()
        var data = Data()
        while let chunk = try await iterator.next() {
            data.append(contentsOf: chunk)
            if data.count > limit { return (data, iterator) }
        }
        return (data, nil)
    }

    /// Whether `data` is declared JSON (`application/json`, `…+json`) but does not parse as JSON.
    static func isBrokenJSON(_ data: Data, fields: HTTPFields) -> Bool {
        guard let type = fields[.contentType]?.split(separator: ";").first?.trimmingOWS().lowercased(),
              type == "application/json" || type.hasSuffix("+json") else { return false }
        return (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) == nil
    }

    static func concatenate(_ head: Data, _ rest: HTTPBody.AsyncIterator?) -> HTTPBody {
        HTTPBody(Concatenated(head: head, rest: IteratorBox(rest)), length: .unknown, iterationBehavior: .single)
    }

    // MARK: - Serving

    private func serve(_ stored: CachedResponse, freshness: Freshness, outcome: CacheOutcome, head: Bool,
                       staleReason: String? = nil) async -> (HTTPResponse, HTTPBody?) {
        try? await store.record(outcome)
        ExchangeReport.current?.recordCache(outcome, staleReason: staleReason)
        return (Self.response(stored, freshness: freshness), head ? nil : HTTPBody(stored.body))
    }

    /// The stored response as it is served: its fields with the current `Age`.
    static func response(_ stored: CachedResponse, freshness: Freshness) -> HTTPResponse {
        var fields = stored.headers
        fields[.age] = String(freshness.ageSeconds)
        return HTTPResponse(status: .init(code: stored.status), headerFields: fields)
    }

    /// `only-if-cached` with nothing usable: 504 (§5.2.1.7).
    /// `504` for an `only-if-cached` request nothing stored can answer. Not counted as a miss:
    /// no exchange was made (and a proxy's own store probe would count twice).
    private func gatewayTimeout() async -> (HTTPResponse, HTTPBody?) {
        ExchangeReport.current?.recordCache(.miss)
        return (HTTPResponse(status: .gatewayTimeout), nil)
    }

    /// Sends a `HEAD` the stored response could not answer. A `200` whose validators and length
    /// agree with the stored response updates it (RFC 9111 §4.3.5: its fields and freshness, as a
    /// `304` would) and is answered with the updated stored fields.
    private func forwardHead(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, url: URL, stored: CachedResponse,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let requestTime = now()
        let (response, responseBody) = try await next(request, body, baseURL)
        if response.status.code == 200, CachePolicy.headResponse(response.headerFields, describes: stored) {
            await HTTPBody.discard(responseBody)
            let updated = CachePolicy.updated(stored, with: response.headerFields, requestTime: requestTime, responseTime: now())
            try? await store.save(updated)
            return await serve(updated, freshness: policy.freshness(of: updated, url: url, now: now()), outcome: .revalidated, head: true)
        }
        ExchangeReport.current?.recordCache(.miss)
        return (response, responseBody)
    }


    // MARK: - Invalidation (§4.4)


    /// Removes the stored responses for the target URI and, on the same origin, the
    /// `Location` and `Content-Location` URIs.
    private func invalidate(_ url: URL, response: HTTPResponse) async {
        var targets = [url]
        for name in [HTTPField.Name.location, .contentLocation] {
            if let value = response.headerFields[name], let other = URL(string: value, relativeTo: url)?.absoluteURL,
               url.isSameOrigin(as: other) {
                targets.append(other)
            }
        }
        for target in targets {
            try? await store.remove(url: Redaction.redact(target))
        }
    }
}

/// Holds the unread rest of a body. It is iterated by one consumer only (the body is `.single`),
/// which is what makes the unchecked `Sendable` sound.
private final class IteratorBox: @unchecked Sendable {
    var iterator: HTTPBody.AsyncIterator?
    init(_ iterator: HTTPBody.AsyncIterator?) { self.iterator = iterator }
}

/// Bytes already read, then the rest of the body: a long response streams through unstored.
private struct Concatenated: AsyncSequence, Sendable {
    typealias Element = HTTPBody.ByteChunk
    let head: Data
    let rest: IteratorBox

    struct AsyncIterator: AsyncIteratorProtocol {
        var head: Data?
        let rest: IteratorBox

        mutating func next() async throws -> HTTPBody.ByteChunk? {
            if let chunk = head {
                head = nil
                return ArraySlice(chunk)
            }
            return try await rest.iterator?.next()
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(head: head, rest: rest) }
}
