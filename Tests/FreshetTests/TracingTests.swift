import Foundation
import Freshet
import FreshetCache
import FreshetSimulator
import FreshetTestSupport
import HTTPTypes
import InMemoryTracing
import OpenAPIRuntime
import Synchronization
import Testing
import Tracing

/// One span per exchange, with the cache's outcome and the retry's attempt; the trace context
/// goes out in the request's header fields; `Response.timing` measures the exchange.
@Suite struct TracingTests {
    static func client(_ sim: RunningSimulator, tracer: InMemoryTracer) -> APIClient {
        APIClient(baseURL: sim.baseURL, transport: liveTransport, middlewares: Middlewares.standard(
            tracing: TracingMiddleware(tracer: tracer),
            retry: RetryMiddleware(policy: .init(maxAttempts: 3, baseDelay: .milliseconds(1), maxDelay: .milliseconds(5))),
            innermost: [CacheMiddleware(store: MemoryCacheStore())]))
    }

    @Test func aRetriedExchangeThenACacheHitEachMakeOneSpan() async throws {
        try await withSimulator { sim in
            let tracer = InMemoryTracer()
            let client = Self.client(sim, tracer: tracer)
            try await SimControl(sim).script("trace", headers: [("Cache-Control", "max-age=600")], body: "[1,2]")
            await sim.simulator.injectFaults(Fault(route: "/scripted/trace", status: 503, times: 1))
            let endpoint = Endpoint<[Int]>.get("scripted", "trace").named("/scripted/{name}")
            let first = try await client.send(endpoint)
            #expect(first.attempt == 2)
            let spans = tracer.popFinishedSpans()
            #expect(spans.count == 1)
            let span = try #require(spans.first)
            #expect(span.operationName == "GET /scripted/{name}")
            #expect(span.kind == .client)
            #expect(span.attributes["http.request.method"]?.toSpanAttribute() == .string("GET"))
            #expect(span.attributes["url.template"]?.toSpanAttribute() == .string("/scripted/{name}"))
            #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
            #expect(span.attributes["freshet.attempt"]?.toSpanAttribute() == .int64(2))
            #expect(span.attributes["freshet.cache"]?.toSpanAttribute() == .string("miss"))
            #expect(span.attributes["server.address"]?.toSpanAttribute() == .string("127.0.0.1"))
            #expect(span.status == nil)
            // Both attempts carried the span's context.
            let sent = await sim.simulator.requestLog().filter { $0.path == "/scripted/trace" }
            #expect(sent.count == 2)
            #expect(sent.allSatisfy { $0.headers[InMemoryTracer.spanIDKey] == span.spanID })

            let second = try await client.send(endpoint)
            #expect(second.cache == .hit)
            let hit = try #require(tracer.popFinishedSpans().first)
            #expect(hit.attributes["freshet.cache"]?.toSpanAttribute() == .string("hit"))
            #expect(hit.attributes["freshet.attempt"]?.toSpanAttribute() == .int64(1))
        }
    }

    @Test func aFailedExchangeIsAnErrorSpan() async throws {
        try await withSimulator { sim in
            let tracer = InMemoryTracer()
            let client = Self.client(sim, tracer: tracer)
            await #expect(throws: APIError.self) { try await client.send(Endpoint<HNItemStub>.get("v0", "nothing-here")) }
            let span = try #require(tracer.popFinishedSpans().first)
            #expect(span.operationName == "GET /v0")
            #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(404))
            #expect(span.attributes["error.type"]?.toSpanAttribute() == .string("404"))
            #expect(span.status?.code == .error)
        }
    }

    /// The moments a scripted transport saw, on the clock `Response.timing` uses.
    struct Marks {
        var entered: ContinuousClock.Instant?, headReturned: ContinuousClock.Instant?
        var firstRead: ContinuousClock.Instant?, bodyEnded: ContinuousClock.Instant?
        var chunksLeft = 3
    }

    /// Bounds from what the transport saw, not from how long anything takes: the client's clock
    /// starts before the transport is entered and stops for the head after the transport returns
    /// it, which is before the body's first read; the total ends after the body's last read. So
    /// the time to headers covers the transport's work, and the total less the time to headers
    /// covers the body's reading — also under the standard chain, whose coalescing middleware
    /// reads the body before handing the head on.
    @Test func theResponseCarriesItsTiming() async throws {
        let marks = Mutex(Marks())
        let transport = ClosureTransport { _, _, _ in
            marks.withLock { $0.entered = .now }
            try await Task.sleep(for: .milliseconds(2))  // a span to measure, not a wait for anything
            let chunks = AsyncThrowingStream<ArraySlice<UInt8>, any Error>(unfolding: {
                let more = marks.withLock { marks -> Bool in
                    if marks.firstRead == nil { marks.firstRead = .now }
                    guard marks.chunksLeft > 0 else { return false }
                    marks.chunksLeft -= 1
                    return true
                }
                guard more else {
                    marks.withLock { $0.bodyEnded = .now }
                    return nil
                }
                try await Task.sleep(for: .milliseconds(1))
                return ArraySlice(repeating: UInt8(ascii: "x"), count: 100)
            })
            marks.withLock { $0.headReturned = .now }
            return (HTTPResponse(status: .ok), HTTPBody(chunks, length: .known(300), iterationBehavior: .single))
        }
        let client = APIClient(baseURL: URL(string: "http://127.0.0.1:9")!, transport: transport,
                               middlewares: Middlewares.standard())
        let before = ContinuousClock.now
        let response = try await client.send(Endpoint<Data>.raw("timed"))
        let elapsed = ContinuousClock.now - before
        let seen = marks.withLock { $0 }
        let entered = try #require(seen.entered), headReturned = try #require(seen.headReturned)
        let firstRead = try #require(seen.firstRead), bodyEnded = try #require(seen.bodyEnded)
        #expect(response.bodyBytes == 300)
        #expect(response.timing.timeToHeaders >= headReturned - entered, "\(response.timing)")
        #expect(response.timing.total - response.timing.timeToHeaders >= bodyEnded - firstRead, "\(response.timing)")
        #expect(response.timing.total <= elapsed, "\(response.timing)")
    }
}

/// Enough of a Hacker News item to decode.
struct HNItemStub: Decodable, Sendable { var id: Int }
