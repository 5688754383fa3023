import Foundation
import Freshet
import FreshetCache
import FreshetProxy
import FreshetSimulator
import FreshetTestSupport
import HTTPTypes
import Testing

/// A stored answer that must be validated is revalidated from the event loop
/// (`ProxyHitHandler`, `CacheMiddleware.revalidationFromMemory`): what the chain's revalidation
/// decides, decided there — a `304` freshens the stored copy, a new answer replaces it, a failure
/// is answered with it stale where allowed. Every request here asks nothing of the cache (no
/// `Cache-Control`, validators or `Range`), so after the first (a miss, through the chain) each
/// takes that path.
@Suite("freshet proxy: stored answers revalidated on the event loop")
struct LoopRevalidationTests {
    static func stored(_ etag: String, extra: [[String]] = []) -> [[String]] {
        [["Content-Type", "application/json"], ["Cache-Control", "public, max-age=600"], ["ETag", etag]] + extra
    }

    /// What the origin saw for `path`: status and `If-None-Match`, in order.
    static func seen(_ sim: RunningSimulator, _ path: String) async -> [String] {
        await sim.simulator.requestLog().filter { $0.path == path }
            .map { "\($0.status) \($0.headers["if-none-match"] ?? "-")" }
    }

    /// Runs `body` with a `--revalidate always` proxy in front of a simulator serving `scripts`.
    static func withRevalidatingProxy(_ scripts: [String: Script], headTimeout: Duration = .seconds(20),
                                      _ body: @Sendable (InProcessProxy, RunningSimulator) async throws -> Void) async throws {
        try await withSimulator { sim in
            for (path, script) in scripts { await sim.simulator.setScript(path: path, script) }
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: sim.baseURL, store: store, options: .init(revalidatesEveryHit: true),
                                             headTimeout: headTimeout) { proxy in
                    try await body(proxy, sim)
                }
            }
        }
    }

    @Test("--revalidate always: a 304 answers REVALIDATED; a changed answer is relayed as a MISS and stored, its ETag sent next")
    func changedAnswerIsStored() async throws {
        try await withSimulator { sim in
            // A paginated answer, as GitHub's: its Link is rewritten to the proxy on every path.
            let link = ["Link", "<\(sim.baseURL.absoluteString)/scripted/doc?page=2>; rel=\"next\""]
            await sim.simulator.setScript(path: "/scripted/doc",
                                          Script(headers: Self.stored("\"e1\"", extra: [link]), body: "{\"v\":1}"))
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: sim.baseURL, store: store, options: .init(revalidatesEveryHit: true)) { proxy in
                    var answers = [try await proxy.send("/scripted/doc"), try await proxy.send("/scripted/doc")]
                    await sim.simulator.setScript(path: "/scripted/doc", Script(headers: Self.stored("\"e2\""), body: "{\"v\":2}"))
                    answers.append(try await proxy.send("/scripted/doc"))
                    answers.append(try await proxy.send("/scripted/doc"))
                    #expect(answers.map(\.cache) == ["MISS", "REVALIDATED", "MISS", "REVALIDATED"])
                    #expect(answers.map(\.body) == ["{\"v\":1}", "{\"v\":1}", "{\"v\":2}", "{\"v\":2}"])
                    #expect(answers.map(\.status) == [200, 200, 200, 200])
                    #expect(answers[1].fields[.eTag] == "\"e1\"" && answers[3].fields[.eTag] == "\"e2\"")
                    #expect(answers[1].fields[.cacheStatus] == "freshet; fwd=stale; fwd-status=304")
                    #expect(answers[1].fields[.link] == "<\(proxy.base.absoluteString)/scripted/doc?page=2>; rel=\"next\"")
                    #expect(await Self.seen(sim, "/scripted/doc") == ["200 -", "304 \"e1\"", "200 \"e1\"", "304 \"e2\""],
                            "the new answer replaced the stored one: its validator goes with the next request")
                    let allLogged = await eventually { proxy.entries.all.count == 4 }
                    #expect(allLogged)
                    let logged = proxy.entries.all.map { "\($0.status) \($0.outcome?.rawValue ?? "-")" }
                    #expect(logged == ["200 miss", "200 revalidated", "200 miss", "200 revalidated"])
                }
            }
        }
    }

    @Test("A 304 read whole below NIO's codec, and one only NIO's decoder reads, both freshen the stored answer; Connection: close is honoured")
    func notModifiedOnEitherPath() async throws {
        let stored = "HTTP/1.1 200 OK\r\nCache-Control: public, max-age=600\r\nETag: \"e1\"\r\nX-Version: one\r\nContent-Length: 2\r\n\r\nv1"
        func notModified(_ lines: String) -> String { "HTTP/1.1 304 Not Modified\r\nETag: \"e1\"\r\n" + lines + "\r\n" }
        // Whitespace before a CRLF is read by NIO's decoder alone (which drops it).
        let origin = try RawOrigin(responses: [stored, notModified("X-Version: two\r\n"), notModified("X-Version: three \r\n"),
                                               notModified("X-Version: four\r\nConnection: close\r\n"), notModified("X-Version: five\r\n")],
                                   keepAlive: true)
        defer { origin.stop() }
        try await withSQLiteStore { store, _ in
            try await withInProcessProxy(origin: origin.url, store: store, options: .init(revalidatesEveryHit: true)) { proxy in
                var answers: [Answer] = []
                for _ in 0..<5 { answers.append(try await proxy.send("/doc")) }
                #expect(answers.map(\.cache) == ["MISS", "REVALIDATED", "REVALIDATED", "REVALIDATED", "REVALIDATED"])
                #expect(answers.map { $0.fields[HTTPField.Name("X-Version")!] } == ["one", "two", "three", "four", "five"])
                #expect(answers.map(\.body) == Array(repeating: "v1", count: 5))
                #expect(answers.dropFirst().allSatisfy { $0.fields[.contentLength] == "2" && $0.fields[.connection] == nil })
                let received = origin.received
                #expect(received.map { $0.values("If-None-Match") } == [[]] + Array(repeating: ["\"e1\""], count: 4))
                try #require(received.count == 5)
                #expect(received[2].connection == received[1].connection && received[3].connection == received[1].connection,
                        "one connection kept for the revalidations")
                #expect(received[4].connection != received[3].connection, "not after a 304 with Connection: close")
            }
        }
    }

    @Test("--revalidate always: only-if-cached is answered from the store, a HIT; a plain request is revalidated")
    func onlyIfCachedIsAHit() async throws {
        let scripts = ["/scripted/kept": Script(headers: Self.stored("\"k1\""), body: "{\"k\":1}")]
        try await Self.withRevalidatingProxy(scripts) { proxy, sim in
            let first = try await proxy.send("/scripted/kept")
            let cached = try await proxy.send("/scripted/kept", headers: [.cacheControl: "only-if-cached"])
            let plain = try await proxy.send("/scripted/kept")
            #expect([first, cached, plain].map(\.cache) == ["MISS", "HIT", "REVALIDATED"])
            #expect(cached.body == "{\"k\":1}")
            #expect(await Self.seen(sim, "/scripted/kept") == ["200 -", "304 \"k1\""], "only-if-cached never reaches the origin")
        }
    }

    @Test("A revalidation's new answer that breaks off mid-body is a failed refresh: the stored copy answers, STALE")
    func brokenNewAnswerServesStale() async throws {
        let scripts = ["/scripted/cut": Script(headers: Self.stored("\"c1\""), body: String(repeating: "x", count: 4000))]
        try await Self.withRevalidatingProxy(scripts) { proxy, sim in
            let first = try await proxy.send("/scripted/cut")
            // The route's whole answer (validators ignored), reset after 1,000 bytes.
            await sim.simulator.injectFaultMode(FaultMode(route: "/scripted/cut", mode: .resetMidBody, bytes: 1000))
            let broken = try await proxy.send("/scripted/cut")
            let after = try await proxy.send("/scripted/cut")
            #expect(first.cache == "MISS")
            #expect(broken.status == 200 && broken.cache == "STALE" && broken.body == first.body)
            #expect(after.cache == "REVALIDATED" && after.body == first.body)
        }
    }

    @Test("A 5xx to a revalidation: the stored copy answers STALE within its stale-if-error window; without one the 5xx passes")
    func serverErrorWithinStaleIfError() async throws {
        let scripts = [
            "/scripted/tolerant": Script(headers: Self.stored("\"t1\"", extra: [["Cache-Control", "stale-if-error=600"]]),
                                         body: "{\"t\":1}"),
            "/scripted/strict": Script(headers: Self.stored("\"s1\""), body: "{\"s\":1}"),
        ]
        try await Self.withRevalidatingProxy(scripts) { proxy, sim in
            for path in ["/scripted/tolerant", "/scripted/strict"] {
                #expect(try await proxy.send(path).cache == "MISS")
                await sim.simulator.injectFaults(Fault(route: path, status: 503, body: "{\"down\":true}"))
            }
            let tolerant = try await proxy.send("/scripted/tolerant")
            let strict = try await proxy.send("/scripted/strict")
            #expect(tolerant.status == 200 && tolerant.cache == "STALE" && tolerant.body == "{\"t\":1}")
            #expect(strict.status == 503 && strict.cache == "MISS" && strict.body == "{\"down\":true}")
            // The 503 did not replace the stored copy.
            #expect(try await proxy.send("/scripted/strict").cache == "REVALIDATED")
        }
    }

    @Test("A client that leaves while its revalidation is held at the origin: the proxy lets the request and its key go")
    func clientLeavesMidRevalidation() async throws {
        try await Self.withRevalidatingProxy(["/scripted/left": Script(headers: Self.stored("\"l1\""), body: "{\"l\":1}")]) { proxy, sim in
            #expect(try await proxy.send("/scripted/left").cache == "MISS")
            await sim.simulator.hold(route: "/scripted/left")
            let client = try RawClient(port: try #require(proxy.base.port))
            client.send("GET /scripted/left HTTP/1.1\r\nHost: a\r\n\r\n")
            let held = await eventually { await sim.simulator.stats().inFlight >= 1 }
            #expect(held, "the revalidation reached the origin")
            client.close()
            // Hummingbird's connection-state handler does not pass `channelInactive` on: the
            // proxy must notice the close all the same, or the key stays claimed.
            let noticed = await eventually {
                (try? await proxy.metrics()).flatMap { sample($0, "freshet_proxy_requests_in_flight") } == 0
            }
            #expect(noticed, "the request the client left is no longer in flight")
            await sim.simulator.release(route: "/scripted/left")
            #expect(try await proxy.send("/scripted/left").cache == "REVALIDATED")
        }
    }

    @Test("An origin that does not answer a revalidation in time: the stored copy answers STALE, not 504")
    func timeoutServesStale() async throws {
        let scripts = ["/scripted/slow": Script(headers: Self.stored("\"w1\""), body: "{\"w\":1}")]
        try await Self.withRevalidatingProxy(scripts, headTimeout: .seconds(3)) { proxy, sim in
            #expect(try await proxy.send("/scripted/slow").cache == "MISS")
            await sim.simulator.hold(route: "/scripted/slow")
            let late = try await proxy.send("/scripted/slow")
            await sim.simulator.release(route: "/scripted/slow")
            #expect(late.status == 200 && late.cache == "STALE" && late.body == "{\"w\":1}")
        }
    }
}
