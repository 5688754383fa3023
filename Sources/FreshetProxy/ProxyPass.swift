import Foundation
import Freshet
import FreshetCache
import FreshetTransports
import HTTPTypes
import NIOCore
import NIOHTTP1
import Synchronization

// Forwarding what the cache will not keep, on the event loop: Varnish's hit-for-miss.
//
// A `GET` whose answer the cache could not keep (`no-store`, `private` in a shared cache, a `5xx`,
// …) marks its target for ``PassMarks/lifetime``. While the mark lasts, a `GET` or `HEAD` of that
// target that the memory tier does not answer is forwarded by the server's event loop itself
// (`ProxyHitHandler`), with no task and no origin-side chain, and its answer relayed part by part;
// an answer the cache could keep clears the mark, and the next request takes the chain again (and
// is stored). What such a request gets is what the chain gives a miss: the rate-limit gate before
// and its budget read after, the origin's answer with `X-Cache: MISS`, `Cache-Status`, `Via`, a
// `Date`, `Link`/`Location` rewritten to the proxy, metrics and the log line. It differs in two
// ways, both allowed to a cache that does not store: the client's own `Accept-Encoding` goes to the
// origin (when it takes gzip; else `identity`), as nothing is stored for other clients, and a
// request that cannot be sent (no connection, a kept-alive one found closed twice) goes the chain's
// way instead, which retries, serves stale where allowed, and says why it failed.

extension ProxyForwarder {
    /// The way to the origin for forwarding on the event loop, and the transport's timeouts,
    /// which it keeps too.
    struct PassRoute: Sendable {
        var route: HTTP1ConnectionPool.LoopRoute
        var headTimeout: Duration
        var readTimeout: Duration
    }

    /// One request forwarded on the event loop: its head for the origin and what its answer needs.
    struct Pass: Sendable {
        /// Where it goes.
        var route: PassRoute
        /// The request head for the origin, as bytes.
        var head: ByteBuffer
        /// The client's request.
        var request: HTTPRequest
        /// What the client is sent beyond the answer.
        var delivery: ProxyDelivery
        /// The client's request target, the mark's key.
        var target: String
        /// The rate-limit gate's note of the request.
        var admission: ProxyRateLimitGate.Admission
        /// The `Cache-Control` of the answer that marked the target, when it forbade storing by
        /// itself: an answer with the same one is not looked at again.
        var markedControl: String?
        /// The stored response this request validates, when it is a revalidation
        /// (``ProxyForwarder/revalidation(_:)``), not a request the cache will not keep.
        var revalidation: CacheMiddleware.Revalidation?

        /// The request as the chain sends it (for the cache's rules), made when needed.
        var outbound: HTTPRequest? { ProxyForwarder.outbound(request) }
    }

    /// `request` forwarded on the event loop, when its target is marked (see the comment at the
    /// top of this file), the origin is reached without a forward proxy and the gate lets it
    /// through; `nil` sends it the chain's way. For a `GET` or `HEAD` without a body, and with no
    /// `Connection` field but `keep-alive`. Its head for the origin is the chain's
    /// (``outbound(_:)``) made in one pass over the client's fields, with the client's own
    /// `Accept-Encoding`.
    func pass(_ request: HTTPRequest) -> Pass? {
        guard let route = passRoute, let target = request.path, keysOnTarget(request),
              let mark = passMarks.mark(of: target), Self.asksNothingOfTheCache(request), let path = Self.originForm(target),
              let admission = try? gate.admit(path: path, authorization: request.headerFields[values: .authorization])
        else { return nil }
        let fields = request.headerFields
        let gzip = fields.contains(.acceptEncoding) && AcceptEncoding.acceptsGzip(fields)
        let head = Self.originHead(request, path: path, route: route,
                                   acceptEncoding: gzip ? fields[.acceptEncoding] ?? "gzip" : "identity")
        return Pass(route: route, head: head, request: request, delivery: delivery(for: request), target: target,
                    admission: admission, markedControl: mark.control)
    }

    /// `request` revalidated on the event loop: the conditional request for the stored response
    /// in memory that must be validated before it answers (every hit, with `--revalidate always`),
    /// when the cache claims it (``CacheMiddleware/revalidationFromMemory(for:at:)``: no other
    /// revalidation of the key runs), the origin is reached without a forward proxy, the client
    /// takes the stored response's encoding, and the gate lets it through; `nil` sends it the
    /// chain's way. For a `GET` that asks nothing of the cache. Its head is the chain's
    /// conditional request: `Accept-Encoding: gzip` (what the stored response was asked with) and
    /// the stored validators.
    func revalidation(_ request: HTTPRequest) -> Pass? {
        guard let route = passRoute, request.method == .get, let target = request.path,
              Self.asksNothingOfTheCache(request), let path = Self.originForm(target),
              let location = location(of: request, target: target) else { return nil }
        let delivery = delivery(for: request)
        guard let revalidation = cache.revalidationFromMemory(for: request, at: location) else { return nil }
        guard delivery.takesEncoding(of: revalidation.stored.headers),
              let admission = try? gate.admit(path: path, authorization: request.headerFields[values: .authorization])
        else {
            revalidation.end()
            return nil
        }
        let head = Self.originHead(request, path: path, route: route, acceptEncoding: "gzip",
                                   extra: revalidation.validators)
        return Pass(route: route, head: head, request: request, delivery: delivery, target: target,
                    admission: admission, revalidation: revalidation)
    }

    /// The head for the origin of `request` (a `GET` or `HEAD` without a body), as bytes, made in
    /// one pass over its fields: the chain's (``outbound(_:)``) with `acceptEncoding`, and `extra` fields.
    private static func originHead(_ request: HTTPRequest, path: String, route: PassRoute, acceptEncoding: String,
                                   extra: HTTPFields = [:]) -> ByteBuffer {
        let fields = request.headerFields
        return route.route.headBytes(isHead: request.method == .head, target: path,
                                     lines: fields.count + extra.count + 2) { headers in
            for field in fields {
                let name = field.name.canonicalName
                if ProxyHeaders.isHopByHop(name) || field.name == .acceptEncoding || field.name == .expect
                    || field.name == .contentLength || field.name == .transferEncoding { continue }
                headers.append((field.name.rawName, field.value))
            }
            headers.append(("Accept-Encoding", acceptEncoding))
            for field in extra { headers.append((field.name.rawName, field.value)) }
            headers.append(("Via", ProxyHeaders.via))
        }
    }

    /// The head the client is sent for the origin's `head`, which came `waited` after the request
    /// was sent — the budget read, the mark cleared when the cache could keep this answer — as
    /// NIO's head, for the server's HTTP/1 encoder: what ``clientResponse(_:body:outcome:)`` and
    /// ``ProxyDelivery`` make of an answer, without converting it to HTTP types and back. With it,
    /// the origin's fields as HTTP types when they carry a rate-limit budget (for the log).
    func passed(_ pass: Pass, head: HTTPResponseHead, waited: Duration) -> (head: HTTPResponseHead, fields: HTTPFields?) {
        metrics?.origin(waited)
        // Lines made whole into NIO's headers (`HTTPHeaders.add` checks each name byte by byte;
        // these came through NIO's parser, valid already).
        var lines: [(String, String)] = []
        lines.reserveCapacity(head.headers.count + 4)
        let connection = head.headers["Connection"]
        let listed = connection.isEmpty ? [] : ProxyHeaders.listed(in: connection)
        var budget = false
        var dated = false
        for (name, value) in head.headers {
            let lowered = name.lowercased()
            if ProxyHeaders.isHopByHop(lowered) || lowered == "x-cache" || (!listed.isEmpty && listed.contains(lowered)) {
                continue
            }
            if lowered.hasPrefix("x-ratelimit-") { budget = true }
            if lowered == "date" { dated = true }
            let rewritten = ProxyDelivery.isLinkField(lowered) ? pass.delivery.rewrittenLink(value) : nil
            lines.append((name, rewritten ?? value))
        }
        if !dated { lines.append(("Date", HTTPDate.format(Date()))) }
        lines.append(("X-Cache", "MISS"))
        lines.append(("Cache-Status", ProxyHeaders.cacheStatus(.miss)))
        lines.append(("Via", ProxyHeaders.via))
        let shaped = HTTPHeaders(lines)

        var fields: HTTPFields?
        if budget {
            let response = HTTPResponse(nioStatus: head.status, headers: head.headers)
            recordBudget(response, of: pass)
            fields = response.headerFields
        }
        if pass.revalidation != nil {
            // Not a mark's: what is kept of this answer is ``revalidationEnded(_:head:body:)``'s to say.
        } else if !Self.marks(status: Int(head.status.code)) {
            passMarks.clear(pass.target)
        } else if pass.request.method == .get, pass.markedControl == nil
                    || head.headers["Cache-Control"].joined(separator: ", ") != pass.markedControl
                    || Self.targetedFields.contains(where: { head.headers.contains(name: $0.rawName) }) {
            let response = HTTPResponse(nioStatus: head.status, headers: head.headers)
            if let outbound = pass.outbound, let location = location(of: outbound, target: pass.target),
               cache.mayStore(response, for: outbound, at: location) {
                passMarks.clear(pass.target)
            }
        }
        return (HTTPResponseHead(version: .http1_1, status: head.status, headers: shaped), fields)
    }

    /// How the event loop goes on with a revalidation's answer `head` that is not a `304`.
    enum RevalidationStep {
        /// Relayed to the client as a miss, its body kept (up to the cache's limit) when the
        /// cache could store it in place of the stored response.
        case relay(keepsBody: Bool)
        /// The stored response answers, stale, for a failure (the origin's body is dropped).
        case stale(MemoryAnswer)
        /// The first `limit` bytes of the body tell: ask again with them.
        case needsBody(limit: Int)
        /// Sent again through the chain: an answer the client cannot take as it is (gzip to a
        /// client that does not take it), which the chain decodes.
        case chain
    }

    /// What to do with `head`, the origin's answer to the revalidation `pass` other than a `304`,
    /// which came `waited` after the request was sent (with the first bytes of its `body` when
    /// they were asked for): the chain's rules for a failure, then the client's encoding.
    func revalidationStep(_ pass: Pass, head: HTTPResponseHead, body: ByteBuffer?, waited: Duration) -> RevalidationStep {
        guard let revalidation = pass.revalidation else { return .relay(keepsBody: false) }
        let response = HTTPResponse(nioStatus: head.status, headers: head.headers)
        switch cache.answer(forFailure: response, body: body.map { Data($0.readableBytesView) }, of: revalidation) {
        case .needsBody(let limit):
            return .needsBody(limit: limit)
        case .stale(let decision, let fields):
            metrics?.origin(waited)
            recordBudget(response, of: pass)
            return .stale(answer(decision, for: pass, replacing: fields))
        case .origin:
            break
        }
        if !pass.delivery.takesEncoding(of: response.headerFields) { return .chain }
        guard let outbound = pass.outbound else { return .relay(keepsBody: false) }
        return .relay(keepsBody: cache.mayStore(response, for: revalidation, request: outbound))
    }

    /// The stored response of the revalidation `pass`, freshened by the `fields` of the origin's
    /// `304` that came `waited` after the request was sent, as the client gets it (with the budget
    /// read); with `fields` when they carry a rate-limit budget (for the log).
    func revalidated(_ pass: Pass, notModified fields: HTTPFields, waited: Duration) -> (MemoryAnswer, HTTPFields?) {
        metrics?.origin(waited)
        let budget = recordBudget(HTTPResponse(status: .notModified, headerFields: fields), of: pass)
        let decision = cache.revalidated(pass.revalidation!, notModified: fields)
        return (answer(decision, for: pass), budget ? fields : nil)
    }

    /// Reads the rate-limit budget `response` carries, as the chain's gate does; whether it carries one.
    @discardableResult
    private func recordBudget(_ response: HTTPResponse, of pass: Pass) -> Bool {
        guard response.headerFields.contains(where: { $0.name.canonicalName.hasPrefix("x-ratelimit-") }) else { return false }
        metrics?.rateLimit(response.headerFields, request: pass.request.headerFields)
        gate.record(response, for: pass.admission)
        return true
    }

    /// The store's `decision` as the client of `pass` gets it (links rewritten where needed). Its
    /// body is whole: the client takes the stored encoding (``revalidation(_:)``); only a `304`
    /// that changed it would leave a body to decode as it streams, and the stored response is
    /// then sent as stored.
    /// With `replacing`, the origin's fields that replace the stored ones (not a prepared head then).
    private func answer(_ decision: CacheMiddleware.StoreDecision, for pass: Pass, replacing: HTTPFields = [:]) -> MemoryAnswer {
        if !replacing.isEmpty {
            var response = decision.response
            for name in Set(replacing.map(\.name)) { response.headerFields[values: name] = replacing[values: name] }
            let shaped = pass.delivery.shape(Self.shaped((response, decision.answer.body, decision.outcome), for: pass.request))
            if shaped.complete != nil || shaped.body == nil { return .response(shaped) }
        }
        return Self.memoryAnswer(decision, delivery: pass.delivery, request: pass.request)
            ?? .stored(decision.answer, age: decision.freshness.ageSeconds, outcome: decision.outcome)
    }

    /// The stored response of the revalidation `pass`, stale, when it may answer for an origin that
    /// was not reached or broke off before its answer's head (see
    /// ``CacheMiddleware/staleAfterFailure(_:)``).
    func staleAfterFailure(_ pass: Pass) -> MemoryAnswer? {
        guard let revalidation = pass.revalidation, let decision = cache.staleAfterFailure(revalidation) else { return nil }
        return answer(decision, for: pass)
    }

    /// The end of a revalidation whose new answer `head` was relayed: stored with `body` when the
    /// cache may keep it (`body` is `nil` when it was not kept: too large, or not storable).
    func revalidationEnded(_ pass: Pass, head: HTTPResponseHead, body: ByteBuffer?) {
        guard let revalidation = pass.revalidation else { return }
        guard let outbound = pass.outbound else { return revalidation.end() }
        cache.storeWithoutWaiting(HTTPResponse(nioStatus: head.status, headers: head.headers),
                                  body: body.map { Data($0.readableBytesView) }, for: revalidation, request: outbound)
    }

    /// The answer to `pass` when the exchange failed before the origin's head: `504` when it timed
    /// out, `502` when the connection broke after the request may have reached the origin.
    func passFailure(_ pass: Pass, timedOut: Bool, reason: String) -> ProxyResponse {
        let failure = TransportFailure(timedOut ? .timedOut : .connectionLost, reason: reason)
        return Self.failure(failure, url: pass.outbound?.url(relativeTo: origin) ?? origin)
    }

    /// Marks `request`'s target when the cache could not keep `response` (see ``pass(_:)``).
    func markIfUnkept(_ response: HTTPResponse, request: HTTPRequest, outbound: HTTPRequest) {
        guard passRoute != nil, request.method == .get, Self.marks(status: response.status.code),
              Self.asksNothingOfTheCache(request), let target = request.path, keysOnTarget(request),
              let location = cache.location(of: outbound, baseURL: origin),
              !cache.mayStore(response, for: outbound, at: location) else { return }
        passMarks.mark(target, control: Self.forbidsSharedStorage(response.headerFields) ? response.headerFields.combinedValue(.cacheControl) : nil)
    }

}

extension ProxyForwarder {
    private static let pragma = HTTPField.Name("Pragma")!

    /// Whether an unkept answer with `status` says its target's answers are not kept: a success
    /// (not a partial one). An error says nothing of the next answer (and a stored one may be
    /// served stale instead, through the chain), nor does the cache's own `504` to `only-if-cached`.
    static func marks(status: Int) -> Bool {
        (200..<300).contains(status) && status != 206
    }

    /// Whether a shared cache may not store an answer with `fields`, by its own `Cache-Control`
    /// alone: `no-store` (without `must-understand`) or `private`, and no targeted field
    /// (`CDN-Cache-Control`, `Surrogate-Control`) that would replace it. `false` says nothing.
    /// What marks a target is nearly always this: the full rules are then not run for each answer.
    static func forbidsSharedStorage(_ fields: HTTPFields) -> Bool {
        guard let value = fields.combinedValue(.cacheControl), !targetedFields.contains(where: { fields.contains($0) }) else { return false }
        let control = CacheControl(parsing: value)
        return (control.noStore && !control.has("must-understand")) || control.isPrivate
    }

    /// A request with no `Cache-Control`, `Pragma`, `Range` or `If-…` field: what the cache does
    /// with it depends on its target and the stored answers alone. Only such requests mark a
    /// target and are forwarded on the event loop (a client's validators or `only-if-cached` are
    /// the chain's to answer).
    static func asksNothingOfTheCache(_ request: HTTPRequest) -> Bool {
        for field in request.headerFields {
            switch field.name {
            case .cacheControl, Self.pragma, .range, .ifMatch, .ifNoneMatch, .ifModifiedSince, .ifUnmodifiedSince, .ifRange:
                return false
            default:
                continue
            }
        }
        return true
    }
}

/// Request targets whose answers the cache could not keep, each for ``lifetime`` (Varnish's
/// hit-for-miss objects live 120 s by default). Bounded: past ``capacity`` targets it starts over.
final class PassMarks: Sendable {
    static let capacity = 4096
    static let lifetime = Duration.seconds(120)
    /// A mark: until when, and the `Cache-Control` that forbade storing (see ``ProxyForwarder/Pass/markedControl``).
    struct Mark: Sendable {
        var until: ContinuousClock.Instant
        var control: String?
    }

    private let marks = Mutex<[String: Mark]>([:])

    /// `target`'s mark, unless it has none or it expired.
    func mark(of target: String) -> Mark? {
        guard let mark = marks.withLock({ $0[target] }), ContinuousClock.now < mark.until else { return nil }
        return mark
    }

    func mark(_ target: String, control: String?) {
        let mark = Mark(until: ContinuousClock.now + Self.lifetime, control: control)
        marks.withLock { marks in
            if marks.count >= Self.capacity, marks[target] == nil { marks.removeAll(keepingCapacity: true) }
            marks[target] = mark
        }
    }

    func clear(_ target: String) {
        _ = marks.withLock { $0.removeValue(forKey: target) }
    }
}
