import Foundation
import Freshet
import FreshetCache
import FreshetProxy
import FreshetSimulator
import FreshetTestSupport
import HTTPTypes
import ServiceLifecycle
import Testing

/// What the cache could not keep is forwarded on the event loop (hit-for-miss, ProxyPass.swift):
/// told apart from the chain's forwarding by the `Accept-Encoding` the origin sees — the chain
/// asks for `gzip` (one stored representation for every client), the event loop for what the
/// client takes.
@Suite("freshet proxy: answers the cache cannot keep, forwarded on the event loop")
struct PassThroughTests {
    static let unkept = [["Content-Type", "application/json"], ["Cache-Control", "no-store"]]

    /// The `Accept-Encoding` the origin saw on each request for `path`, in order.
    static func encodings(_ sim: RunningSimulator, _ path: String) async -> [String] {
        await sim.simulator.requestLog().filter { $0.path == path }.map { $0.headers["accept-encoding"] ?? "-" }
    }

    @Test("After an answer the cache could not keep, the target is forwarded on the event loop with what a miss gets")
    func forwardedWithWhatAMissGets() async throws {
        try await withSimulator { sim in
            let next = "<\(sim.baseURL.absoluteString)/scripted/unkept?page=2>; rel=\"next\""
            await sim.simulator.setScript(path: "/scripted/unkept",
                                          Script(headers: Self.unkept + [["Link", next]], body: "{\"n\":1}"))
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: sim.baseURL, store: store) { proxy in
                    let takes: HTTPFields = [.acceptEncoding: "br, gzip"]
                    var answers: [Answer] = []
                    for _ in 0..<3 { answers.append(try await proxy.send("/scripted/unkept", headers: takes)) }
                    answers.append(try await proxy.send("/scripted/unkept"))
                    let head = try await proxy.send("/scripted/unkept", method: .head)
                    // `Connection: keep-alive`, which many clients send, changes nothing.
                    let client = try RawClient(port: try #require(proxy.base.port))
                    defer { client.close() }
                    client.send("GET /scripted/unkept HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\nAccept-Encoding: deflate, gzip\r\n\r\n")
                    let kept = await client.read { $0.hasSuffix("{\"n\":1}") }
                    #expect(kept.hasPrefix("HTTP/1.1 200") && kept.contains("X-Cache: MISS"))
                    #expect(await Self.encodings(sim, "/scripted/unkept")
                                == ["gzip", "br, gzip", "br, gzip", "identity", "identity", "deflate, gzip"],
                            "the first through the chain, then each with what its client takes")
                    let linkBack = "<\(proxy.base.absoluteString)/scripted/unkept?page=2>; rel=\"next\""
                    for answer in answers {
                        #expect(answer.status == 200)
                        #expect(answer.body == "{\"n\":1}")
                        #expect(answer.cache == "MISS")
                        #expect(answer.fields[.cacheStatus] == "freshet; fwd=miss")
                        #expect(answer.fields[.via] == "1.1 freshet")
                        #expect(answer.fields[.date] != nil)
                        #expect(answer.fields[.link] == linkBack, "Link points at the proxy")
                    }
                    #expect(head.status == 200 && head.body.isEmpty && head.cache == "MISS")
                    // Logged as the answer's end is written: bounded wait for the last.
                    let allLogged = await eventually { proxy.entries.all.count == 6 }
                    #expect(allLogged)
                    let logged = proxy.entries.all.map { "\($0.method) \($0.status) \($0.outcome?.rawValue ?? "-")" }
                    #expect(logged == Array(repeating: "GET 200 miss", count: 4) + ["HEAD 200 miss", "GET 200 miss"])
                    let metrics = try await proxy.metrics()
                    #expect(metrics.contains("freshet_proxy_requests_total{cache=\"miss\"} 6"))
                    #expect(metrics.contains("freshet_proxy_requests_in_flight 0"))
                }
            }
        }
    }

    @Test("An answer the cache could keep ends the mark: the next request goes through the chain and is stored")
    func storableAnswerEndsTheMark() async throws {
        try await withSimulator { sim in
            await sim.simulator.setScript(path: "/scripted/changes", Script(headers: Self.unkept, body: "one"))
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: sim.baseURL, store: store) { proxy in
                    let takes: HTTPFields = [.acceptEncoding: "gzip, br"]
                    #expect(try await proxy.send("/scripted/changes", headers: takes).cache == "MISS")
                    await sim.simulator.setScript(path: "/scripted/changes",
                                                  Script(headers: [["Cache-Control", "max-age=300"]], body: "two"))
                    var caches: [String?] = []
                    for _ in 0..<3 { caches.append(try await proxy.send("/scripted/changes", headers: takes).cache) }
                    #expect(caches == ["MISS", "MISS", "HIT"])
                    #expect(await Self.encodings(sim, "/scripted/changes") == ["gzip", "gzip, br", "gzip"],
                            "forwarded on the event loop once, then stored through the chain")
                }
            }
        }
    }

    /// A raw client that sent `text`, a request for `/scripted/held` first — marked by an answer
    /// before, it is forwarded on the event loop and held at the origin until the test releases it.
    static func forwardingHeld(_ sim: RunningSimulator, _ proxy: InProcessProxy, sending text: String) async throws -> RawClient {
        await sim.simulator.hold(route: "/scripted/held")
        let client = try RawClient(port: try #require(proxy.base.port))
        client.send(text)
        let arrived = await eventually(within: 30) {
            await sim.simulator.requestLog().filter { $0.path == "/scripted/held" }.count == 2
        }
        #expect(arrived, "the first request reached the origin")
        return client
    }

    @Test("Requests pipelined behind one forwarded on the event loop are answered after it, in order")
    func pipelinedRequestsWait() async throws {
        try await withSimulator { sim in
            await sim.simulator.setScript(path: "/scripted/held", Script(headers: Self.unkept, body: "first"))
            await sim.simulator.setScript(path: "/scripted/second", Script(headers: [["Cache-Control", "max-age=300"]],
                                                                          body: "second"))
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: sim.baseURL, store: store) { proxy in
                    #expect(try await proxy.send("/scripted/held").cache == "MISS")
                    #expect(try await proxy.send("/scripted/second").cache == "MISS")
                    let client = try await Self.forwardingHeld(sim, proxy, sending:
                        "GET /scripted/held HTTP/1.1\r\nHost: a\r\n\r\nGET /scripted/second HTTP/1.1\r\nHost: a\r\n\r\n")
                    defer { client.close() }
                    await sim.simulator.release(route: "/scripted/held")
                    let text = await client.read { $0.components(separatedBy: "HTTP/1.1 200").count == 3 && $0.hasSuffix("second") }
                    let first = try #require(text.range(of: "first"))
                    let second = try #require(text.range(of: "second"))
                    #expect(first.upperBound <= second.lowerBound, "answers in the order asked")
                    #expect(text.contains("X-Cache: HIT"), "the second, a hit, answered after the first")
                }
            }
        }
    }

    /// A `GET` read whole by the raw handler is forwarded undecoded; a `HEAD` pipelined behind it
    /// must not be decoded before that answer ends: NIO's encoder frames each answer by the
    /// method of the oldest request decoded, and would send the `GET`'s answer without its body.
    @Test("A HEAD pipelined behind a GET forwarded on the event loop: the GET's answer keeps its body, the HEAD's has none")
    func headPipelinedBehindForwardedGet() async throws {
        try await withSimulator { sim in
            await sim.simulator.setScript(path: "/scripted/held", Script(headers: Self.unkept, body: "first"))
            await sim.simulator.setScript(path: "/scripted/second", Script(headers: Self.unkept, body: "second"))
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: sim.baseURL, store: store) { proxy in
                    #expect(try await proxy.send("/scripted/held").cache == "MISS")
                    let client = try await Self.forwardingHeld(sim, proxy, sending:
                        "GET /scripted/held HTTP/1.1\r\nHost: a\r\n\r\nHEAD /scripted/second HTTP/1.1\r\nHost: a\r\n\r\n"
                        + "GET /scripted/held HTTP/1.1\r\nHost: a\r\n\r\n")
                    defer { client.close() }
                    await sim.simulator.release(route: "/scripted/held")
                    let text = await client.read { $0.components(separatedBy: "HTTP/1.1 200").count == 4 && $0.hasSuffix("first") }
                    let answers = Array(text.components(separatedBy: "HTTP/1.1 200")[1...])
                    #expect(answers.count == 3, "three answers: \(text)")
                    guard answers.count == 3 else { return }
                    #expect(answers[0].hasSuffix("\r\n\r\nfirst"), "the GET's answer has its body")
                    #expect(answers[1].hasSuffix("\r\n\r\n") && !answers[1].contains("second"), "the HEAD's has none")
                    #expect(answers[2].hasSuffix("\r\n\r\nfirst"))
                }
            }
        }
    }

    @Test("A request forwarded on the event loop that cannot reach the origin goes the chain's way, as do those pipelined behind it")
    func unreachableOriginTakesTheChain() async throws {
        let origin = try RawOrigin(responses: ["HTTP/1.1 200 OK\r\nCache-Control: no-store\r\nContent-Length: 2\r\n\r\nok"])
        defer { origin.stop() }
        try await withSQLiteStore { store, _ in
            try await withInProcessProxy(origin: origin.url, store: store) { proxy in
                #expect(try await proxy.send("/unkept").cache == "MISS")
                try await origin.stopRefusing()
                let client = try RawClient(port: try #require(proxy.base.port))
                defer { client.close() }
                client.send("GET /unkept HTTP/1.1\r\nHost: a\r\n\r\nGET /unkept HTTP/1.1\r\nHost: a\r\n\r\n")
                let text = await client.read { $0.components(separatedBy: "HTTP/1.1 502").count == 3 }
                #expect(text.components(separatedBy: "HTTP/1.1 502").count == 3, "both answered by the chain: \(text)")
                #expect(text.contains("could not reach the origin"), "with the chain's reason")
                #expect(origin.received.count == 1, "nothing else reached the origin")
            }
        }
    }

    @Test("A client that sends on while its request is forwarded on the event loop is not read without bound")
    func pipelinedBytesAreBounded() async throws {
        try await withSimulator { sim in
            await sim.simulator.setScript(path: "/scripted/held", Script(headers: Self.unkept, body: "first"))
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: sim.baseURL, store: store) { proxy in
                    #expect(try await proxy.send("/scripted/held").cache == "MISS")
                    let client = try await Self.forwardingHeld(sim, proxy, sending: "GET /scripted/held HTTP/1.1\r\nHost: a\r\n\r\n")
                    defer { client.close() }
                    // While it is forwarded, a request with a 64 MiB body: the proxy reads until a
                    // part of it is held, then the socket buffers fill and the client's sending stops.
                    let size = 64 << 20
                    client.send("POST /scripted/other HTTP/1.1\r\nHost: a\r\nContent-Length: \(size)\r\n\r\n")
                    let taken = client.send([UInt8](repeating: UInt8(ascii: "x"), count: size), stallingAfter: 2)
                    #expect(taken < size / 2, "the proxy read \(taken) bytes of the body while the first answer was held")
                    await sim.simulator.release(route: "/scripted/held")
                    let text = await client.read { $0.contains("first") }
                    #expect(text.hasPrefix("HTTP/1.1 200"), "the forwarded answer comes")
                    #expect(text.contains("first"))
                }
            }
        }
    }

    @Test("A kept-alive origin connection the origin closed as the request went out is tried once more, on a new one")
    func keepAliveRace() async throws {
        let origin = try await KeepAliveOrigin()
        do {
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: origin.url, store: store) { proxy in
                    #expect(try await proxy.send("/race").fields[HTTPField.Name("X-Accept-Encoding")!] == "gzip", "the chain's")
                    // One client connection, so that its requests share an event loop and its origin connections.
                    let client = try RawClient(port: try #require(proxy.base.port))
                    defer { client.close() }
                    func get() async -> String {
                        let before = client.text.count
                        client.send("GET /race HTTP/1.1\r\nHost: a\r\nAccept-Encoding: br, gzip\r\n\r\n")
                        return String(await client.read { $0.count > before && $0.hasSuffix("kept alive") }.dropFirst(before))
                    }
                    let second = await get()
                    #expect(second.contains("X-Accept-Encoding: br, gzip"), "forwarded on the event loop")
                    #expect(second.contains("X-Connection: 2"))
                    origin.dropSecondRequest = true
                    let third = await get()
                    #expect(third.hasPrefix("HTTP/1.1 200"))
                    #expect(third.contains("X-Connection: 3"), "answered on a new connection")
                    #expect(origin.requests == 4, "the chain's, the first forwarded, the dropped one and its second try")
                }
            }
        } catch {
            await origin.stop()
            throw error
        }
        await origin.stop()
    }

    @Test("An answer that breaks off mid-body (reset, or stalled for the read timeout) is cut off, logged as aborted; the next is answered whole",
          arguments: [FaultModeKind.resetMidBody, .drip])
    func cutMidBody(mode: FaultModeKind) async throws {
        try await withSimulator { sim in
            let path = "/scripted/cut"
            let body = String(repeating: "x", count: 4000)
            await sim.simulator.setScript(path: path, Script(headers: Self.unkept, body: body))
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: sim.baseURL, store: store, readTimeout: .seconds(2)) { proxy in
                    #expect(try await proxy.send(path).body == body)
                    // The first 100 bytes, then a reset — or nothing for ten seconds (the drip's
                    // longest pause), which the two-second read timeout ends first.
                    await sim.simulator.injectFaultMode(mode == .drip
                        ? FaultMode(route: path, mode: .drip, chunk: 100, intervalMs: 10_000)
                        : FaultMode(route: path, mode: mode, bytes: 100))
                    let client = try RawClient(port: try #require(proxy.base.port))
                    defer { client.close() }
                    client.send("GET \(path) HTTP/1.1\r\nHost: a\r\nAccept-Encoding: br, gzip\r\n\r\n")
                    // Read until the proxy closes the connection (bounded by RawClient's 10 s).
                    let text = await client.read()
                    #expect(text.hasPrefix("HTTP/1.1 200"))
                    #expect(text.contains("Content-Length: 4000"))
                    let received = text.components(separatedBy: "\r\n\r\n").dropFirst().joined()
                    #expect(received.count < body.count && body.hasPrefix(received), "the answer is cut off, not completed")
                    if mode == .drip {
                        #expect(received == String(repeating: "x", count: 100), "the bytes that came, and no more")
                    }
                    #expect(await Self.encodings(sim, path).last == "br, gzip", "forwarded on the event loop")
                    let bothLogged = await eventually { proxy.entries.all.count == 2 }
                    #expect(bothLogged)
                    #expect(proxy.entries.all.last?.aborted == true)
                    #expect(try await proxy.send(path).body == body)
                }
            }
        }
    }

    @Test("An origin that does not answer in time gets the client a 504; graceful shutdown waits for a forwarded answer")
    func timeoutAndShutdown() async throws {
        try await withSimulator { sim in
            await sim.simulator.setScript(path: "/scripted/slow-unkept", Script(headers: Self.unkept, body: "late"))
            try await withSQLiteStore { store, _ in
                // Long enough for the first, unheld answer on a loaded machine (the whole suite runs at once).
                try await withInProcessProxy(origin: sim.baseURL, store: store, headTimeout: .seconds(5)) { proxy in
                    let marking = try await proxy.send("/scripted/slow-unkept")
                    #expect(marking.status == 200, "\(marking.status) \(marking.body)")
                    await sim.simulator.hold(route: "/scripted/slow-unkept")
                    let late = try await proxy.send("/scripted/slow-unkept", headers: [.acceptEncoding: "br, gzip"])
                    #expect(late.status == 504)
                    #expect(late.body.contains("did not answer in time"))
                    #expect(await Self.encodings(sim, "/scripted/slow-unkept").last == "br, gzip", "forwarded on the event loop")
                    let bothLogged = await eventually { proxy.entries.all.count == 2 }
                    #expect(bothLogged)
                    #expect(proxy.entries.all.last.map { "\($0.status) \($0.outcome == nil)" } == "504 true")
                    await sim.simulator.release(route: "/scripted/slow-unkept")
                }
                try await withInProcessProxy(origin: sim.baseURL, store: store) { proxy in
                    let first = try await proxy.send("/scripted/slow-unkept")
                    #expect(first.status == 200, "\(first.status) \(first.body)")
                    await sim.simulator.hold(route: "/scripted/slow-unkept")
                    let request = Task { try await proxy.send("/scripted/slow-unkept", headers: [.acceptEncoding: "br, gzip"]) }
                    let arrived = await eventually(within: 30) {
                        await Self.encodings(sim, "/scripted/slow-unkept").last == "br, gzip"
                    }
                    #expect(arrived, "the request reached the origin from the event loop")
                    await proxy.group.triggerGracefulShutdown()
                    let draining = await eventually { proxy.server.status.current == .draining }
                    #expect(draining)
                    await sim.simulator.release(route: "/scripted/slow-unkept")
                    let answer = try await request.value
                    #expect(answer.status == 200)
                    #expect(answer.body == "late")
                }
            }
        }
    }
}
