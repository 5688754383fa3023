import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Sends ``Endpoint`` values through a middleware chain and a transport, and decodes the answers.
///
/// Transport and middleware are the protocols of swift-openapi-runtime (`ClientTransport`,
/// `ClientMiddleware`), so any transport works here (AsyncHTTPClient, URLSession, an in-memory
/// one in tests) and every Freshet middleware also plugs into a swift-openapi-generator client.
///
/// Cancelling the calling task cancels the HTTP exchange.
public struct APIClient: Sendable {
    /// The URL every endpoint path is appended to (it may have a path, like `…/v0`).
    public var baseURL: URL
    /// Sends the request. See `FreshetTransports` for the live defaults.
    public var transport: any ClientTransport
    /// The middleware chain, outermost first (see the recommended order in the documentation).
    public var middlewares: [any ClientMiddleware]
    /// Headers sent with every request unless the endpoint sets the same field.
    public var defaultHeaders: HTTPFields
    /// The largest response body the client reads, in bytes (default 10 MiB).
    public var maxResponseBytes: Int
    /// The decoder handed to endpoints' decoding closures.
    public var decoder: JSONDecoder
    /// Reads the API's own message out of an error response's body.
    public var errorBody: any ErrorBodyReader

    /// The default body limit: 10 MiB.
    public static let defaultMaxResponseBytes = 10 * 1024 * 1024

    /// Creates a client.
    public init(
        baseURL: URL,
        transport: any ClientTransport,
        middlewares: [any ClientMiddleware] = [],
        defaultHeaders: HTTPFields = APIClient.standardHeaders,
        maxResponseBytes: Int = APIClient.defaultMaxResponseBytes,
        decoder: JSONDecoder = JSONDecoder(),
        errorBody: any ErrorBodyReader = .jsonMessage
    ) {
        self.baseURL = baseURL
        self.transport = transport
        self.middlewares = middlewares
        self.defaultHeaders = defaultHeaders
        self.maxResponseBytes = maxResponseBytes
        self.decoder = decoder
        self.errorBody = errorBody
    }

    /// `User-Agent: freshet/<version>` and `Accept: application/json`.
    public static var standardHeaders: HTTPFields {
        [.userAgent: "freshet/\(FreshetInfo.version)", .accept: "application/json"]
    }

    /// Sends `endpoint` and returns its decoded value with the response metadata.
    ///
    /// - Throws: ``APIError``; a non-2xx status becomes ``APIError/httpStatus(code:message:url:response:)``
    ///   (or ``APIError/rateLimited(resetAt:message:url:response:)`` when the server says the limit is spent).
    public func send<Value>(_ endpoint: Endpoint<Value>) async throws(APIError) -> Response<Value> {
        try await send(endpoint, body: Self.body(of: endpoint), progress: nil)
    }

    /// An endpoint's own body: JSON unless its headers say otherwise.
    static func body<Value>(of endpoint: Endpoint<Value>) -> RequestBody? {
        endpoint.body.map { .data($0, contentType: "application/json") }
    }

    /// Sends `endpoint` with `body` in place of its own; `progress` counts the body's bytes as
    /// the transport takes them.
    func send<Value>(_ endpoint: Endpoint<Value>, body: RequestBody?, progress: ProgressReporter?)
        async throws(APIError) -> Response<Value>
    {
        let (request, requestBase, url) = try makeRequest(endpoint, body: body)
        let report = ExchangeReport()
        let start = ContinuousClock.now
        do {
            let chain = Self.chain(middlewares: middlewares, transport: transport, operationID: endpoint.operationID,
                                   timingHeaders: true)
            let outbound = body.map { body in progress.map { $0.counting(body.httpBody(), total: body.length) } ?? body.httpBody() }
            let (response, responseBody) = try await ExchangeReport.$current.withValue(report) {
                try await chain(request, outbound, requestBase)
            }
            let chainReturned = ContinuousClock.now
            let data = try await Self.collect(responseBody, limit: maxResponseBytes, url: url, report: report)
            try Task.checkCancellation()
            let snapshot = report.snapshot
            let headers = min(snapshot.headersReceived ?? chainReturned, chainReturned)
            let timing = ExchangeTiming(timeToHeaders: headers - start, total: ContinuousClock.now - start,
                                        connect: snapshot.connect, tlsHandshake: snapshot.tlsHandshake,
                                        timeToFirstByte: snapshot.timeToFirstByte)
            return try decoded(endpoint, response: response, data: data, url: url, report: snapshot, timing: timing)
        } catch {
            if Task.isCancelled { throw .cancelled }
            throw APIError.wrapping(error, url: url).withMessage(from: errorBody)
        }
    }

    /// Sends `endpoint` with `body` streamed as its request body (a file, a sequence, a form):
    /// the ``Transfer``'s progress counts the bytes the transport has taken from the body.
    ///
    /// The body is sent again after a redirect, retry or token refresh only when it can be
    /// (``RequestBody/isReplayable``).
    public func upload<Value>(_ endpoint: Endpoint<Value>, from body: RequestBody) -> Transfer<Response<Value>> {
        Transfer.start { reporter throws(APIError) in
            try await send(endpoint, body: body, progress: reporter)
        }
    }

    /// Sends `endpoint`; when the exchange fails for a reason the server may get over (rate
    /// limit, `Retry-After` beyond the cap, 5xx, unreachable, timeout, a broken or oversized
    /// body, a redirect loop), answers with the response a ``StoredResponseSource`` in the chain
    /// (the HTTP cache) has stored, stale, instead.
    ///
    /// The cache middleware already serves stored responses when the network fails under it;
    /// this covers the failures raised *outside* it — by the retry middleware giving up, the
    /// redirect middleware, or the client's body limit — by asking the cache itself, with no
    /// request. The response then reports ``CacheOutcome/stale`` and the original failure as its
    /// ``Response/staleReason``.
    ///
    /// Definitive answers are not hidden: a `404`, `401`, `422` or any other 4xx but `408` and
    /// `429` is thrown as it is, and so is cancellation.
    /// - Throws: the original error when nothing usable is stored.
    public func sendOrStored<Value>(_ endpoint: Endpoint<Value>) async throws(APIError) -> Response<Value> {
        do {
            return try await send(endpoint)
        } catch {
            guard Self.storedMayReplace(error), !Task.isCancelled,
                  let (request, requestBase, url) = try? makeRequest(endpoint, body: Self.body(of: endpoint)),
                  let (response, data) = await storedAnswer(for: request, baseURL: requestBase),
                  let stored = try? decoded(endpoint, response: response, data: data, url: url,
                                            report: .init(cache: .stale, staleReason: .failed(error)))
            else { throw error }
            return stored
        }
    }

    /// Reads what the chain's HTTP cache (its first ``StoredResponseSource``) holds for
    /// `endpoints` in one go — one database read for a whole page of them with
    /// `SQLiteCacheStore` — before they are sent, so that their cache lookups answer from memory
    /// instead of each reading storage. A hint that changes no answer: call it before a
    /// ``fanOut(_:maxConcurrent:)`` over endpoints that are likely stored.
    ///
    /// Requests are shaped as ``sendOrStored(_:)`` shapes them for a stored lookup (the
    /// ``StoredResponseAdapter``s above the cache); a middleware above the cache that adds
    /// credentials to the request (``AuthenticationMiddleware``) changes a private cache's key,
    /// so for such a client the read ahead finds nothing.
    public func preload<Value>(_ endpoints: [Endpoint<Value>]) async {
        guard let lookups = storedLookups(endpoints) else { return }
        await preload(lookups)
    }

    /// ``preload(_:)`` of requests already built: those on the first one's base (one read asks one base).
    func preload(_ lookups: StoredLookups) async {
        let built = lookups.requests.compactMap { $0 }
        guard let base = built.first?.base else { return }
        await lookups.source.preload(built.filter { $0.base == base }.map(\.request), baseURL: base)
    }

    /// Endpoints' requests as the chain's cache sees them — built and shaped by the
    /// ``StoredResponseAdapter``s above it once, for a read of them and their stored answers.
    struct StoredLookups: Sendable {
        var source: any StoredResponseSource
        var adapters: [any StoredResponseAdapter]
        /// Every middleware above the cache leaves a stored answer as it is (see
        /// ``storedAnswers(_:)``), so one may be handed out without the chain.
        var handedOut: Bool
        /// Per endpoint: its shaped request, base and URL; `nil` when it is not a `GET` or has no request.
        var requests: [(request: HTTPRequest, base: URL, url: URL)?]
    }

    /// ``StoredLookups`` for `endpoints`; `nil` when the chain has no ``StoredResponseSource``.
    func storedLookups<Value>(_ endpoints: [Endpoint<Value>]) -> StoredLookups? {
        guard let (source, adapters, above) = storedSource() else { return nil }
        let requests = endpoints.map { endpoint -> (request: HTTPRequest, base: URL, url: URL)? in
            guard endpoint.method == .get, let (request, base, url) = try? makeRequest(endpoint, body: nil) else { return nil }
            return (adapters.reduce(request) { $1.storedRequest($0) }, base, url)
        }
        // Told by type, as in `storedSource()`: the adapters, and Freshet's own that pass answers on.
        let passing = above.filter { $0 is RedirectMiddleware || $0 is RetryMiddleware || $0 is CoalescingMiddleware }
        return StoredLookups(source: source, adapters: adapters, handedOut: passing.count + adapters.count == above.count,
                             requests: requests)
    }

    /// What the chain's HTTP cache (its first ``StoredResponseSource``) answers `endpoints` with
    /// right now, without sending them through the chain: for each endpoint, the decoded response
    /// when its stored answer is fresh (or stale where its request allows it) and successful, else
    /// `nil` — send those. The responses are what ``send(_:)`` would return (``Response/cache``
    /// `hit` or `stale`, no timing: no exchange was made), and each counts as the cache's answer.
    ///
    /// For a fan-out over endpoints that are mostly stored (a page of Hacker News items): each
    /// answer costs a lookup and a decode instead of a trip through every middleware, and the
    /// store is read once for all of them (``StoredResponseSource/answersWithoutExchange(for:urls:baseURL:)``).
    ///
    /// It answers only when every middleware above the cache leaves a stored answer as it is —
    /// ``RedirectMiddleware``, ``RetryMiddleware``, ``CoalescingMiddleware`` and the
    /// ``StoredResponseAdapter``s (content decoding), which shape the request and the answer as
    /// through the chain. With any other above it (logging, metrics, tracing, authentication,
    /// your own), every slot is `nil`, so nothing a middleware would see or add is skipped.
    public func storedAnswers<Value>(_ endpoints: [Endpoint<Value>]) async -> [Response<Value>?] {
        guard let lookups = storedLookups(endpoints) else { return Array(repeating: nil, count: endpoints.count) }
        return await storedAnswers(endpoints, lookups, in: endpoints.indices)
    }

    /// ``storedAnswers(_:)`` for `endpoints[range]`, whose requests `lookups` holds.
    func storedAnswers<Value>(_ endpoints: [Endpoint<Value>], _ lookups: StoredLookups, in range: Range<Int>) async
        -> [Response<Value>?]
    {
        var answers = [Response<Value>?](repeating: nil, count: range.count)
        guard lookups.handedOut else { return answers }
        let stored = await storedResponses(lookups, in: range)
        // Decoded in slices on the cooperative pool: decoding is most of the work, and a fan-out
        // through the chain would have spread it over the cores too.
        let slice = 32
        await withTaskGroup(of: (Int, [Response<Value>?]).self) { group in
            for start in stride(from: range.lowerBound, to: range.upperBound, by: slice) {
                let part = start..<min(start + slice, range.upperBound)
                group.addTask {
                    var found: [Response<Value>?] = []
                    for index in part {
                        found.append(await storedAnswer(to: endpoints[index], url: lookups.requests[index]?.url,
                                                        stored: stored[index - range.lowerBound], adapters: lookups.adapters))
                    }
                    return (start - range.lowerBound, found)
                }
            }
            for await (start, found) in group {
                answers.replaceSubrange(start..<start + found.count, with: found)
            }
        }
        return answers
    }

    /// The head of the answer ``storedAnswers(_:)`` would give `endpoint` — fresh (or stale where
    /// its request allows it), successful, from the chain's HTTP cache without a request — with
    /// its body neither read, decoded nor decompressed; `nil` when there is none. The head is as
    /// stored: before any ``StoredResponseAdapter`` (its `Content-Encoding` still there). It
    /// counts as the cache's answer.
    ///
    /// For a caller that can tell from the head alone (its `ETag`) that it already holds what the
    /// body says, like a feed that merged that very page last time.
    public func storedHead<Value>(_ endpoint: Endpoint<Value>) async -> HTTPResponse? {
        guard let lookups = storedLookups([endpoint]), lookups.handedOut, let (request, base, _) = lookups.requests[0],
              let stored = await lookups.source.answerWithoutExchange(for: request, baseURL: base),
              stored.response.status.kind == .successful
        else { return nil }
        return stored.response
    }

    /// What the cache answers `lookups.requests[range]` with, as they are shaped for it: one call
    /// per base URL, so each request's place in the store is worked out once for its read and its
    /// answer.
    private func storedResponses(_ lookups: StoredLookups, in range: Range<Int>) async
        -> [(response: HTTPResponse, body: Data, outcome: CacheOutcome)?]
    {
        var stored = [(response: HTTPResponse, body: Data, outcome: CacheOutcome)?](repeating: nil, count: range.count)
        var left = range.filter { lookups.requests[$0] != nil }
        while let base = left.first.flatMap({ lookups.requests[$0]?.base }) {
            let sameBase = left.filter { lookups.requests[$0]?.base == base }
            left.removeAll { lookups.requests[$0]?.base == base }
            let built = sameBase.compactMap { lookups.requests[$0] }
            let answers = await lookups.source.answersWithoutExchange(for: built.map(\.request), urls: built.map(\.url),
                                                                       baseURL: base)
            for (index, answer) in zip(sameBase, answers) { stored[index - range.lowerBound] = answer }
        }
        return stored
    }

    /// ``storedAnswers(_:)`` for one endpoint (at `url`), from what the cache answered it with.
    private func storedAnswer<Value>(to endpoint: Endpoint<Value>, url: URL?,
                                     stored: (response: HTTPResponse, body: Data, outcome: CacheOutcome)?,
                                     adapters: [any StoredResponseAdapter]) async -> Response<Value>? {
        guard let url, let stored, stored.response.status.kind == .successful,
              // A body that does not decode goes through the chain, which says why.
              let (response, data) = await adapted((stored.response, stored.body), by: adapters)
        else { return nil }
        return try? decoded(endpoint, response: response, data: data, url: url, report: .init(cache: stored.outcome))
    }

    /// What the chain's first ``StoredResponseSource`` has stored for `request`, shaped by the
    /// ``StoredResponseAdapter``s above it as an answer through the chain would be (the request's
    /// `Accept-Encoding` added, the stored body decoded); `nil` when nothing usable is stored.
    private func storedAnswer(for request: HTTPRequest, baseURL: URL) async -> (HTTPResponse, Data)? {
        guard let (source, adapters, _) = storedSource() else { return nil }
        let shaped = adapters.reduce(request) { $1.storedRequest($0) }
        guard let answer = await source.storedResponse(for: shaped, baseURL: baseURL) else { return nil }
        return await adapted(answer, by: adapters)
    }

    /// A stored answer as `adapters` (outermost first) hand it up; `nil` when one cannot.
    private func adapted(_ answer: (HTTPResponse, Data), by adapters: [any StoredResponseAdapter]) async -> (HTTPResponse, Data)? {
        var answer = answer
        for adapter in adapters.reversed() {
            guard let adapted = try? await adapter.storedResponse(answer.0, body: answer.1, limit: maxResponseBytes)
            else { return nil }
            answer = adapted
        }
        return answer
    }

    /// The chain's first ``StoredResponseSource`` (the HTTP cache), the ``StoredResponseAdapter``s
    /// above it and every middleware above it, outermost first; `nil` when the chain has no cache.
    private func storedSource() -> (source: any StoredResponseSource, adapters: [any StoredResponseAdapter],
                                    above: ArraySlice<any ClientMiddleware>)? {
        var adapters: [any StoredResponseAdapter] = []
        for (index, middleware) in middlewares.enumerated() {
            switch StoredRoles.role(of: middleware) {
            case .source(let source): return (source, adapters, middlewares[..<index])
            case .adapter(let adapter): adapters.append(adapter)
            case .neither: break
            }
        }
        return nil
    }

    /// Whether `middleware` is one of Freshet's own that is neither a ``StoredResponseSource`` nor a
    /// ``StoredResponseAdapter``, told by its type: the runtime's first check of a type against a
    /// protocol it does not conform to reads every conformance record of the process (some
    /// 600,000 instructions each, seven of them in a warm `hn` before this).
    package static func isPlainHop(_ middleware: any ClientMiddleware) -> Bool {
        middleware is RedirectMiddleware || middleware is RetryMiddleware || middleware is CoalescingMiddleware
            || middleware is RateLimitMiddleware
    }

    /// Whether a stored response may stand in after `error`.
    static func storedMayReplace(_ error: APIError) -> Bool {
        switch error {
        case .cancelled, .invalidRequest, .authenticationFailed, .fileAccess: return false
        case .httpStatus(let code, _, _, _): return code == 408 || code == 429 || code >= 500
        default: return true
        }
    }

    /// Validates and decodes a complete response into a ``Response``.
    private func decoded<Value>(_ endpoint: Endpoint<Value>, response: HTTPResponse, data: Data, url: URL,
                                report: ExchangeReport.Snapshot, timing: ExchangeTiming = ExchangeTiming()) throws -> Response<Value> {
        try Self.validate(response, body: data, url: url, errorBody: errorBody)
        let value: Value
        do {
            value = try endpoint.decode(data, decoder)
        } catch let error as DecodingError {
            throw APIError.decoding(error, type: String(describing: Value.self))
        }
        return Response(value: value, status: response.status, headers: response.headerFields, url: url,
                        cache: report.cache, staleReason: report.staleReason, attempt: report.attempt,
                        bodyBytes: data.count, timing: timing)
    }

    /// Sends `endpoint` and returns only its decoded value.
    public func value<Value>(_ endpoint: Endpoint<Value>) async throws(APIError) -> Value {
        try await send(endpoint).value
    }

    /// The full URL `endpoint` would be sent to.
    public func url<Value>(for endpoint: Endpoint<Value>) throws(APIError) -> URL {
        try makeRequest(endpoint, body: nil).url
    }

    // MARK: - Request building

    /// The request for `endpoint` carrying `body` (its framing and type), its base URL and full URL.
    func makeRequest<Value>(_ endpoint: Endpoint<Value>, body: RequestBody?) throws(APIError) -> (request: HTTPRequest, base: URL, url: URL) {
        let requestBase: URL
        let target: String
        let url: URL
        if let absolute = endpoint.absoluteURL {
            guard let split = URLTarget.split(absolute) else {
                throw .invalidRequest("the URL \(Redaction.redact(absolute)) has no scheme or host")
            }
            requestBase = split.origin
            target = split.target
            // Already whole: not parsed again (a page of `Link` URLs, a fan-out over absolute URLs).
            if split.isWhole, absolute.absoluteString.hasPrefix(requestBase.absoluteString) {
                url = absolute
            } else {
                url = try Self.join(requestBase, target)
            }
        } else {
            requestBase = baseURL
            target = try endpoint.encodedTarget()
            url = try Self.join(requestBase, target)
        }
        var fields = defaultHeaders
        for field in endpoint.headers {
            fields[field.name] = nil
        }
        fields.append(contentsOf: endpoint.headers)
        if let body {
            fields[.contentLength] = body.length.map { String($0) }
            if fields[.contentType] == nil { fields[.contentType] = body.contentType ?? "application/octet-stream" }
        }
        let request = HTTPRequest(method: endpoint.method, scheme: nil, authority: nil, path: target, headerFields: fields)
        return (request, requestBase, url)
    }

    /// `base` with `target` (which starts with `/`) appended.
    private static func join(_ base: URL, _ target: String) throws(APIError) -> URL {
        guard let url = URL(string: base.joined(target: target)) else {
            throw .invalidRequest("the request target \(target) does not form a valid URL")
        }
        return url
    }

    /// The middleware chain folded around the transport: `middlewares` outermost first, the
    /// transport innermost. Calling the result sends a raw request through every middleware, with
    /// nothing decoded — for callers that forward requests and responses as they are (a proxy).
    /// - Parameters:
    ///   - middlewares: the middlewares, outermost first.
    ///   - transport: sends the request after the innermost middleware.
    ///   - operationID: passed to every middleware and to the transport.
    public static func chain(
        middlewares: [any ClientMiddleware], transport: any ClientTransport, operationID: String
    ) -> @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?) {
        chain(middlewares: middlewares, transport: transport, operationID: operationID, timingHeaders: false)
    }

    /// The chain; with `timingHeaders`, the transport's answer is stamped in the current
    /// ``ExchangeReport`` (for ``Response/timing``: only ``send(_:)`` reads it, so the proxy's
    /// chain does not pay for it).
    static func chain(
        middlewares: [any ClientMiddleware], transport: any ClientTransport, operationID: String, timingHeaders: Bool
    ) -> @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?) {
        var next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
        if timingHeaders {
            next = { request, body, base in
                let answer = try await transport.send(request, body: body, baseURL: base, operationID: operationID)
                ExchangeReport.current?.recordHeadersReceived()
                return answer
            }
        } else {
            next = { request, body, base in
                try await transport.send(request, body: body, baseURL: base, operationID: operationID)
            }
        }
        for middleware in middlewares.reversed() {
            let inner = next
            next = { request, body, base in
                try await middleware.intercept(request, body: body, baseURL: base, operationID: operationID, next: inner)
            }
        }
        return next
    }

    // MARK: - Response handling

    /// Reads a body up to `limit` bytes; past the limit it stops reading and throws. A body that
    /// `report` knows whole (``HTTPBody/whole(_:)``) is not read: its bytes are the answer.
    static func collect(_ body: HTTPBody?, limit: Int, url: URL,
                        report: ExchangeReport? = ExchangeReport.current) async throws -> Data {
        guard let body else { return Data() }
        if case .known(let length) = body.length, length > limit {
            throw APIError.bodyTooLarge(limit: limit, url: Redaction.redact(url))
        }
        if let data = report?.wholeData(of: body) { return data }
        var data = Data()
        if case .known(let length) = body.length { data.reserveCapacity(Int(length)) }
        for try await chunk in body {
            guard data.count + chunk.count <= limit else {
                throw APIError.bodyTooLarge(limit: limit, url: Redaction.redact(url))
            }
            data.append(contentsOf: chunk)
        }
        return data
    }

    /// Accepts 2xx; turns anything else into an ``APIError`` carrying the API's own message.
    static func validate(_ response: HTTPResponse, body: Data, url: URL, errorBody: any ErrorBodyReader) throws(APIError) {
        guard response.status.kind != .successful else { return }
        let shown = Redaction.redact(url)
        let message = errorBody.message(in: body)
        if let limit = RateLimitSignal(response: response) {
            throw .rateLimited(resetAt: limit.resetAt, message: message, url: shown,
                               response: APIError.ErrorResponse(head: response, body: body))
        }
        throw .httpStatus(code: response.status.code, message: message, url: shown,
                          response: APIError.ErrorResponse(head: response, body: body))
    }
}

/// What a 403/429 says about the rate limit.
struct RateLimitSignal {
    var resetAt: Date?

    /// `nil` unless the response is a rate-limit refusal: 429, or 403 with
    /// `X-RateLimit-Remaining: 0` or a `Retry-After`.
    init?(response: HTTPResponse, now: Date = Date()) {
        let code = response.status.code
        guard code == 429 || code == 403 else { return nil }
        let fields = response.headerFields
        let remaining = fields[.xRateLimitRemaining].flatMap { Int($0) }
        let retryAfter = fields[.retryAfter]
        guard code == 429 || remaining == 0 || retryAfter != nil else { return nil }
        if let delay = RetryAfter.delay(retryAfter, now: now) {
            resetAt = now.addingTimeInterval(TimeInterval(delay.components.seconds))
        } else if let reset = fields[.xRateLimitReset].flatMap({ TimeInterval($0) }) {
            resetAt = Date(timeIntervalSince1970: reset)
        } else {
            resetAt = nil
        }
    }
}

/// Library-wide constants.
public enum FreshetInfo {
    /// The library version, sent in `User-Agent`.
    public static let version = "0.1.0"
}
