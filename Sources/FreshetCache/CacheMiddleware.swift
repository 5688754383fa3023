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
public struct CacheMiddleware: ClientMiddleware, StoredResponseSource, WholeResponseMiddleware {
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
        /// How a shared cache treats requests that carry credentials (see ``CachePartitioning``).
        /// Ignored in private mode, which keys on the credential already.
        public var partitioning: CachePartitioning
        /// Revalidate every stored response before it answers, fresh or not (a `304` refreshes
        /// it and it answers as `revalidated`). For origins whose conditional requests cost
        /// nothing, like GitHub's to an authorized `304`: answers are never older than one round
        /// trip. An `only-if-cached` request is still answered from the store.
        public var revalidatesEveryHit: Bool
        /// Statuses on which a stored response is served stale instead of the origin's answer,
        /// beyond `stale-if-error` (see ``StaleStatuses``); never where the stored response
        /// forbids serving it stale.
        public var serveStaleOn: StaleStatuses
        /// Never store a response declared JSON (`application/json`, `…+json`) whose bytes do not
        /// parse, and treat it as a failed refresh (the apps: a broken answer never replaces a good
        /// one). An encoded body (`Content-Encoding`) is judged by what it decodes to, and one that
        /// does not decode is refused the same way, when a content decoder sits above the cache (the
        /// standard chain's decompression); otherwise it is not looked at. A shared proxy turns it
        /// off: what it relays is the origin's business. On by default.
        public var rejectsInvalidJSON: Bool
        /// How long a request waits for another one fetching or revalidating the same key (one
        /// origin request per key at a time) before it makes its own.
        public var fillWait: Duration
        /// Key `Vary: Accept-Encoding` by whether the request accepts gzip, not by the field's
        /// text: for a cache that asks the origin for gzip or identity only and decodes gzip for
        /// clients that do not take it (a proxy). Off by default.
        public var normalizesAcceptEncoding: Bool

        /// Creates options.
        public init(mode: CacheMode = .private, serveStaleOnFailure: Bool = false,
                    serveStaleWhenDisconnected: Bool = false,
                    maxEntryBytes: Int = 8 * 1024 * 1024, heuristicFraction: Double = 0.1,
                    lifetimeOverride: (@Sendable (URL) -> Double?)? = nil,
                    targetedFields: [HTTPField.Name] = [], partitioning: CachePartitioning = .none,
                    revalidatesEveryHit: Bool = false, serveStaleOn: StaleStatuses = [],
                    rejectsInvalidJSON: Bool = true, fillWait: Duration = .seconds(5),
                    normalizesAcceptEncoding: Bool = false) {
            self.mode = mode
            self.serveStaleOnFailure = serveStaleOnFailure
            self.serveStaleWhenDisconnected = serveStaleWhenDisconnected
            self.targetedFields = targetedFields
            self.maxEntryBytes = maxEntryBytes
            self.heuristicFraction = heuristicFraction
            self.lifetimeOverride = lifetimeOverride
            self.partitioning = partitioning
            self.revalidatesEveryHit = revalidatesEveryHit
            self.serveStaleOn = serveStaleOn
            self.rejectsInvalidJSON = rejectsInvalidJSON
            self.fillWait = fillWait
            self.normalizesAcceptEncoding = normalizesAcceptEncoding
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
    let now: @Sendable () -> Date
    /// The store's memory, when it keeps one: cast once here, not on every hit.
    let memory: (any MemoryLookup)?
    private let memo = StoredFacts()
    let fills = FillLocks()

    /// The RFC 9111 decisions with these options.
    var policy: CachePolicy { CachePolicy(options: options, memo: memo) }

    /// The decisions for entries kept under `mode`'s rules (a credential's partition follows a
    /// private cache's).
    func policy(_ mode: CacheMode) -> CachePolicy {
        guard mode != options.mode else { return policy }
        var options = self.options
        options.mode = mode
        return CachePolicy(options: options, memo: memo)
    }

    /// Where `request`'s answers may be kept, in the order they are looked up: its credential's
    /// partition first when the cache partitions by credential, then the cache's own.
    func partitions(url: URL, request: HTTPRequest) -> [Partition] {
        let own = Partition(key: CacheKey.primary(url: url, request: request, mode: options.mode), mode: options.mode)
        guard options.mode == .shared, options.partitioning == .credential,
              request.headerFields[.authorization] != nil || request.headerFields[.cookie] != nil else { return [own] }
        return [Partition(key: CacheKey.primary(url: url, request: request, mode: .private), mode: .private), own]
    }

    /// The stored variant that `request` selects, in the first of `partitions` holding one.
    func storedVariant(in partitions: [Partition], request: HTTPRequest) async -> (CachedResponse, Partition)? {
        for partition in partitions {
            if let stored = await storedVariant(forKey: partition.key, request: request) { return (stored, partition) }
        }
        return nil
    }

    /// Noted once, so that `APIClient` tells the cache by its type (`StoredRoles`).
    private static let noted: Void = StoredRoles.note(source: CacheMiddleware.self)

    /// Creates the middleware.
    public init(store: any CacheStore, options: Options = .init(), backgroundTransport: (any ClientTransport)? = nil,
                now: @escaping @Sendable () -> Date = { Date() }) {
        _ = Self.noted
        self.store = store
        self.memory = store.memoryLookup
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
                    requestTime: requestTime, partitions: partitions(url: url, request: asGet))
            }
            return (response, responseBody)
        }
        // `Range` concerns GET only (RFC 9110 §14.2); a HEAD ignores it.
        let rangeValue = request.method == .get ? request.headerFields[.range] : nil
        let callerConditional = request.headerFields[.ifNoneMatch] != nil || request.headerFields[.ifModifiedSince] != nil
        let partitions = partitions(url: url, request: request)
        let found = await storedVariant(in: partitions, request: request)
        let matched = found?.0
        // Stored partial content (a `206`) answers only the ranges it holds.
        let stored = matched?.status == 206 && rangeValue == nil ? nil : matched
        let completeStored = matched.map { $0.status != 206 } ?? false

        if let stored, let partition = found?.1, !callerConditional,
           let (answer, freshness, outcome) = assess(stored, mode: partition.mode, request: request,
                                                     requestControl: requestControl, url: url, rangeValue: rangeValue) {
            if let outcome {
                return await serve(answer, freshness: freshness, outcome: outcome, head: request.method == .head)
            }
            if requestControl.onlyIfCached {
                return await gatewayTimeout()
            }
            if rangeValue == nil {
                let policy = self.policy(partition.mode)
                if request.method == .get, let transport = backgroundTransport, !freshness.isFresh,
                   let window = policy.storedControl(stored).staleWhileRevalidate,
                   freshness.staleness <= Double(window), !policy.forbidsStale(stored, overridden: policy.overrides(url)) {
                    revalidateInBackground(stored, request: request, baseURL: baseURL, url: url, partitions: partitions,
                                           transport: transport)
                    return await serve(stored, freshness: freshness, outcome: .stale, head: false)
                }
                if request.method == .head {
                    return try await forwardHead(request, body: body, baseURL: baseURL, url: url, stored: stored,
                                                 mode: partition.mode, next: next)
                }
                // One revalidation per key at a time: the others wait for it and answer with
                // what it stored (a `304` refreshed the stored response).
                let waitStart = now()
                return try await fills.run(key: partition.key, maxWait: options.fillWait) { turn in
                    if turn != .first, let (again, where_) = await storedVariant(in: partitions, request: request),
                       let (answer, freshness, outcome) = assess(again, mode: where_.mode, request: request,
                                                                 requestControl: requestControl, url: url, rangeValue: nil),
                       outcome != nil || again.responseTime >= waitStart {
                        return await serve(answer, freshness: freshness, outcome: outcome ?? .revalidated, head: false)
                    }
                    return try await revalidate(stored, mode: partition.mode, freshness: freshness, request: request,
                                                requestControl: requestControl, baseURL: baseURL, url: url,
                                                partitions: partitions, next: next)
                }
            }
        }
        if requestControl.onlyIfCached {
            return await gatewayTimeout()
        }
        func fetch() async throws -> (HTTPResponse, HTTPBody?) {
            let requestTime = now()
            let (response, responseBody) = try await next(request, body, baseURL)
            return try await storeIfAllowed(response, body: responseBody, request: request, requestControl: requestControl,
                                            url: url, requestTime: requestTime, partitions: partitions,
                                            keepsPartial: !completeStored)
        }
        // A plain miss: one caller fills the key (in this process, and across processes when the
        // store coordinates fills), the others wait for it and answer from the store.
        guard matched == nil, request.method == .get, rangeValue == nil, !callerConditional, body == nil,
              !requestControl.noStore else {
            return try await fetch()
        }
        let key = partitions[0].key
        return try await fills.run(key: key, maxWait: options.fillWait) { turn in
            if turn != .first, let answer = await filledAnswer(partitions: partitions, request: request,
                                                       requestControl: requestControl, url: url) {
                return answer
            }
            guard let coordinator = store as? any CacheFillCoordinating else { return try await fetch() }
            return try await coordinator.withFillLock(forKey: key) { locked in
                if locked, let answer = await filledAnswer(partitions: partitions, request: request,
                                                           requestControl: requestControl, url: url) {
                    return answer
                }
                return try await fetch()
            }
        }
    }

    /// The answer another caller's fill left in the store, when one may answer `request`.
    /// Nothing was stored when this request looked, so whatever is there now was stored since, by
    /// another caller or another process, however long ago its response came: it answers even
    /// when not fresh (with ``Options/revalidatesEveryHit`` nothing is fresh, but what the fill
    /// just fetched is as new as an answer of one's own).
    private func filledAnswer(partitions: [Partition], request: HTTPRequest, requestControl: CacheControl,
                              url: URL) async -> (HTTPResponse, HTTPBody?)? {
        guard let (filled, partition) = await storedVariant(in: partitions, request: request),
              let (answer, freshness, outcome) = assess(filled, mode: partition.mode, request: request,
                                                        requestControl: requestControl, url: url, rangeValue: nil)
        else { return nil }
        return await serve(answer, freshness: freshness, outcome: outcome ?? .hit, head: false)
    }


    /// The stored variant of `key` that `request` selects (RFC 9111 §4.1), if any.
    func storedVariant(forKey key: String, request: HTTPRequest) async -> CachedResponse? {
        CachePolicy.selectedVariant((try? await store.variants(forKey: key)) ?? [], request: request,
                                    normalizingEncoding: options.normalizesAcceptEncoding)
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
        guard Self.answersAlone(request), let location = location(of: request, baseURL: baseURL) else { return nil }
        return await answerFromStore(for: request, at: location)
    }

    /// ``answerFromStore(for:baseURL:)`` of a request whose location is known; with `memoized`
    /// false, the stored response's facts are worked out without keeping them (a batch answers
    /// each once: keeping 500 of them cost more than working them out).
    private func answerFromStore(for request: HTTPRequest, at location: StoreLocation, memoized: Bool = true) async
        -> StoredAnswer?
    {
        guard let (stored, partition) = await storedVariant(in: location.partitions, request: request),
              let decision = decide(request, url: location.url, matched: stored, mode: partition.mode, memoized: memoized)
        else { return nil }
        let (response, body) = await serve(decision.answer, freshness: decision.freshness, outcome: decision.outcome,
                                           head: request.method == .head)
        return (response, body == nil ? nil : decision.answer.body, decision.outcome)
    }

    /// Where the answers to a request are kept: its URL and the primary keys to look in; `nil`
    /// when the request has no URL. A shared cache keys a request without credentials (or any
    /// request, when it does not partition by credential) on the URL alone, so a server may keep
    /// such a location per request target and skip parsing and hashing on every hit.
    public struct StoreLocation: Sendable {
        /// The request's URL.
        public let url: URL
        /// The partitions, in lookup order.
        let partitions: [Partition]
    }

    /// The location of `request`'s answers (see ``StoreLocation``).
    public func location(of request: HTTPRequest, baseURL: URL) -> StoreLocation? {
        guard let url = request.url(relativeTo: baseURL) else { return nil }
        return StoreLocation(url: url, partitions: partitions(url: url, request: request))
    }

    /// Whether `response` to `request` may be stored at `location` (its status, its and the
    /// request's cache directives, in one of the location's partitions), its size aside: for a
    /// server that forwards on its own what it knows the cache will not keep.
    public func mayStore(_ response: HTTPResponse, for request: HTTPRequest, at location: StoreLocation) -> Bool {
        storingPartition(response, request: request, requestControl: CacheControl(request.headerFields),
                         url: location.url, partitions: location.partitions) != nil
    }

    /// The partition `response` is stored in, the most specific first; `nil` when none may keep it.
    func storingPartition(_ response: HTTPResponse, request: HTTPRequest, requestControl: CacheControl,
                                  url: URL, partitions: [Partition]) -> Partition? {
        partitions.reversed().first { partition in
            let policy = self.policy(partition.mode)
            return policy.isStorable(response, request: request, requestControl: requestControl)
                || policy.isStorableByOverride(response, url: url, request: request, requestControl: requestControl)
        }
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
        guard Self.answersAlone(request), let memory else { return nil }
        // With every hit revalidated, a request without `Cache-Control` (no `only-if-cached`,
        // no `max-stale`) is never answered by a stored response alone: no lookup tells more.
        if options.revalidatesEveryHit, !request.headerFields.contains(.cacheControl) { return nil }
        for partition in location.partitions {
            // A key the memory does not know could be on disk: only the store can tell.
            guard let variants = memory.variantsInMemory(forKey: partition.key) else { return nil }
            guard let matched = CachePolicy.selectedVariant(variants, request: request,
                                                            normalizingEncoding: options.normalizesAcceptEncoding) else { continue }
            guard let decision = decide(request, url: location.url, matched: matched, mode: partition.mode) else { return nil }
            memory.count(decision.outcome)
            return decision
        }
        return nil
    }

    /// Whether the store may answer `request` alone: a `GET` or `HEAD` without the caller's own
    /// validators (those go on to the server).
    private static func answersAlone(_ request: HTTPRequest) -> Bool {
        (request.method == .get || request.method == .head)
            && !request.headerFields.contains(.ifNoneMatch) && !request.headerFields.contains(.ifModifiedSince)
    }

    /// How `matched`, kept under `mode`'s rules, answers `request` now, with its freshness and
    /// outcome; `nil` when the request must go to the server.
    private func decide(_ request: HTTPRequest, url: URL, matched: CachedResponse, mode: CacheMode,
                        memoized: Bool = true) -> StoreDecision? {
        guard let (answer, freshness, outcome) = assess(
                matched, mode: mode, request: request, requestControl: CacheControl(request.headerFields), url: url,
                rangeValue: request.method == .get ? request.headerFields[.range] : nil, memoized: memoized),
              let outcome else { return nil }
        return StoreDecision(answer: answer, freshness: freshness, outcome: outcome)
    }

    /// Whether `matched` may answer `request` from the store (RFC 9111 §4.2–4.3): what it answers
    /// (itself, or the range asked for), its freshness, and the outcome — `hit`, `stale` where
    /// the request allows it, or `nil` when it must be validated first. `nil` altogether when it
    /// cannot answer this request (stored partial content that holds no asked-for range).
    func assess(_ matched: CachedResponse, mode: CacheMode, request: HTTPRequest, requestControl: CacheControl,
                url: URL, rangeValue: String?, memoized: Bool = true)
        -> (answer: CachedResponse, freshness: Freshness, outcome: CacheOutcome?)?
    {
        guard matched.status != 206 || rangeValue != nil,
              let answer = CachePolicy.servable(matched, rangeValue: rangeValue, request: request) else { return nil }
        let policy = self.policy(mode)
        // The facts and the caller's lifetime asked once: each is a lookup (the memo's, the
        // caller's closure) that freshness and reuse asked for again.
        let facts = memoized ? policy.facts(of: matched) : policy.computedFacts(of: matched)
        let override = policy.lifetimeOverride(for: url)
        let freshness = policy.freshness(of: matched, facts: facts, override: override, now: now())
        switch policy.reuse(matched, freshness: freshness, request: requestControl, overridden: override != nil,
                            control: facts.control) {
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
        guard let (stored, partition) = await storedVariant(in: partitions(url: url, request: request), request: request),
              stored.status != 206 else { return nil }
        let policy = self.policy(partition.mode)
        guard !policy.forbidsStale(stored, overridden: policy.overrides(url)) else { return nil }
        let (response, _) = await serve(stored, freshness: policy.freshness(of: stored, url: url, now: now()), outcome: .stale, head: true)
        return (response, stored.body)
    }


    /// ``answerFromStore(for:baseURL:)`` for a `GET` (`StoredResponseSource`: what
    /// `APIClient.storedAnswers(_:)` answers without sending a request through the chain).
    public func answerWithoutExchange(for request: HTTPRequest, baseURL: URL) async
        -> (response: HTTPResponse, body: Data, outcome: CacheOutcome)?
    {
        guard request.method == .get, let (response, body, outcome) = await answerFromStore(for: request, baseURL: baseURL),
              let body else { return nil }
        return (response, body, outcome)
    }

    /// ``answerWithoutExchange(for:baseURL:)`` for each of `requests` (at `urls`), after one read
    /// of every key they are looked up by (``CacheStore/preload(keys:)``): each request's keys are
    /// hashed once, for the read and the answer. What the read did not find is kept too, so the
    /// requests left to send find that out from memory when the chain looks them up.
    public func answersWithoutExchange(for requests: [HTTPRequest], urls: [URL], baseURL: URL) async
        -> [(response: HTTPResponse, body: Data, outcome: CacheOutcome)?]
    {
        let locations = zip(requests, urls).map { request, url in
            request.method == .get ? StoreLocation(url: url, partitions: partitions(url: url, request: request)) : nil
        }
        try? await store.preload(keys: locations.flatMap { $0?.partitions.map(\.key) ?? [] })
        var answers: [(response: HTTPResponse, body: Data, outcome: CacheOutcome)?] = []
        answers.reserveCapacity(requests.count)
        for (request, location) in zip(requests, locations) {
            guard let location, Self.answersAlone(request),
                  let (response, body, outcome) = await answerFromStore(for: request, at: location, memoized: false),
                  let body
            else {
                answers.append(nil)
                continue
            }
            answers.append((response, body, outcome))
        }
        return answers
    }

    /// Reads what the store holds for `requests` in one go (``CacheStore/preload(keys:)``):
    /// every key their lookups will ask for, credential partitions included.
    public func preload(_ requests: [HTTPRequest], baseURL: URL) async {
        let keys = requests.flatMap { request -> [String] in
            guard request.method == .get || request.method == .head, let url = request.url(relativeTo: baseURL)
            else { return [] }
            return partitions(url: url, request: request).map(\.key)
        }
        try? await store.preload(keys: keys)
    }

    // MARK: - Validation (§4.3)

    private func revalidate(
        _ stored: CachedResponse, mode: CacheMode, freshness: Freshness, request: HTTPRequest, requestControl: CacheControl,
        baseURL: URL, url: URL, partitions: [Partition],
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let policy = self.policy(mode)
        let conditional = CachePolicy.conditional(request, for: stored)
        let requestTime = now()
        let response: HTTPResponse
        var responseBody: HTTPBody?
        do {
            (response, responseBody) = try await next(conditional, nil, baseURL)
        } catch {
            if !(error is CancellationError), !Task.isCancelled,
               policy.mayServeStaleOnError(stored, freshness: freshness, request: requestControl, overridden: policy.overrides(url),
                                    disconnected: true) {
                let reason = StaleReason.failed(APIError.wrapping(error, url: url))
                return await serve(stored, freshness: freshness, outcome: .stale, head: false, staleReason: reason)
            }
            throw error
        }
        if response.status.code == 304 {
            await HTTPBody.discard(responseBody)
            let (updated, freshness) = policy.revalidated(stored, notModified: response.headerFields, requestTime: requestTime,
                                                          responseTime: now(), url: url, now: now())
            await keepFreshened(updated)
            return await serve(updated, freshness: freshness, outcome: .revalidated, head: false)
        }
        if response.status.code >= 400, !policy.forbidsStale(stored, overridden: policy.overrides(url)) {
            // The origin's failure, when the options name it (`--serve-stale`): the stored response
            // answers, with the origin's rate-limit fields.
            var peeked = Data()
            if options.serveStaleOn.needsBody(response) {
                let (data, rest) = try await Self.prefix(of: responseBody, limit: StaleStatuses.bodyPeek)
                peeked = data
                responseBody = rest == nil ? HTTPBody(data) : Self.concatenate(data, rest)
            }
            if options.serveStaleOn.contains(response, body: peeked) {
                await HTTPBody.discard(responseBody)
                let reason = StaleReason.status(response.status, url: Redaction.redact(url))
                return await serve(stored, freshness: freshness, outcome: .stale, head: false, staleReason: reason,
                                   passing: Self.rateLimitFields(of: response))
            }
        }
        if response.status.code >= 500,
           policy.mayServeStaleOnError(stored, freshness: freshness, request: requestControl, overridden: policy.overrides(url)) {
            await HTTPBody.discard(responseBody)
            let reason = StaleReason.status(response.status, url: Redaction.redact(url))
            return await serve(stored, freshness: freshness, outcome: .stale, head: false, staleReason: reason)
        }
        // A new answer that breaks off mid-body, or whose JSON is not JSON, is a failed refresh too:
        // it must not replace the stored response, which is served instead when it may be.
        // A body that breaks off is the connection's failure; a body that is not JSON is the
        // server's answer (served stale only where a 5xx would be).
        let serveStored = { (reason: StaleReason) in
            await serve(stored, freshness: freshness, outcome: .stale, head: false, staleReason: reason)
        }
        let staleOnBadJSON = policy.mayServeStaleOnError(stored, freshness: freshness, request: requestControl, overridden: policy.overrides(url))
        let staleOnBrokenBody = policy.mayServeStaleOnError(stored, freshness: freshness, request: requestControl,
                                                     overridden: policy.overrides(url), disconnected: true)
        do {
            return try await storeIfAllowed(response, body: responseBody, request: request, requestControl: requestControl,
                                            url: url, requestTime: requestTime, partitions: partitions,
                                            replacing: stored.key, fallback: staleOnBadJSON ? serveStored : nil)
        } catch {
            guard staleOnBrokenBody, !(error is CancellationError), !Task.isCancelled else { throw error }
            return await serveStored(.failed(APIError.wrapping(error, url: url)))
        }
    }



    /// Stores `updated`, a stored response freshened by a `304` (or by a `200` to `HEAD`; new
    /// times and fields, the same body): with a store that has a memory, as the event loop's
    /// revalidations do (``MemoryLookup/freshenWithoutWaiting(_:)``: in memory alone when the key
    /// was written a short while ago, until the store is flushed), so that revalidations of a
    /// hot key do not rewrite its row, body and all, each time.
    private func keepFreshened(_ updated: CachedResponse) async {
        if let memory {
            memory.freshenWithoutWaiting(updated)
        } else {
            try? await store.save(updated)
        }
    }

    private func revalidateInBackground(
        _ stored: CachedResponse, request: HTTPRequest, baseURL: URL, url: URL, partitions: [Partition],
        transport: any ClientTransport
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
                await cache.keepFreshened(updated)
            } else if let (_, rest) = try? await cache.storeIfAllowed(
                response, body: body, request: request, requestControl: CacheControl(request.headerFields),
                url: url, requestTime: requestTime, partitions: partitions, replacing: stored.key) {
                await HTTPBody.discard(rest)
            }
        }
    }

    // MARK: - Storing (§3)



    /// Stores the response when the rules allow, in the first of `partitions` (from the last:
    /// the cache's own, then a credential's) whose rules allow it. A body that claims to be JSON
    /// but does not parse is never stored (``Options/rejectsInvalidJSON``); with a `fallback` (the
    /// stored response, served stale) that is answered instead.
    /// - Parameters:
    ///   - replacing: the key of the stored response this one replaces: removed when the new one
    ///     is stored under another key (a credential's answer that became shareable).
    ///   - keepsPartial: whether a `206` may be stored (not when it would replace a complete
    ///     stored response).
    private func storeIfAllowed(
        _ response: HTTPResponse, body: HTTPBody?, request: HTTPRequest, requestControl: CacheControl,
        url: URL, requestTime: Date, partitions: [Partition], replacing: String? = nil, keepsPartial: Bool = true,
        fallback: ((StaleReason) async -> (HTTPResponse, HTTPBody?))? = nil
    ) async throws -> (HTTPResponse, HTTPBody?) {
        ExchangeReport.current?.recordCache(.miss)
        try? await store.record(.miss)
        guard let partition = storingPartition(response, request: request, requestControl: requestControl, url: url,
                                               partitions: partitions) else { return (response, body) }
        let (data, rest) = try await Self.prefix(of: body, limit: options.maxEntryBytes)
        guard rest == nil else {
            return (response, Self.concatenate(data, rest))
        }
        // A `206` never replaces a complete stored response, and is kept only when its body is
        // the range its `Content-Range` names.
        if response.status.code == 206,
           !keepsPartial || !CachePolicy.isStorablePartial(response.headerFields, bodyCount: data.count) {
            return (response, .whole(data))
        }
        if options.rejectsInvalidJSON, let unusable = await Self.unusableBody(data, fields: response.headerFields, url: url,
                                                                               limit: 64 * 1024 * 1024) {
            if let fallback { return await fallback(unusable) }
            return (response, .whole(data))
        }
        let entry = entry(response, body: data, request: request, url: url, partition: partition, requestTime: requestTime)
        if let replacing, replacing != partition.key { try? await store.remove(key: replacing) }
        try? await store.save(entry)
        return (response, .whole(data))
    }

    /// `response` to `request`, with `body`, as it is stored in `partition`.
    func entry(_ response: HTTPResponse, body: Data, request: HTTPRequest, url: URL, partition: Partition,
               requestTime: Date) -> CachedResponse {
        let control = policy(partition.mode).responseControl(response.headerFields)
        return CachedResponse(
            key: partition.key,
            variant: CacheKey.variant(varyNames: CacheKey.varyNames(response.headerFields), request: request.headerFields,
                                      normalizingEncoding: options.normalizesAcceptEncoding),
            url: Redaction.redact(url), status: response.status.code,
            headers: CachePolicy.storableFields(response.headerFields, control: control, mode: partition.mode),
            body: body, requestTime: requestTime, responseTime: now())
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

    /// Why a body must not be stored, if it must not: declared JSON but not parsing, or encoded
    /// (`Content-Encoding`) and not decoding. An encoded body is judged by what it decodes to when a
    /// content decoder sits above the cache (``ContentDecoding/decoder``, up to `limit` decoded
    /// bytes); otherwise, or past the limit, it is not judged.
    static func unusableBody(_ data: Data, fields: HTTPFields, url: URL, limit: Int) async -> StaleReason? {
        var body = data
        if let coding = fields.combinedValue(.contentEncoding), coding.trimmingOWS().lowercased() != "identity" {
            do {
                guard let decoded = try await ContentDecoding.decoder?.decode(data, fields: fields, limit: limit) else { return nil }
                body = decoded
            } catch let failure as ContentDecodingFailure {
                return .failed(.undecodableBody(coding: failure.coding, reason: failure.reason, url: Redaction.redact(url)))
            } catch {
                return nil
            }
        }
        return isBrokenJSON(body, fields: fields) ? .invalidJSON(url: Redaction.redact(url)) : nil
    }

    /// Whether `data` (decoded) is declared JSON (`application/json`, `…+json`) but does not parse.
    static func isBrokenJSON(_ data: Data, fields: HTTPFields) -> Bool {
        guard let type = fields.combinedValue(.contentType)?.split(separator: ";").first?.trimmingOWS().lowercased(),
              type == "application/json" || type.hasSuffix("+json") else { return false }
        // The one-pass check answers the common case; what it is not sure of, the parser decides.
        if data.withUnsafeBytes({ JSONSyntax.isSurelyValid($0) }) { return false }
        return (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) == nil
    }

    static func concatenate(_ head: Data, _ rest: HTTPBody.AsyncIterator?) -> HTTPBody {
        HTTPBody(Concatenated(head: head, rest: IteratorBox(rest)), length: .unknown, iterationBehavior: .single)
    }

    // MARK: - Serving

    /// - Parameter passing: fields of the origin's failed answer that replace the stored ones
    ///   (its rate-limit fields, when a stored response answers in its place).
    private func serve(_ stored: CachedResponse, freshness: Freshness, outcome: CacheOutcome, head: Bool,
                       staleReason: StaleReason? = nil, passing: HTTPFields = [:]) async -> (HTTPResponse, HTTPBody?) {
        try? await store.record(outcome)
        ExchangeReport.current?.recordCache(outcome, staleReason: staleReason)
        var response = Self.response(stored, freshness: freshness)
        for name in Set(passing.map(\.name)) { response.headerFields[values: name] = passing[values: name] }
        return (response, head ? nil : .whole(stored.body))
    }

    /// The fields of `response` that say how much of a rate limit is left: `X-RateLimit-*` and
    /// `Retry-After`.
    static func rateLimitFields(of response: HTTPResponse) -> HTTPFields {
        var fields = HTTPFields()
        for field in response.headerFields
        where field.name.canonicalName.hasPrefix("x-ratelimit-") || field.name == .retryAfter {
            fields.append(field)
        }
        return fields
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
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, url: URL, stored: CachedResponse, mode: CacheMode,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let policy = self.policy(mode)
        let requestTime = now()
        let (response, responseBody) = try await next(request, body, baseURL)
        if response.status.code == 200, CachePolicy.headResponse(response.headerFields, describes: stored) {
            await HTTPBody.discard(responseBody)
            let (updated, freshness) = policy.revalidated(stored, notModified: response.headerFields, requestTime: requestTime,
                                                          responseTime: now(), url: url, now: now())
            await keepFreshened(updated)
            return await serve(updated, freshness: freshness, outcome: .revalidated, head: true)
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
