import Foundation
import Freshet
import HTTPTypes
import Synchronization

// Revalidations a server sends on its own, without suspending: for a proxy that forwards a
// conditional request on its event loop (`freshet proxy --revalidate always`, where every hit is
// one) instead of through the middleware chain. The cache still decides everything: which stored
// response must be validated and with what, what a `304` makes of it, whether a failure may be
// answered with it stale, and whether a new answer is kept. One revalidation per key at a time, as
// in the chain: a claimed key makes the chain's callers for it wait, and look in the store after.

extension CacheMiddleware {
    /// A stored response in the memory tier that must be validated before it answers, claimed for
    /// one conditional request (``revalidationFromMemory(for:at:)``). End it with one of
    /// ``revalidated(_:notModified:)``, ``staleAfterFailure(_:)`` or
    /// ``storeWithoutWaiting(_:body:for:request:)`` — or ``end()`` when none applies; it ends
    /// by itself, at the latest, when released.
    public final class Revalidation: Sendable {
        /// The stored response being validated.
        public let stored: CachedResponse
        /// The validators the conditional request carries (`If-None-Match`, `If-Modified-Since`).
        public let validators: HTTPFields
        let freshness: Freshness
        let partition: Partition
        let location: StoreLocation
        let requestControl: CacheControl
        let requestTime: Date
        private let fills: FillLocks
        private let ended = Atomic<Bool>(false)

        init(stored: CachedResponse, validators: HTTPFields, freshness: Freshness, partition: Partition,
             location: StoreLocation, requestControl: CacheControl, requestTime: Date, fills: FillLocks) {
            self.stored = stored
            self.validators = validators
            self.freshness = freshness
            self.partition = partition
            self.location = location
            self.requestControl = requestControl
            self.requestTime = requestTime
            self.fills = fills
        }

        /// Lets the callers waiting for this key go on (they look in the store). Only the first
        /// call counts.
        public func end() {
            guard !ended.exchange(true, ordering: .acquiringAndReleasing) else { return }
            fills.finish(partition.key)
        }

        deinit { end() }
    }

    /// The stored response in the memory tier that must be validated before it answers `request`
    /// (a `GET` without `Cache-Control`, validators or `Range`; not when the cache rejects
    /// invalid JSON, which the chain judges),
    /// claimed: no other revalidation or fill of its key runs until it ends. `nil` when the memory
    /// does not know, the stored response is fresh or may be served stale while revalidating, it
    /// has no validator (a conditional request could not be answered with a `304`), or its key is
    /// being filled or revalidated already (then the chain waits for that one).
    public func revalidationFromMemory(for request: HTTPRequest, at location: StoreLocation) -> Revalidation? {
        // A cache that judges JSON bodies stores through the chain, which can answer stale for one.
        guard request.method == .get, !options.rejectsInvalidJSON, let memory else { return nil }
        let fields = request.headerFields
        guard !fields.contains(.range), !fields.contains(.ifNoneMatch), !fields.contains(.ifModifiedSince),
              !fields.contains(.cacheControl) else { return nil }
        for partition in location.partitions {
            guard let variants = memory.variantsInMemory(forKey: partition.key) else { return nil }
            guard let matched = CachePolicy.selectedVariant(variants, request: request,
                                                            normalizingEncoding: options.normalizesAcceptEncoding) else { continue }
            let requestControl = CacheControl(request.headerFields)
            guard matched.status != 206,
                  let (stored, freshness, outcome) = assess(matched, mode: partition.mode, request: request,
                                                            requestControl: requestControl, url: location.url, rangeValue: nil),
                  outcome == nil else { return nil }
            let policy = self.policy(partition.mode)
            if backgroundTransport != nil, !freshness.isFresh, let window = policy.storedControl(stored).staleWhileRevalidate,
               freshness.staleness <= Double(window), !policy.forbidsStale(stored, overridden: policy.overrides(location.url)) {
                return nil
            }
            var validators = HTTPFields()
            if let etag = stored.headers.combinedValue(.eTag) { validators[.ifNoneMatch] = etag }
            if let lastModified = stored.headers.combinedValue(.lastModified) { validators[.ifModifiedSince] = lastModified }
            guard !validators.isEmpty, fills.claim(partition.key) else { return nil }
            return Revalidation(stored: stored, validators: validators, freshness: freshness, partition: partition,
                                location: location, requestControl: requestControl, requestTime: now(), fills: fills)
        }
        return nil
    }

    /// The stored response of `revalidation` updated by the origin's `304` with `fields` (RFC 9111
    /// §4.3.4), kept in memory and written behind (``MemoryLookup/freshenWithoutWaiting(_:)``);
    /// ends the revalidation. It answers as `revalidated`.
    public func revalidated(_ revalidation: Revalidation, notModified fields: HTTPFields) -> StoreDecision {
        let now = now()
        let (updated, freshness) = policy(revalidation.partition.mode).revalidated(
            revalidation.stored, notModified: fields, requestTime: revalidation.requestTime, responseTime: now,
            url: revalidation.location.url, now: now)
        memory?.freshenWithoutWaiting(updated)
        revalidation.end()
        memory?.count(.revalidated)
        return StoreDecision(answer: updated, freshness: freshness, outcome: .revalidated)
    }

    /// How a revalidation's answer with an error status is answered (as the chain answers it).
    public enum FailureAnswer: Sendable {
        /// The stored response, stale, with `fields` of the origin's answer in place of its own
        /// (its rate-limit fields, when ``Options/serveStaleOn`` names the failure); the
        /// revalidation has ended.
        case stale(StoreDecision, fields: HTTPFields)
        /// The first `limit` bytes of the answer's body tell (a `403` that may be a rate limit):
        /// ask again with them, or with the whole body when it is shorter.
        case needsBody(limit: Int)
        /// The origin's answer is the client's.
        case origin
    }

    /// Whether the origin's `response` to `revalidation` (with the first bytes of its `body`, when
    /// they were asked for) is answered with the stored response, stale: a failure that
    /// ``Options/serveStaleOn`` names, or a `5xx` where the stored response allows it.
    public func answer(forFailure response: HTTPResponse, body: Data?, of revalidation: Revalidation) -> FailureAnswer {
        guard response.status.code >= 400 else { return .origin }
        let policy = self.policy(revalidation.partition.mode)
        let overridden = policy.overrides(revalidation.location.url)
        if !policy.forbidsStale(revalidation.stored, overridden: overridden) {
            if body == nil, options.serveStaleOn.needsBody(response) { return .needsBody(limit: StaleStatuses.bodyPeek) }
            if options.serveStaleOn.contains(response, body: body ?? Data()) {
                return .stale(stale(revalidation), fields: Self.rateLimitFields(of: response))
            }
        }
        if response.status.code >= 500,
           policy.mayServeStaleOnError(revalidation.stored, freshness: revalidation.freshness,
                                       request: revalidation.requestControl, overridden: overridden) {
            return .stale(stale(revalidation), fields: [:])
        }
        return .origin
    }

    /// The stored response of `revalidation`, stale, when it may answer for an origin that could
    /// not be reached or broke off the exchange (no status came); ends the revalidation then.
    /// `nil`: the failure is the answer.
    public func staleAfterFailure(_ revalidation: Revalidation) -> StoreDecision? {
        let policy = self.policy(revalidation.partition.mode)
        guard policy.mayServeStaleOnError(revalidation.stored, freshness: revalidation.freshness,
                                          request: revalidation.requestControl,
                                          overridden: policy.overrides(revalidation.location.url), disconnected: true)
        else { return nil }
        return stale(revalidation)
    }

    /// The stored response of `revalidation` answering stale: counted, and the revalidation ended.
    private func stale(_ revalidation: Revalidation) -> StoreDecision {
        revalidation.end()
        memory?.count(.stale)
        let freshness = policy(revalidation.partition.mode).freshness(of: revalidation.stored,
                                                                      url: revalidation.location.url, now: now())
        return StoreDecision(answer: revalidation.stored, freshness: freshness, outcome: .stale)
    }

    /// Whether the origin's new `response` to the revalidation could replace the stored one, its
    /// body aside (a server then keeps its body, up to ``Options/maxEntryBytes``, for
    /// ``storeWithoutWaiting(_:body:for:request:)``).
    public func mayStore(_ response: HTTPResponse, for revalidation: Revalidation, request: HTTPRequest) -> Bool {
        storingPartition(response, for: revalidation, request: request) != nil
    }

    /// Counts the origin's new `response` to the revalidation as a miss, and stores it with `body`
    /// in place of the stored response when the rules allow (see ``mayStore(_:for:request:)``);
    /// ends the revalidation. `request` is the request as it was forwarded (the fields `Vary` names
    /// are read from it).
    public func storeWithoutWaiting(_ response: HTTPResponse, body: Data?, for revalidation: Revalidation,
                                    request: HTTPRequest) {
        defer { revalidation.end() }
        memory?.count(.miss)
        guard let body, body.count <= options.maxEntryBytes,
              let partition = storingPartition(response, for: revalidation, request: request) else { return }
        let entry = entry(response, body: body, request: request, url: revalidation.location.url, partition: partition,
                          requestTime: revalidation.requestTime)
        memory?.saveWithoutWaiting(entry)
        if partition.key != revalidation.stored.key {
            // A credential's answer that became shareable: the credential's copy goes.
            let (store, replaced) = (store, revalidation.stored.key)
            Task { try? await store.remove(key: replaced) }
        }
    }

    private func storingPartition(_ response: HTTPResponse, for revalidation: Revalidation, request: HTTPRequest) -> Partition? {
        guard response.status.code != 206, !options.rejectsInvalidJSON else { return nil }
        return storingPartition(response, request: request, requestControl: revalidation.requestControl,
                                url: revalidation.location.url, partitions: revalidation.location.partitions)
    }
}
