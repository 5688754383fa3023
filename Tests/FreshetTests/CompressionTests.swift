import Foundation
import Freshet
import FreshetCache
import FreshetSimulator
import FreshetTestSupport
import FreshetTransports
import GitHubAPI
import HTTPTypes
import OpenAPIRuntime
import Synchronization
import Testing

/// Transparent compression through the standard chain, against the simulator, which answers gzip
/// when asked as GitHub does: what is asked for, what the cache keeps, what the caller gets, and
/// how broken or hostile gzip bodies end.
@Suite("Transparent compression")
struct CompressionTests {
    static let eventsRoute = "/repos/ReactiveX/RxSwift/events"
    static let events = Endpoint<Data>.raw("repos", "ReactiveX", "RxSwift", "events")

    /// The standard chain with content decoding (or not) over a cache in `store`.
    static func client(_ sim: RunningSimulator, store: MemoryCacheStore = MemoryCacheStore(), decompression: Bool = true,
                       retry: RetryMiddleware = RetryMiddleware(), maxResponseBytes: Int = APIClient.defaultMaxResponseBytes) -> APIClient {
        let cache = CacheMiddleware(store: store, options: .init(mode: .private))
        let middlewares = Middlewares.standard(retry: retry, decompression: decompression ? DecompressionMiddleware() : nil,
                                               innermost: [cache])
        return APIClient(baseURL: sim.baseURL, transport: liveTransport, middlewares: middlewares,
                         maxResponseBytes: maxResponseBytes)
    }

    @Test("The chain asks for gzip; the wire and the cache carry gzip; the caller gets JSON without the coding's fields")
    func gzipOnTheWireJSONToTheCaller() async throws {
        try await withSimulator(.init()) { sim async throws in
            let control = SimControl(sim)
            let store = MemoryCacheStore()
            let client = Self.client(sim, store: store)
            let first = try await client.send(Self.events)
            let log = try await control.log()
            let entry = try #require(log.last)
            #expect(entry.headers["accept-encoding"] == "gzip, deflate")
            let onTheWire = try #require(entry.bytesSent)
            #expect(onTheWire * 4 < first.bodyBytes, "\(onTheWire) bytes on the wire for \(first.bodyBytes) decoded")
            #expect(first.headers[.contentEncoding] == nil)
            #expect(first.headers[.contentLength] == nil)
            let decoded = try JSONSerialization.jsonObject(with: first.value) as? [Any]
            #expect((decoded?.count ?? 0) > 0)
            let stats = try await store.stats()
            #expect(stats.entries == 1)
            #expect(stats.bytes < first.bodyBytes, "the store keeps the encoded body: \(stats.bytes) bytes")

            let second = try await client.send(Self.events)
            #expect(second.cache == .hit)
            #expect(second.value == first.value)
            #expect(second.headers[.contentEncoding] == nil)
            #expect(try await control.log().count == log.count, "a hit sends nothing")
        }
    }

    @Test("Opt-out: without the middleware, and for a request that names its own Accept-Encoding, nothing is asked or decoded")
    func optOut() async throws {
        try await withSimulator(.init()) { sim async throws in
            let control = SimControl(sim)
            let plain = try await Self.client(sim, decompression: false).send(Self.events)
            #expect(try await control.log().last?.headers["accept-encoding"] == nil)
            #expect(plain.headers[.contentEncoding] == nil)

            var own = Self.events
            own.headers[.acceptEncoding] = "gzip"
            let encoded = try await Self.client(sim).send(own)
            #expect(try await control.log().last?.headers["accept-encoding"] == "gzip")
            #expect(encoded.headers[.contentEncoding] == "gzip", "the caller asked for gzip itself and gets it as sent")
            #expect(encoded.value.first == 0x1F)
            #expect(try await Self.client(sim).send(Self.events).value == plain.value)
        }
    }

    @Test("APIClient.live puts the decoder into the chain it is given, above the cache, unless told not to")
    func liveClientDecodes() async throws {
        try await withSimulator(.init()) { sim async throws in
            let control = SimControl(sim)
            let cache = CacheMiddleware(store: MemoryCacheStore())
            let client = APIClient.live(baseURL: sim.baseURL, transport: liveTransport,
                                        middlewares: Middlewares.standard(innermost: [cache]))
            let decoder = try #require(client.middlewares.firstIndex { $0 is DecompressionMiddleware })
            let store = try #require(client.middlewares.firstIndex { $0 is CacheMiddleware })
            #expect(decoder < store)
            let response = try await client.send(Self.events)
            #expect(try await control.log().last?.headers["accept-encoding"] == "gzip, deflate")
            #expect(response.headers[.contentEncoding] == nil)

            let plain = APIClient.live(baseURL: sim.baseURL, transport: liveTransport, decompressing: false)
            #expect(!plain.middlewares.contains { $0 is DecompressionMiddleware })
            _ = try await plain.send(Self.events)
            #expect(try await control.log().last?.headers["accept-encoding"] == nil)
        }
    }

    /// A stored-response source of the test's own, which nobody notes.
    struct OwnSource: ClientMiddleware, StoredResponseSource {
        func intercept(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
                       next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?))
            async throws -> (HTTPResponse, HTTPBody?) { try await next(request, body, baseURL) }
        func storedResponse(for request: HTTPRequest, baseURL: URL) async -> (HTTPResponse, Data)? { nil }
    }

    /// A middleware of the test's own that is neither.
    struct OwnPlain: ClientMiddleware {
        func intercept(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
                       next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?))
            async throws -> (HTTPResponse, HTTPBody?) { try await next(request, body, baseURL) }
    }

    @Test("The cache and the decoder are told by their type, without a protocol cast; a source of one's own by its protocol")
    func rolesByType() {
        let cache = CacheMiddleware(store: MemoryCacheStore())
        let decoder = DecompressionMiddleware()
        #expect(StoredRoles.isNoted(CacheMiddleware.self))
        #expect(StoredRoles.isNoted(DecompressionMiddleware.self))
        #expect(!StoredRoles.isNoted(OwnSource.self))
        func role(_ middleware: any ClientMiddleware) -> String {
            switch StoredRoles.role(of: middleware) {
            case .source: "source"
            case .adapter: "adapter"
            case .neither: "neither"
            }
        }
        #expect(role(cache) == "source")
        #expect(role(decoder) == "adapter")
        #expect(role(OwnSource()) == "source")
        #expect(role(RetryMiddleware()) == "neither")
        #expect(role(OwnPlain()) == "neither")
    }

    @Test("sendOrStored: a stored gzip answer is looked up as the chain asked for it and handed up decoded")
    func storedAnswerDecoded() async throws {
        try await withSimulator(.init()) { sim async throws in
            let client = Self.client(sim, retry: RetryMiddleware(policy: .init(maxAttempts: 1)))
            let first = try await client.send(Self.events)
            await sim.simulator.injectFaults(Fault(route: Self.eventsRoute, status: 503, times: 10))
            var reload = Self.events
            reload.headers[.cacheControl] = "max-age=0"
            let stale = try await client.sendOrStored(reload)
            #expect(stale.cache == .stale)
            #expect(stale.value == first.value)
            #expect(stale.headers[.contentEncoding] == nil)
        }
    }

    /// Notes the length of each body handed up to it.
    final class BodyLengths: ClientMiddleware {
        let seen = Mutex<[HTTPBody.Length?]>([])
        func intercept(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
                       next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)) async throws -> (HTTPResponse, HTTPBody?) {
            let (response, responseBody) = try await next(request, body, baseURL)
            seen.withLock { $0.append(responseBody?.length) }
            return (response, responseBody)
        }
    }

    @Test("A body the cache decoded to judge it is handed up as decoded, not decoded again")
    func cacheDecodingKept() async throws {
        try await withSimulator(.init()) { sim async throws in
            let cache = CacheMiddleware(store: MemoryCacheStore(), options: .init(mode: .private))
            let lengths = BodyLengths()
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport,
                                   middlewares: [lengths, DecompressionMiddleware(), cache])
            let first = try await client.send(Self.events)
            #expect(first.cache == .miss)
            // Decoded as it is read, a body's length is unknown: known, it is the cache's decoding.
            #expect(lengths.seen.withLock { $0 } == [.known(Int64(first.bodyBytes))])
            #expect((try JSONSerialization.jsonObject(with: first.value) as? [Any])?.isEmpty == false)
        }
    }

    @Test("A refresh answered with corrupt gzip never replaces the stored answer: the apps' cache serves that one stale")
    func corruptRefreshKeepsStored() async throws {
        try await withSimulator(.init()) { sim async throws in
            let cache = CacheMiddleware(store: MemoryCacheStore(), options: .init(mode: .private, serveStaleOnFailure: true))
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport,
                                   middlewares: Middlewares.standard(decompression: DecompressionMiddleware(), innermost: [cache]))
            let first = try await client.send(Self.events)
            await sim.simulator.injectFaultMode(FaultMode(route: Self.eventsRoute, mode: .corruptGzip))
            var reload = Self.events
            reload.headers[.cacheControl] = "max-age=0"
            let stale = try await client.send(reload)
            #expect(stale.cache == .stale)
            #expect(stale.value == first.value)
            guard case .failed(.undecodableBody("gzip", "the data is corrupt", _))? = stale.staleReason else {
                Issue.record("expected the decoding failure as the stale reason, got \(String(describing: stale.staleReason))")
                return
            }
            let again = try await client.send(Self.events)
            #expect(again.value == first.value, "the good answer is still the stored one")
        }
    }

    @Test("A corrupt gzip body is a typed error that says so")
    func corruptGzip() async throws {
        try await withSimulator(.init()) { sim async throws in
            await sim.simulator.injectFaultMode(FaultMode(route: Self.eventsRoute, mode: .corruptGzip))
            let result = await Result { () async throws(APIError) in try await Self.client(sim).send(Self.events) }
            guard case .failure(.undecodableBody("gzip", let reason, let url)) = result else {
                Issue.record("expected undecodableBody, got \(result)")
                return
            }
            #expect(reason == "the data is corrupt")
            #expect(url.hasSuffix(Self.eventsRoute))
            let message = (try? result.get()).map { _ in "" } ?? String(describing: result.failure!)
            #expect(message.contains("gzip-encoded but does not decode (the data is corrupt)"), "\(message)")
        }
    }

    @Test("A gzip body cut before its trailer, framed whole, is a typed error: the stream ends early")
    func truncatedGzip() async throws {
        try await withSimulator(.init()) { sim async throws in
            await sim.simulator.injectFaultMode(FaultMode(route: Self.eventsRoute, mode: .truncatedGzip))
            let result = await Result { () async throws(APIError) in try await Self.client(sim).send(Self.events) }
            guard case .failure(.undecodableBody("gzip", let reason, _)) = result else {
                Issue.record("expected undecodableBody, got \(result)")
                return
            }
            #expect(reason == "the stream ends early")
        }
    }

    @Test("A gzip bomb stops at the body limit: the decoder stops reading long before the body's end")
    func gzipBomb() async throws {
        try await withSimulator(.init()) { sim async throws in
            // 64 GiB of zeros, about 64 MB encoded; the limit is 10 MiB decoded (about 10 KB encoded).
            // Without coalescing, which would buffer the encoded body (to its own limit) first: the
            // decoder reads the wire as the client reads it. The transport counts what was pulled.
            await sim.simulator.injectFaultMode(FaultMode(route: Self.eventsRoute, mode: .gzipBomb))
            let pulled = Mutex(0)
            let counting = ClosureTransport { request, body, baseURL in
                let (response, responseBody) = try await liveTransport.send(request, body: body, baseURL: baseURL, operationID: "")
                return (response, responseBody.map { encoded in
                    HTTPBody(encoded.map { chunk in
                        pulled.withLock { $0 += chunk.count }
                        return chunk
                    }, length: encoded.length, iterationBehavior: encoded.iterationBehavior)
                })
            }
            let middlewares = Middlewares.standard(coalescing: nil, decompression: DecompressionMiddleware())
            let client = APIClient(baseURL: sim.baseURL, transport: counting, middlewares: middlewares)
            let result = await Result { () async throws(APIError) in try await client.send(Self.events) }
            guard case .failure(.bodyTooLarge(let limit, _)) = result else {
                Issue.record("expected bodyTooLarge, got \(result)")
                return
            }
            #expect(limit == APIClient.defaultMaxResponseBytes)
            let read = pulled.withLock { $0 }
            #expect(read < 1_000_000, "\(read) encoded bytes were read of about 64 MB")

            // Through the standard chain (coalescing buffers at most its own limit of encoded bytes).
            await sim.simulator.injectFaultMode(FaultMode(route: Self.eventsRoute, mode: .gzipBomb, size: 4 << 30))
            let once = Self.client(sim, retry: RetryMiddleware(policy: .init(maxAttempts: 1)))
            let standard = await Result { () async throws(APIError) in try await once.send(Self.events) }
            guard case .failure(.bodyTooLarge) = standard else {
                Issue.record("expected bodyTooLarge through the standard chain, got \(standard)")
                return
            }
        }
    }

    @Test("A rate-limit refusal in gzip keeps GitHub's message")
    func gzipRateLimitMessage() async throws {
        try await withSimulator(.init(enforceRateLimits: true)) { sim async throws in
            await sim.simulator.setRateLimit(resource: .core, remaining: 0)
            let result = await Result { () async throws(APIError) in try await Self.client(sim).send(Self.events) }
            guard case .failure(.rateLimited(_, let message?, _, let response?)) = result else {
                Issue.record("expected rateLimited with the API's message, got \(result)")
                return
            }
            #expect(message.contains("API rate limit exceeded"), "\(message)")
            #expect(response.headerFields[.contentEncoding] == nil)
            #expect(try await SimControl(sim).log().last?.headers["accept-encoding"] == "gzip, deflate")
        }
    }
}

extension Result where Failure == APIError {
    /// The error, for a failure.
    fileprivate var failure: APIError? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
