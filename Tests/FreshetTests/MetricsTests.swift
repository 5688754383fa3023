import Foundation
import Freshet
import FreshetCache
import FreshetSimulator
import FreshetTestSupport
import FreshetTransports
import HTTPTypes
import MetricsTestKit
import OpenAPIRuntime
import Testing

/// `MetricsMiddleware` in the standard chain, against the simulator: its counters agree with the
/// simulator's request log, split by status class and cache outcome; and `Response.timing`'s
/// phases from `HTTP1Transport`.
@Suite("Metrics", .timeLimit(.minutes(1)))
struct MetricsTests {
    static let requests = "freshet_client_requests_total"

    /// The standard chain with the metrics middleware, retries without waiting, and (when asked) a cache.
    static func client(_ sim: RunningSimulator, metrics: TestMetrics, cache: Bool = true,
                       transport: any ClientTransport = liveTransport) -> APIClient {
        APIClient(baseURL: sim.baseURL, transport: transport, middlewares: Middlewares.standard(
            metrics: MetricsMiddleware(factory: metrics),
            retry: RetryMiddleware(policy: .init(maxAttempts: 3), sleep: { _ in }),
            innermost: cache ? [CacheMiddleware(store: MemoryCacheStore())] : []))
    }

    static func scripted(_ name: String) -> Endpoint<[Int]> {
        Endpoint<[Int]>.get("scripted", name).named("/scripted/{name}")
    }

    /// The requests counted with these dimensions (a subset of each counter's).
    static func counted(_ metrics: TestMetrics, _ dimensions: [(String, String)]) -> Int64 {
        metrics.counterTotal(label: requests, dimensions: dimensions)
    }

    @Test("The counters match the requests the server received, by status class and cache outcome")
    func countersMatchTheServersLog() async throws {
        try await withSimulator { sim in
            let control = SimControl(sim)
            try await control.script("fresh", headers: [("Cache-Control", "max-age=600")], body: "[1,2,3]")
            try await control.script("validated", headers: [("Cache-Control", "no-cache"), ("ETag", "\"v1\"")], body: "[4,5]")
            try await control.script("flaky", headers: [("Cache-Control", "no-store")], body: "[6]")
            await sim.simulator.injectFaults(Fault(route: "/scripted/flaky", status: 503, times: 1))
            let metrics = TestMetrics()
            let client = Self.client(sim, metrics: metrics)

            var bodies = 0
            var outcomes: [CacheOutcome?] = []
            for name in ["fresh", "fresh", "validated", "validated", "flaky"] {
                let response = try await client.send(Self.scripted(name))
                bodies += response.bodyBytes
                outcomes.append(response.cache)
            }
            #expect(outcomes == [.miss, .hit, .miss, .revalidated, .miss])
            let missing = await #expect(throws: APIError.self) { try await client.send(Endpoint<[Int]>.get("v0", "nothing-here")) }
            let notFoundBody = try #require(missing?.response).body.count
            #expect(notFoundBody > 0)
            bodies += notFoundBody
            let upload = Data("[\"a request body\"]".utf8)
            // The simulator's upload echo reads the body and describes it.
            let posted = try await client.send(Endpoint<Data>(method: .post, path: ["upload"], body: upload) { data, _ in data })
            bodies += posted.bodyBytes

            let log = await sim.simulator.requestLog()
            #expect(log.count == 7, "\(log.map { "\($0.method) \($0.path) \($0.status)" })")

            // Each request counted once, by what the caller got.
            let get = ("method", "GET"), route = ("route", "/scripted/{name}")
            #expect(Self.counted(metrics, [get, route, ("status_class", "2xx"), ("cache", "miss")]) == 3)
            #expect(Self.counted(metrics, [get, route, ("status_class", "2xx"), ("cache", "hit")]) == 1)
            #expect(Self.counted(metrics, [get, route, ("status_class", "2xx"), ("cache", "revalidated")]) == 1)
            #expect(Self.counted(metrics, [get, ("route", "/v0"), ("status_class", "4xx"), ("cache", "miss")]) == 1)
            #expect(Self.counted(metrics, [("method", "POST"), ("route", "/upload"), ("status_class", "2xx"), ("cache", "none")]) == 1)
            #expect(metrics.counterTotal(label: Self.requests) == 7)
            #expect(metrics.counterTotal(label: "freshet_client_retries_total", dimensions: [get, route]) == 1)
            #expect(metrics.counterTotal(label: "freshet_client_retries_total") == 1)

            // What the server saw: every request but the hit, once, and once more for each retry.
            let retries = metrics.counterTotal(label: "freshet_client_retries_total")
            let notHits = metrics.counterTotal(label: Self.requests) - Self.counted(metrics, [("cache", "hit")])
            #expect(Int64(log.count) == notHits + retries)
            #expect(Int64(log.filter { $0.status == 200 || $0.status == 304 }.count)
                        == Self.counted(metrics, [("status_class", "2xx")]) - Self.counted(metrics, [("cache", "hit")]))
            #expect(Int64(log.filter { $0.status == 503 }.count) == retries)
            #expect(Int64(log.filter { $0.status == 404 }.count) == Self.counted(metrics, [("status_class", "4xx")]))

            // Bytes: the bodies the caller got (the hit's too), and the request body the server read.
            #expect(metrics.counterTotal(label: "freshet_client_received_bytes_total") == Int64(bodies))
            let sent = metrics.counterTotal(label: "freshet_client_sent_bytes_total", dimensions: [("method", "POST")])
            #expect(sent == Int64(upload.count))
            #expect(log.first { $0.method == "POST" }?.bytesReceived == upload.count)
            #expect(posted.bodyBytes > 0)

            // One duration per request, under the same dimensions.
            #expect(metrics.timers(label: "freshet_client_request_duration_seconds").map(\.values.count).reduce(0, +) == 7)
        }
    }

    @Test("A request that fails is counted as an error, with the retries it took")
    func aFailureIsCountedWithItsRetries() async throws {
        let metrics = TestMetrics()
        let client = APIClient(baseURL: try await closedLoopbackURL(), transport: liveTransport, middlewares: Middlewares.standard(
            metrics: MetricsMiddleware(factory: metrics),
            retry: RetryMiddleware(policy: .init(maxAttempts: 3), sleep: { _ in })))
        await #expect(throws: APIError.self) { try await client.send(Self.scripted("anything")) }
        #expect(Self.counted(metrics, [("route", "/scripted/{name}"), ("status_class", "error"), ("cache", "none")]) == 1)
        #expect(metrics.counterTotal(label: Self.requests) == 1)
        #expect(metrics.counterTotal(label: "freshet_client_retries_total") == 2, "three attempts, none answered")
        #expect(metrics.counterTotal(label: "freshet_client_received_bytes_total") == 0)
    }

    @Test("A cancelled request is counted as cancelled")
    func aCancelledRequestIsCounted() async throws {
        try await withSimulator { sim in
            let control = SimControl(sim)
            try await control.script("held", headers: [], body: "[1]")
            try await control.hold(route: "/scripted/held")
            let metrics = TestMetrics()
            let client = Self.client(sim, metrics: metrics, cache: false)
            let task = Task { try await client.send(Self.scripted("held")) }
            let arrived = await eventually { await sim.simulator.requestLog().contains { $0.path == "/scripted/held" } }
            #expect(arrived)
            task.cancel()
            _ = await task.result
            try await control.release(route: "/scripted/held")
            #expect(Self.counted(metrics, [("route", "/scripted/{name}"), ("status_class", "cancelled")]) == 1)
            #expect(metrics.counterTotal(label: Self.requests) == 1)
        }
    }

    @Test("In a chain of its own, without APIClient's report, it still sees the cache's outcome")
    func withoutAnExchangeReport() async throws {
        try await withSimulator { sim in
            try await SimControl(sim).script("fresh", headers: [("Cache-Control", "max-age=600")], body: "[1,2,3]")
            let metrics = TestMetrics()
            // As a swift-openapi-generator client calls its middlewares: an operation ID, no report bound.
            let send = APIClient.chain(
                middlewares: [MetricsMiddleware(factory: metrics), CacheMiddleware(store: MemoryCacheStore())],
                transport: liveTransport, operationID: "getFresh")
            for _ in 0..<2 {
                #expect(ExchangeReport.current == nil)
                let (response, body) = try await send(
                    HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/scripted/fresh"), nil, sim.baseURL)
                #expect(response.status == .ok)
                #expect(try await Data(collecting: try #require(body), upTo: 1024) == Data("[1,2,3]".utf8))
            }
            let operation = [("method", "GET"), ("route", "getFresh"), ("status_class", "2xx")]
            #expect(Self.counted(metrics, operation + [("cache", "miss")]) == 1)
            #expect(Self.counted(metrics, operation + [("cache", "hit")]) == 1)
            #expect(metrics.counterTotal(label: "freshet_client_received_bytes_total") == 14)
        }
    }

    @Test("HTTP1Transport reports connect and time to first byte on a new connection, not connect on a reused one")
    func http1TransportPhases() async throws {
        try await withSimulator { sim in
            let control = SimControl(sim)
            try await control.script("fresh", headers: [("Cache-Control", "max-age=600")], body: "[1,2,3]")
            try await control.script("plain", headers: [("Cache-Control", "no-store")], body: "[4]")
            let pool = HTTP1ConnectionPool()
            defer { pool.closeIdleConnections() }
            let metrics = TestMetrics()
            let client = Self.client(sim, metrics: metrics, transport: HTTP1Transport(pool: pool))

            let first = try await client.send(Self.scripted("plain")).timing
            let connect = try #require(first.connect, "\(first)")
            let firstByte = try #require(first.timeToFirstByte, "\(first)")
            #expect(first.tlsHandshake == nil)
            #expect(connect + firstByte <= first.timeToHeaders, "\(first)")
            #expect(first.timeToHeaders <= first.total, "\(first)")

            let second = try await client.send(Self.scripted("plain")).timing
            #expect(second.connect == nil, "the connection was reused: \(second)")
            #expect(second.tlsHandshake == nil)
            let again = try #require(second.timeToFirstByte, "\(second)")
            #expect(again <= second.timeToHeaders, "\(second)")
            #expect(pool.openConnections == 1)

            // A cache hit makes no exchange: no phases.
            _ = try await client.send(Self.scripted("fresh"))
            let hit = try await client.send(Self.scripted("fresh"))
            #expect(hit.cache == .hit)
            #expect(hit.timing.connect == nil && hit.timing.tlsHandshake == nil && hit.timing.timeToFirstByte == nil,
                    "\(hit.timing)")

            // The metrics: one connection made, a time to first byte for each of the three exchanges.
            #expect(metrics.timers(label: "freshet_client_connect_duration_seconds").map(\.values.count) == [1])
            #expect(metrics.timers(label: "freshet_client_tls_handshake_duration_seconds").isEmpty)
            #expect(metrics.timers(label: "freshet_client_time_to_first_byte_seconds").map(\.values.count).reduce(0, +) == 3)
        }
    }

    @Test("A transport that does not know the phases leaves them nil")
    func asyncHTTPClientHasNoPhases() async throws {
        try await withSimulator { sim in
            try await SimControl(sim).script("plain", headers: [("Cache-Control", "no-store")], body: "[4]")
            let timing = try await Self.client(sim, metrics: TestMetrics()).send(Self.scripted("plain")).timing
            #expect(timing.connect == nil && timing.tlsHandshake == nil && timing.timeToFirstByte == nil, "\(timing)")
        }
    }
}
