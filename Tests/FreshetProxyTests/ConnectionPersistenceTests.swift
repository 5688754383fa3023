import Foundation
import FreshetProxy
import FreshetSimulator
import FreshetTestSupport
import Testing

/// Whether the client's connection stays open after an answer is the request's to say (RFC 9112
/// §9.3): HTTP/1.0 only with `Connection: keep-alive`, HTTP/1.1 unless `Connection: close`. Every
/// path that answers is covered: a hit on the event loop, a miss through the chain, a request
/// forwarded on the event loop (hit-for-miss), an answer streamed through the chain.
@Suite("freshet proxy: a connection kept or closed as the request asks")
struct ConnectionPersistenceTests {
    /// A request sent raw on a new connection.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var request: String
        var testDescription: String { name }
    }

    /// Runs `body` with a proxy in front of a simulator where `/scripted/kept` is stored and
    /// `/scripted/unkept` is marked as not kept (forwarded on the event loop).
    static func withProxy(_ body: @Sendable (InProcessProxy, RunningSimulator) async throws -> Void) async throws {
        try await withSimulator { sim in
            await sim.simulator.setScript(path: "/scripted/kept", Script(
                headers: [["Content-Type", "application/json"], ["Cache-Control", "public, max-age=600"]], body: "{\"k\":1}"))
            await sim.simulator.setScript(path: "/scripted/unkept", Script(
                headers: [["Content-Type", "application/json"], ["Cache-Control", "no-store"]], body: "{\"k\":1}"))
            await sim.simulator.setScript(path: "/scripted/new", Script(
                headers: [["Content-Type", "application/json"], ["Cache-Control", "public, max-age=600"]], body: "{\"k\":1}"))
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: sim.baseURL, store: store) { proxy in
                    #expect(try await proxy.send("/scripted/kept").cache == "MISS")
                    #expect(try await proxy.send("/scripted/unkept").cache == "MISS")
                    try await body(proxy, sim)
                }
            }
        }
    }

    @Test("Answered with Connection: close, then the connection ends", arguments: [
        Case(name: "HTTP/1.0, a hit", request: "GET /scripted/kept HTTP/1.0\r\nHost: a\r\n\r\n"),
        Case(name: "HTTP/1.0, a miss", request: "GET /scripted/new HTTP/1.0\r\nHost: a\r\n\r\n"),
        Case(name: "HTTP/1.0, forwarded on the event loop", request: "GET /scripted/unkept HTTP/1.0\r\nHost: a\r\n\r\n"),
        Case(name: "HTTP/1.1, Connection: Close", request: "GET /scripted/kept HTTP/1.1\r\nHost: a\r\nConnection: Close\r\n\r\n"),
        Case(name: "HTTP/1.1, Connection: close, x-trace",
             request: "GET /scripted/unkept HTTP/1.1\r\nHost: a\r\nConnection: close, x-trace\r\n\r\n"),
    ])
    func closedAfterTheAnswer(_ sent: Case) async throws {
        try await Self.withProxy { proxy, _ in
            let client = try RawClient(port: try #require(proxy.base.port))
            defer { client.close() }
            client.send(sent.request)
            let text = await client.read()
            #expect(text.hasPrefix("HTTP/1.1 200") && text.hasSuffix("\r\n\r\n{\"k\":1}"), "\(text.prefix(600))")
            #expect(text.contains("\r\nConnection: close\r\n"))
            #expect(client.serverClosed, "the proxy ended the connection after the answer")
        }
    }

    @Test("A request pipelined behind one that ends the connection is not processed (RFC 9112 §9.6)", arguments: [
        Case(name: "a hit", request: "GET /scripted/kept HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"),
        Case(name: "a miss", request: "GET /scripted/new HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"),
        Case(name: "forwarded on the event loop", request: "GET /scripted/unkept HTTP/1.0\r\nHost: a\r\n\r\n"),
    ])
    func nothingAfterTheClose(_ sent: Case) async throws {
        try await Self.withProxy { proxy, sim in
            let client = try RawClient(port: try #require(proxy.base.port))
            defer { client.close() }
            client.send(sent.request + "POST /scripted/after HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}"
                        + "GET /scripted/unkept HTTP/1.1\r\nHost: a\r\n\r\n")
            _ = await client.read { $0.hasSuffix("{\"k\":1}") }
            // A hit's head sent once the answer is in: not answered from the bytes read either.
            client.send("GET /scripted/kept HTTP/1.1\r\nHost: a\r\n\r\n")
            let text = await client.read()
            #expect(text.hasPrefix("HTTP/1.1 200") && text.hasSuffix("\r\n\r\n{\"k\":1}"), "one answer: \(text.prefix(1200))")
            #expect(text.components(separatedBy: "HTTP/1.1 ").count == 2, "one answer: \(text.prefix(1200))")
            #expect(client.serverClosed)
            let log = await sim.simulator.requestLog().map { "\($0.method) \($0.path)" }
            #expect(!log.contains("POST /scripted/after"), "\(log)")
            #expect(log.filter { $0 == "GET /scripted/unkept" }.count == (sent.name == "forwarded on the event loop" ? 2 : 1),
                    "\(log)")
        }
    }

    @Test("HTTP/1.0 with Connection: keep-alive stays open and says so")
    func http10KeepAlive() async throws {
        try await Self.withProxy { proxy, _ in
            let client = try RawClient(port: try #require(proxy.base.port))
            defer { client.close() }
            client.send("GET /scripted/kept HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\n\r\n")
            let first = await client.read { $0.hasSuffix("{\"k\":1}") }
            #expect(first.contains("\r\nConnection: keep-alive\r\n"))
            #expect(!client.serverClosed)
            client.send("GET /scripted/unkept HTTP/1.0\r\nHost: a\r\n\r\n")
            let both = await client.read()
            #expect(both.components(separatedBy: "HTTP/1.1 200").count == 3, "two answers on one connection")
            #expect(client.serverClosed)
        }
    }

    @Test("HTTP/1.0, an answer of unknown length: sent as HTTP/1.0, not chunked, its end the close")
    func http10WithoutLength() async throws {
        try await Self.withProxy { proxy, _ in
            let client = try RawClient(port: try #require(proxy.base.port))
            defer { client.close() }
            client.send("GET /_sim/bytes?size=3000&chunked=1 HTTP/1.0\r\nHost: a\r\n\r\n")
            let text = await client.read()
            let parts = text.components(separatedBy: "\r\n\r\n")
            #expect(parts.first?.hasPrefix("HTTP/1.0 200") == true, "\(text.prefix(600))")
            #expect(parts.first?.lowercased().contains("transfer-encoding") == false)
            #expect(parts.dropFirst().joined(separator: "\r\n\r\n").utf8.count == 3000)
            #expect(client.serverClosed)
        }
    }
}
