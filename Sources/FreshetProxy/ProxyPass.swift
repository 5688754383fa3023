import Foundation
import Freshet
import FreshetCache
import FreshetTransports
import HTTPTypes
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
    /// One request forwarded on the event loop: its head for the origin and what its answer needs.
    struct Pass: Sendable {
        /// The request head for the origin.
        var head: HTTPRequestHead
        /// The request as the chain would send it (for the cache's rules and the metrics).
        var outbound: HTTPRequest
        /// What the client is sent beyond the answer.
        var delivery: ProxyDelivery
        /// The client's request target, the mark's key.
        var target: String
        /// The rate-limit gate's note of the request.
        var admission: ProxyRateLimitGate.Admission
    }

    /// `request` forwarded on the event loop, when its target is marked (see the comment at the
    /// top of this file), the origin is reached without a forward proxy and the gate lets it
    /// through; `nil` sends it the chain's way. For a `GET` or `HEAD` without a body.
    func pass(_ request: HTTPRequest) -> Pass? {
        guard let route = passRoute, let target = request.path, keysOnTarget(request), passMarks.isMarked(target),
              Self.asksNothingOfTheCache(request), var outbound = Self.outbound(request),
              let admission = try? gate.admit(outbound) else { return nil }
        let fields = request.headerFields
        outbound.headerFields[.acceptEncoding] = AcceptEncoding.acceptsGzip(fields) ? fields[.acceptEncoding] : "identity"
        return Pass(head: route.head(for: outbound), outbound: outbound, delivery: delivery(for: request), target: target,
                    admission: admission)
    }

    /// The head the client is sent for the origin's `head`, which came `waited` after the request
    /// was sent: the budget read, the mark cleared when the cache could keep this answer.
    func passed(_ pass: Pass, head: HTTPResponseHead, waited: Duration) -> HTTPResponse {
        let response = HTTPResponse(nioStatus: head.status, headers: head.headers)
        metrics?.origin(waited)
        metrics?.rateLimit(response.headerFields, request: pass.outbound.headerFields)
        gate.record(response, for: pass.admission)
        if !Self.marks(response) || (pass.outbound.method == .get
            && cache.location(of: pass.outbound, baseURL: origin).map { cache.mayStore(response, for: pass.outbound, at: $0) } == true) {
            passMarks.clear(pass.target)
        }
        var shaped = Self.clientResponse(response, body: nil, outcome: .miss).head
        pass.delivery.rewriteLinks(&shaped.headerFields)
        return shaped
    }

    /// The answer to `pass` when the exchange failed before the origin's head: `504` when it timed
    /// out, `502` when the connection broke after the request may have reached the origin.
    func passFailure(_ pass: Pass, timedOut: Bool, reason: String) -> ProxyResponse {
        let failure = TransportFailure(timedOut ? .timedOut : .connectionLost, reason: reason)
        return Self.failure(failure, url: pass.outbound.url(relativeTo: origin) ?? origin)
    }

    /// Marks `request`'s target when the cache could not keep `response` (see ``pass(_:)``).
    func markIfUnkept(_ response: HTTPResponse, request: HTTPRequest, outbound: HTTPRequest) {
        guard passRoute != nil, request.method == .get, Self.marks(response), Self.asksNothingOfTheCache(request),
              let target = request.path, keysOnTarget(request),
              let location = cache.location(of: outbound, baseURL: origin),
              !cache.mayStore(response, for: outbound, at: location) else { return }
        passMarks.mark(target)
    }
}

extension ProxyForwarder {
    private static let pragma = HTTPField.Name("Pragma")!

    /// Whether an unkept `response` says its target's answers are not kept: a success (not a
    /// partial one). An error says nothing of the next answer (and a stored one may be served
    /// stale instead, through the chain), nor does the cache's own `504` to `only-if-cached`.
    static func marks(_ response: HTTPResponse) -> Bool {
        (200..<300).contains(response.status.code) && response.status.code != 206
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
    private let marks = Mutex<[String: ContinuousClock.Instant]>([:])

    /// Whether `target` is marked and its mark has not expired.
    func isMarked(_ target: String) -> Bool {
        guard let until = marks.withLock({ $0[target] }) else { return false }
        return ContinuousClock.now < until
    }

    func mark(_ target: String) {
        let until = ContinuousClock.now + Self.lifetime
        marks.withLock { marks in
            if marks.count >= Self.capacity, marks[target] == nil { marks.removeAll(keepingCapacity: true) }
            marks[target] = until
        }
    }

    func clear(_ target: String) {
        _ = marks.withLock { $0.removeValue(forKey: target) }
    }
}
