import Foundation
import Freshet
import FreshetTestSupport
import FreshetTransports
import HTTPTypes
import OpenAPIRuntime
import Testing

/// `HTTP1ConnectionPool`'s limits against a keep-alive byte-level origin: connections per host,
/// the wait for one to come free (bounded by the head timeout), and the idle timeout.
@Suite("HTTP1ConnectionPool", .timeLimit(.minutes(1)))
struct HTTP1ConnectionPoolTests {
    /// An answer whose head goes out at once and whose body (`held`) waits for the gate, so its
    /// connection stays busy until the test opens it.
    static let held = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n" + RawOrigin.gate + "held"

    static func get(_ transport: HTTP1Transport, _ origin: RawOrigin) async throws -> String {
        try await HTTP1TransportTests.exchange(transport, origin).1
    }

    @Test("At most maxConnectionsPerHost connections: a third request waits for one to come free, then reuses it")
    func limitPerHost() async throws {
        let origin = try RawOrigin(responses: [Self.held, Self.held, HTTP1TransportTests.answer()], keepAlive: true)
        defer { origin.stop() }
        let pool = HTTP1ConnectionPool(configuration: .init(maxConnectionsPerHost: 2))
        defer { pool.closeIdleConnections() }
        let transport = HTTP1Transport(pool: pool)
        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<3 { group.addTask { try await Self.get(transport, origin) } }
            // Two requests reach the origin and are held there; the third waits in the pool.
            let twoHeld = await eventually { origin.received.count == 2 }
            #expect(twoHeld)
            #expect(pool.openConnections == 2)
            origin.openGate()
            origin.openGate()
            var bodies: [String] = []
            for try await body in group { bodies.append(body) }
            #expect(bodies.sorted() == ["held", "held", "ok"])
        }
        #expect(origin.connections == 2, "the third request went on a connection the first two freed")
    }

    @Test("A request that finds every connection busy past its head timeout fails with timedOut, sending nothing")
    func waitIsBounded() async throws {
        let origin = try RawOrigin(responses: [Self.held, HTTP1TransportTests.answer()], keepAlive: true)
        defer { origin.stop() }
        let pool = HTTP1ConnectionPool(configuration: .init(maxConnectionsPerHost: 1))
        defer { pool.closeIdleConnections() }
        let first = Task { try await Self.get(HTTP1Transport(pool: pool), origin) }
        let oneHeld = await eventually { origin.received.count == 1 }
        try #require(oneHeld)
        let waiting = await #expect(throws: TransportFailure.self) {
            _ = try await Self.get(HTTP1Transport(headTimeout: .milliseconds(300), pool: pool), origin)
        }
        #expect(waiting?.kind == .timedOut)
        #expect(origin.received.count == 1, "the request that timed out in the pool never reached the origin")
        origin.openGate()
        #expect(try await first.value == "held")
    }

    @Test("An idle connection is closed after idleTimeout (the origin would keep it 60 s); the next request opens another")
    func idleTimeout() async throws {
        let origin = try RawOrigin(responses: [HTTP1TransportTests.answer()], keepAlive: true)
        defer { origin.stop() }
        let pool = HTTP1ConnectionPool(configuration: .init(idleTimeout: .milliseconds(300)))
        defer { pool.closeIdleConnections() }
        let transport = HTTP1Transport(pool: pool)
        #expect(try await Self.get(transport, origin) == "ok")
        let closed = await eventually { pool.openConnections == 0 }
        #expect(closed, "the idle connection was closed after its idle timeout")
        #expect(try await Self.get(transport, origin) == "ok")
        #expect(origin.connections == 2, "a request after the idle timeout needed a new connection")
    }
}
