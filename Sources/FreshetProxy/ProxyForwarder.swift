import Foundation
import Freshet
import FreshetCache
import FreshetTransports
import HTTPTypes
import OpenAPIRuntime
import Synchronization

/// The UI-free heart of `freshet proxy`: forwards one raw request to the origin through
/// Freshet's middleware stack — with the RFC 9111 cache in it — and shapes the answer for the
/// client. It knows nothing of the HTTP server in front of it.
///
/// The outbound chain, outermost first: retry → cache → rate-limit gate → transport. It differs
/// from the apps' chain (docs/ARCHITECTURE.md §2, §4) on purpose:
/// - no redirect middleware: a reverse proxy passes `3xx` through to the client;
/// - retry only when no connection to the origin could be made, never on a status or after the
///   request may have reached the origin: the origin's `5xx` reaches the client as the origin sent
///   it, and the origin sees each request once;
/// - when the origin cannot be reached (or drops the connection) and a stored response may be
///   served stale (no `must-revalidate`, `proxy-revalidate`, `s-maxage` or `no-cache`), it is
///   served, as RFC 9111 §4.2.4 allows a disconnected cache; a `5xx` is passed through instead;
/// - no coalescing middleware: it buffers whole bodies, which a proxy streams; the cache answers
///   repeated requests instead;
/// - the rate-limit gate sits inside the cache, so a fresh hit is served even when the budget
///   is spent, and it never rewrites the origin's own `403`/`429`.
///
/// What the client gets: the origin's status, end-to-end header fields and body, without
/// hop-by-hop fields, with `Via: 1.1 freshet`, the `Age` of cache hits, an
/// `X-Cache: HIT|MISS|REVALIDATED|STALE` field saying how the cache answered (it replaces an
/// origin's own `X-Cache`; anything the cache did not answer from its store is `MISS`), and the
/// origin's `Date` (one is added when the origin sent none). A client's `If-None-Match` or
/// `If-Modified-Since` is answered from a fresh stored response (`304` when it matches). A request
/// the store can answer (a fresh hit) never enters the origin-side chain. How the cache answered
/// comes from `ExchangeReport`, never from a header field. When the origin cannot be
/// reached the answer is `502`, when it does not answer in time `504`, with a short plain-text body.
public struct ProxyForwarder: Sendable {
    /// What an operator chooses beyond the origin and the store.
    public struct Options: Sendable {
        /// How answers to requests with credentials are kept (`--partition`): `.none` is RFC
        /// 9111's shared cache, `.credential` adds a partition per credential (see
        /// `CachePartitioning` in FreshetCache).
        public var partitioning: CachePartitioning
        /// Revalidate every stored answer before it is served (`--revalidate always`): for origins
        /// whose `304`s cost nothing, like GitHub's to authorized requests.
        public var revalidatesEveryHit: Bool
        /// The origin's statuses on which a stored answer is served stale instead (`--serve-stale`);
        /// an unreachable origin always is, where the stored answer allows it.
        public var serveStaleOn: StaleStatuses
        /// The proxy's address as clients know it (`--public-url`), for the origin's absolute URLs
        /// in `Link`, `Location` and `Content-Location`; `nil`: `http://` and the `Host` the client sent.
        public var publicURL: URL?
        /// Receives the proxy's one-time notices (a `private` answer that `.credential` partitions
        /// would have cached).
        public var notice: (@Sendable (String) -> Void)?
        /// How long a request waits for another one fetching or revalidating the same key before
        /// it goes to the origin itself (default 5 s).
        public var fillWait: Duration

        /// Creates options; the defaults are RFC 9111's shared cache.
        public init(partitioning: CachePartitioning = .none, revalidatesEveryHit: Bool = false,
                    serveStaleOn: StaleStatuses = [], publicURL: URL? = nil,
                    notice: (@Sendable (String) -> Void)? = nil, fillWait: Duration = .seconds(5)) {
            self.partitioning = partitioning
            self.fillWait = fillWait
            self.revalidatesEveryHit = revalidatesEveryHit
            self.serveStaleOn = serveStaleOn
            self.publicURL = publicURL
            self.notice = notice
        }
    }

    /// The origin every request is forwarded to (it may carry a path prefix, like `…/v0`).
    public let origin: URL
    /// The operator's choices.
    public let options: Options
    /// The cache in the chain.
    public let cache: CacheMiddleware
    /// Where the proxy counts its requests and times the origin, when it does.
    public let metrics: ProxyMetrics?
    private let send: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    private let locations = TargetLocations()
    private let originPrefix: String
    private let publicBase: String?
    private let privateNotice = OneTime()
    /// The rate-limit gate of the chain, which the event loop's forwarding goes through too.
    let gate: ProxyRateLimitGate
    /// The way to the origin for forwarding on the event loop (``pass(_:)``): the transport's,
    /// when it is an ``HTTP1Transport`` reaching the origin without a forward proxy.
    let passRoute: PassRoute?
    /// The targets whose last answer the cache could not keep (see ``pass(_:)``).
    let passMarks = PassMarks()

    /// The retry policy of the proxy: one more attempt when no connection could be made
    /// (idempotent methods with no body or a replayable one only), never on a status, a timeout
    /// or a connection lost mid-exchange.
    public static let retryPolicy = RetryMiddleware.Policy(
        maxAttempts: 2, baseDelay: .milliseconds(100), maxDelay: .seconds(1), retryableStatuses: [],
        retriesAfterSending: false)

    /// The targeted cache-control fields the proxy obeys, first present wins (RFC 9213):
    /// `CDN-Cache-Control`, then `Surrogate-Control`. When one is present it replaces
    /// `Cache-Control` and `Expires` for the proxy's own caching; all are passed on unchanged.
    public static let targetedFields = [HTTPField.Name("CDN-Cache-Control")!, HTTPField.Name("Surrogate-Control")!]

    /// Creates a forwarder.
    /// - Parameters:
    ///   - origin: an `http` or `https` URL; a path in it prefixes every request path.
    ///   - store: where the cache keeps responses (usually the `SQLiteCacheStore` of FRESHET_HOME).
    ///   - mode: `.shared` for a proxy several users share (the default), `.private` for one user.
    ///   - maxEntryBytes: the largest body the cache stores; larger bodies stream through unstored.
    ///   - transport: sends to the origin. It must keep every header line of the response.
    ///   - retry: the retry middleware (default: ``retryPolicy``).
    ///   - metrics: counts requests and times the origin (see ``ProxyMetrics``), when given.
    ///   - options: partitions, revalidation, serving stale, the public URL (see ``Options``).
    public init(origin: URL, store: any CacheStore, mode: CacheMode = .shared,
                maxEntryBytes: Int = CacheMiddleware.Options().maxEntryBytes,
                transport: any ClientTransport,
                retry: RetryMiddleware = RetryMiddleware(policy: ProxyForwarder.retryPolicy),
                metrics: ProxyMetrics? = nil, options: Options = .init()) {
        self.origin = origin
        self.options = options
        self.metrics = metrics
        originPrefix = ProxyDelivery.prefix(origin)
        publicBase = options.publicURL.map(ProxyDelivery.prefix)
        passRoute = (transport as? HTTP1Transport).flatMap { http1 in
            http1.pool.loopRoute(to: origin).map {
                PassRoute(route: $0, headTimeout: http1.headTimeout, readTimeout: http1.readTimeout)
            }
        }
        let transport: any ClientTransport = metrics.map { MeasuredTransport(transport: transport, metrics: $0) } ?? transport
        let gate = ProxyRateLimitGate()
        self.gate = gate
        let gated = GatedTransport(gate: gate, transport: transport)
        cache = CacheMiddleware(
            store: store, options: .init(mode: mode, serveStaleOnFailure: false, serveStaleWhenDisconnected: true,
                           maxEntryBytes: maxEntryBytes, targetedFields: ProxyForwarder.targetedFields,
                           partitioning: options.partitioning, revalidatesEveryHit: options.revalidatesEveryHit,
                           serveStaleOn: options.serveStaleOn, rejectsInvalidJSON: false,
                           fillWait: options.fillWait, normalizesAcceptEncoding: true),
            backgroundTransport: gated)
        send = APIClient.chain(middlewares: [retry, cache, gate], transport: transport, operationID: "proxy")
    }

    /// Forwards `request` (its `path` is the client's request target) with `body`, and returns
    /// the answer for the client. It never throws: failures become `4xx`/`5xx` answers.
    ///
    /// Interim (`1xx`) responses of the origin, when the transport reports them, go to the calling
    /// task's `InterimResponses.handler` before this returns; they are never stored.
    public func forward(_ request: HTTPRequest, body: HTTPBody?) async -> ProxyResponse {
        guard let outbound = Self.outbound(request) else {
            return Self.generated(.badRequest, "freshet proxy: the request target must be a path like /a/b?c=d")
        }
        guard let url = outbound.url(relativeTo: origin) else {
            return Self.generated(.badRequest, "freshet proxy: the request target \(outbound.path?.prefix(200) ?? "") is not a valid URL path")
        }
        let delivery = delivery(for: request)
        if body == nil, let local = await answerFromStore(outbound) {
            return delivery.shape(local)
        }
        do {
            let ((response, responseBody), report) = try await ExchangeReport.collect {
                try await send(outbound, body, origin)
            }
            let outcome = report.cache ?? .miss
            if outcome == .miss {
                noticeUncachedPrivate(response, to: outbound)
                markIfUnkept(response, request: request, outbound: outbound)
            }
            return delivery.shape(Self.clientResponse(response, body: responseBody, outcome: outcome))
        } catch {
            return Self.failure(error, url: url)
        }
    }

    /// What `request`'s client is sent beyond the answer (see ``ProxyDelivery``).
    func delivery(for request: HTTPRequest) -> ProxyDelivery {
        ProxyDelivery(request: request, originPrefix: originPrefix, publicBase: publicBase)
    }

    /// Says once that a `private` answer to a request with a credential passed uncached, and
    /// how to cache such answers.
    private func noticeUncachedPrivate(_ response: HTTPResponse, to request: HTTPRequest) {
        guard let notice = options.notice, cache.options.mode == .shared, options.partitioning == .none,
              request.headerFields[.authorization] != nil || request.headerFields[.cookie] != nil,
              CacheControl(response.headerFields).has("private"),
              privateNotice.first() else { return }
        notice("note: a private answer to a request with credentials was not cached (a shared cache may not keep it); "
            + "--partition credential caches such answers per credential")
    }

    /// The answer to `request` from the cache's store alone — a fresh hit, stale where the
    /// request allows, or `304` to a validation request that matches — or `nil` when the request
    /// must go to the origin (then call ``forward(_:body:)``). No origin-side work is done: no
    /// retry, rate-limit or transport, no task. Only for requests without a body.
    public func storedAnswer(_ request: HTTPRequest) async -> ProxyResponse? {
        guard request.method == .get || request.method == .head, let outbound = Self.outbound(request) else { return nil }
        return await answerFromStore(outbound).map(delivery(for: request).shape)
    }

    /// The request as it goes to the origin: the target in origin form, the forwardable fields,
    /// no `Expect`, and `Via`. `nil` when the target is not a path or an absolute http(s) URL.
    static func outbound(_ request: HTTPRequest) -> HTTPRequest? {
        guard let target = originForm(request.path) else { return nil }
        var outbound = HTTPRequest(method: request.method, scheme: nil, authority: nil, path: target,
                                   headerFields: ProxyHeaders.forwardable(request.headerFields))
        outbound.headerFields[.expect] = nil
        if request.method == .get || request.method == .head {
            // One stored representation for every client: gzip is asked for and decoded for clients
            // that do not take it. A range is of the bytes the client will get, so it asks for
            // what the client takes.
            let gzip = request.headerFields[.range] == nil || AcceptEncoding.acceptsGzip(request.headerFields)
            outbound.headerFields[.acceptEncoding] = gzip ? "gzip" : "identity"
        }
        outbound.headerFields.append(HTTPField(name: .via, value: ProxyHeaders.via))
        return outbound
    }

    // MARK: - Validation requests (RFC 9111 §4.3.2)

    /// A `GET` or `HEAD` with `If-None-Match` or `If-Modified-Since` (and no `Range`).
    static func isValidationRequest(_ request: HTTPRequest) -> Bool {
        (request.method == .get || request.method == .head) && !request.headerFields.contains(.range)
            && (request.headerFields.contains(.ifNoneMatch) || request.headerFields.contains(.ifModifiedSince))
    }

    /// Answers from the store alone, when the cache may (a fresh hit, or stale where the request
    /// allows): the stored response, or for a client's validation request `304` when its
    /// validators match the stored response. `nil` sends the request on to the origin — with the
    /// client's own validators, when the store cannot answer them.
    private func answerFromStore(_ request: HTTPRequest) async -> ProxyResponse? {
        guard request.method == .get || request.method == .head else { return nil }
        let answer = await cache.answerFromStore(for: Self.probe(request), baseURL: origin)
        return answer.map { Self.shaped($0, for: request) }
    }

    /// What the memory tier answers, without suspending (see ``answerFromMemory(_:)``).
    enum MemoryAnswer: Sendable {
        /// The stored response, whole, as a hit (or stale where the request allowed it): the
        /// server sends `PreparedAnswers.storedHead(_:)` with `Age: age` and `X-Cache`, and the
        /// stored body (none to a `HEAD`).
        case stored(CachedResponse, age: Int, outcome: CacheOutcome)
        /// Any other answer from the store (a `304` to a validation request, a range), shaped.
        case response(ProxyResponse)
    }

    /// ``storedAnswer(_:)`` without suspending, from the memory tier of the cache's store: for a
    /// server answering hits on its event loop. `nil` when the memory cannot answer (then ask
    /// ``storedAnswer(_:)`` or ``forward(_:body:)``).
    ///
    /// A plain `GET` or `HEAD` is looked up as the client sent it, by a location kept per request
    /// target (the proxy's shared cache keys on the URL alone), and answered with the stored
    /// response itself so the server can keep its head ready to write. Such a request never
    /// matches a variant it would not match as forwarded: stored variants are made from
    /// forwarded requests, which lack hop-by-hop fields and carry `Via`.
    func answerFromMemory(_ request: HTTPRequest) -> MemoryAnswer? {
        guard request.method == .get || request.method == .head else { return nil }
        let delivery = delivery(for: request)
        if !request.headerFields.contains(.range), !Self.isValidationRequest(request), let target = request.path {
            guard let location = location(of: request, target: target),
                  let decision = cache.decisionFromMemory(for: request, at: location) else { return nil }
            return Self.memoryAnswer(decision, delivery: delivery, request: request)
        }
        guard let outbound = Self.outbound(request), let location = cache.location(of: outbound, baseURL: origin),
              let decision = cache.decisionFromMemory(for: Self.probe(outbound), at: location) else { return nil }
        return Self.whole(delivery.shape(Self.shaped((decision.response, decision.answer.body, decision.outcome), for: outbound)))
    }

    /// The store's `decision` for a plain `GET` or `HEAD` as the event loop answers it: the stored
    /// response itself when its head can be the prepared one, else shaped for this client; `nil`
    /// when the shaped body would stream.
    static func memoryAnswer(_ decision: CacheMiddleware.StoreDecision, delivery: ProxyDelivery,
                             request: HTTPRequest) -> MemoryAnswer? {
        if isSentWhole(decision.answer), delivery.leavesAlone(decision.answer.headers) {
            return .stored(decision.answer, age: decision.freshness.ageSeconds, outcome: decision.outcome)
        }
        return whole(delivery.shape(shaped((decision.response, decision.answer.body, decision.outcome), for: request)))
    }

    /// `response` as a memory answer when its body is whole in memory (the event loop writes it in
    /// one go); `nil` when it streams (a large body decoded as it goes), for the async path.
    private static func whole(_ response: ProxyResponse) -> MemoryAnswer? {
        response.body != nil && response.complete == nil ? nil : .response(response)
    }

    /// Where the store keeps the answers to `request` (its target in origin form), kept per
    /// target when it depends on the target alone (a shared cache's key for a request without
    /// credentials, or any request when credentials are not partitioned).
    func location(of request: HTTPRequest, target: String) -> CacheMiddleware.StoreLocation? {
        // Captures the cache and the origin, not `self`: a closure over the whole forwarder
        // copies it (and retains its every reference) on each hit.
        let (cache, origin) = (cache, origin)
        let find = { () -> CacheMiddleware.StoreLocation? in
            guard let path = Self.originForm(target) else { return nil }
            var located = request
            located.path = path
            return cache.location(of: located, baseURL: origin)
        }
        return keysOnTarget(request) ? locations.location(of: target, otherwise: find) : find()
    }

    /// Whether the store keeps the answers to `request` under its target alone: a shared cache's
    /// key for a request without credentials, or for any request when credentials are not
    /// partitioned.
    func keysOnTarget(_ request: HTTPRequest) -> Bool {
        cache.options.mode == .shared
            && (options.partitioning == .none
                || (!request.headerFields.contains(.authorization) && !request.headerFields.contains(.cookie)))
    }

    /// Whether `stored`, answering whole from the store, has a head that is the same for every
    /// answer but `Age` and `X-Cache`: it has a body by its status and a stored `Date`.
    static func isSentWhole(_ stored: CachedResponse) -> Bool {
        stored.status >= 200 && stored.status != 204 && stored.status != 206 && stored.status != 304
            && stored.headers.contains(.date)
    }

    /// What the store is asked: a validation request without the client's validators (the store
    /// answers them itself, see ``shaped(_:for:)``).
    static func probe(_ request: HTTPRequest) -> HTTPRequest {
        guard isValidationRequest(request) else { return request }
        var probe = request
        probe.headerFields[.ifNoneMatch] = nil
        probe.headerFields[.ifModifiedSince] = nil
        return probe
    }

    /// The store's answer as the client gets it: `304` when the client's validators match it.
    static func shaped(_ answer: CacheMiddleware.StoredAnswer, for request: HTTPRequest) -> ProxyResponse {
        guard isValidationRequest(request), answer.response.status.kind == .successful,
              validatorsMatch(request.headerFields, stored: answer.response.headerFields) else {
            var response = clientResponse(answer.response, body: answer.body.map { HTTPBody($0) }, outcome: answer.outcome)
            response.complete = response.body == nil ? nil : answer.body
            return response
        }
        var notModified = answer.response
        notModified.status = .notModified
        notModified.headerFields[.contentLength] = nil
        return clientResponse(notModified, body: nil, outcome: answer.outcome)
    }

    /// RFC 9110 §13.2.2: `If-None-Match` (weak comparison, `*` matches) decides when present;
    /// otherwise `If-Modified-Since` against the stored `Last-Modified`, or its `Date` when it
    /// has none (RFC 9111 §4.3.2).
    static func validatorsMatch(_ request: HTTPFields, stored: HTTPFields) -> Bool {
        let noneMatch = request[values: .ifNoneMatch]
        if !noneMatch.isEmpty {
            let tags = noneMatch.flatMap { $0.split(separator: ",") }.map { $0.trimmingOWS() }
            if tags.contains("*") { return true }
            guard let etag = stored[.eTag] else { return false }
            func opaque(_ tag: String) -> String { tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag }
            return tags.contains { opaque($0) == opaque(etag) }
        }
        guard let since = request[.ifModifiedSince].flatMap(HTTPDate.parse),
              let lastModified = (stored[.lastModified] ?? stored[.date]).flatMap(HTTPDate.parse) else { return false }
        return lastModified <= since
    }

    // MARK: - Shaping answers

    /// The origin's (or the cache's) answer as the client sees it.
    static func clientResponse(_ response: HTTPResponse, body: HTTPBody?, outcome: CacheOutcome) -> ProxyResponse {
        var fields = ProxyHeaders.forwardable(response.headerFields)
        fields[.xCache] = ProxyHeaders.xCache(outcome)
        fields.append(HTTPField(name: .cacheStatus, value: ProxyHeaders.cacheStatus(outcome)))
        fields.append(HTTPField(name: .via, value: ProxyHeaders.via))
        if fields[.date] == nil { fields[.date] = HTTPDate.format(Date()) }
        var head = response
        head.headerFields = fields
        let mayHaveBody = response.status.code >= 200 && response.status.code != 204 && response.status.code != 304
        return ProxyResponse(head: head, body: mayHaveBody ? body : nil, outcome: outcome, discarded: mayHaveBody ? nil : body)
    }

    /// A failure as the answer the client gets: `504` for a timeout, `429` for a spent rate-limit
    /// budget, `502` otherwise.
    static func failure(_ error: any Error, url: URL) -> ProxyResponse {
        if let refusal = error as? ProxyRateLimitGate.Refusal {
            var response = generated(.tooManyRequests, "freshet proxy: \(refusal.description)")
            response.head.headerFields.append(contentsOf: refusal.headerFields())
            return response
        }
        let shown = Redaction.redact(origin(of: url))
        switch APIError.wrapping(error, url: url) {
        case .timedOut:
            return generated(.gatewayTimeout, "freshet proxy: the origin \(shown) did not answer in time")
        case .unreachable(_, let reason):
            return generated(.badGateway, "freshet proxy: could not reach the origin \(shown) (\(reason))")
        case .transport(_, let reason):
            return generated(.badGateway, "freshet proxy: the exchange with the origin \(shown) failed (\(reason))")
        case .rateLimited(let resetAt, _, _, _):
            return waitAnswer(shown, until: resetAt)
        case .retryLater(_, let retryAt, _, _):
            return waitAnswer(shown, until: retryAt)
        case .cancelled:
            return generated(.badGateway, "freshet proxy: the request was cancelled")
        case let other:
            return generated(.badGateway, "freshet proxy: \(other.description)")
        }
    }

    private static func waitAnswer(_ origin: String, until date: Date?) -> ProxyResponse {
        var response = generated(.tooManyRequests, "freshet proxy: the origin \(origin) asks to wait")
        if let date {
            response.head.headerFields[.retryAfter] = String(max(0, Int(date.timeIntervalSinceNow.rounded(.up))))
        }
        return response
    }

    /// An answer the proxy makes itself: a short plain-text body, never cached downstream, with
    /// `X-Cache: MISS` and `Cache-Status` saying the cache had nothing to serve (`detail=error`).
    static func generated(_ status: HTTPResponse.Status, _ message: String) -> ProxyResponse {
        let body = Data((message + "\n").utf8)
        let fields: HTTPFields = [
            .contentType: "text/plain; charset=utf-8", .contentLength: String(body.count),
            .cacheControl: "no-store", .date: HTTPDate.format(Date()), .via: ProxyHeaders.via,
            .xCache: "MISS", .cacheStatus: "freshet; fwd=miss; detail=error",
        ]
        return ProxyResponse(head: HTTPResponse(status: status, headerFields: fields), body: HTTPBody(body),
                             outcome: nil, discarded: nil, complete: body)
    }

    /// `request-target` in origin form (`/path?query`); an absolute-form target
    /// (`http://host/path`) is reduced to its path and query. `nil` for anything else.
    static func originForm(_ target: String?) -> String? {
        guard let target, !target.isEmpty else { return nil }
        if target.hasPrefix("/") { return target }
        let lowered = target.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://"),
              let components = URLComponents(string: target), components.host != nil else { return nil }
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        return path + (components.percentEncodedQuery.map { "?\($0)" } ?? "")
    }

    private static func origin(of url: URL) -> URL {
        var components = URLComponents()
        components.scheme = url.scheme
        components.host = url.host
        components.port = url.port
        return components.url ?? url
    }
}

/// Something that happens once.
private final class OneTime: Sendable {
    private let done = Mutex(false)

    /// `true` the first time only.
    func first() -> Bool {
        done.withLock { done in
            defer { done = true }
            return !done
        }
    }
}

/// Store locations by request target, for a shared cache's hits (bounded: past ``capacity``
/// targets it starts over).
private final class TargetLocations: Sendable {
    static let capacity = 4096
    private let table = Mutex<[String: CacheMiddleware.StoreLocation]>([:])

    func location(of target: String, otherwise find: () -> CacheMiddleware.StoreLocation?) -> CacheMiddleware.StoreLocation? {
        if let known = table.withLock({ $0[target] }) { return known }
        guard let found = find() else { return nil }
        table.withLock { table in
            if table.count >= Self.capacity { table.removeAll(keepingCapacity: true) }
            table[target] = found
        }
        return found
    }
}
