import Foundation
import Freshet
import FreshetCache
import FreshetSimulator
import FreshetTestSupport
import InMemoryTracing
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

    /// The body drips in three 100-byte chunks 50 ms apart, so reading it takes at least 100 ms
    /// after the head: the total is later than the time to headers by at least that — also under
    /// the standard chain, whose coalescing middleware reads the body before handing the head on.
    @Test func theResponseCarriesItsTiming() async throws {
        try await withSimClient(middlewares: Middlewares.standard()) { _, client in
            let response = try await client.send(Endpoint<Data>.raw("_sim", "drip", query: [
                QueryItem("bytes", "300"), QueryItem("chunk", "100"), QueryItem("intervalMs", "50"),
            ]))
            #expect(response.bodyBytes == 300)
            #expect(response.timing.timeToHeaders > .zero)
            #expect(response.timing.total - response.timing.timeToHeaders >= .milliseconds(100))
        }
    }
}

/// Enough of a Hacker News item to decode.
struct HNItemStub: Decodable, Sendable { var id: Int }
