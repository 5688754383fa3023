import Foundation
import Freshet
import FreshetTestSupport
import FreshetTransports
import HTTPTypes
import NIOSSL
import OpenAPIRuntime
import Testing

/// `HTTP1Transport` to an `https` origin on loopback, with a root and server certificate made
/// at test time (the `openssl` command) and the pool's TLS configuration trusting that root.
@Suite("HTTP1Transport over TLS", .timeLimit(.minutes(1)), .enabled(if: TestCertificates.opensslAvailable, "needs the openssl command"))
struct HTTP1TransportTLSTests {
    static func get(_ path: String, pool: HTTP1ConnectionPool, origin: TLSOrigin) async throws -> (HTTPResponse, String) {
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: path)
        let (response, body) = try await HTTP1Transport(pool: pool).send(request, body: nil, baseURL: origin.url, operationID: "tls")
        return (response, try await String(collecting: try #require(body), upTo: 1 << 16))
    }

    @Test("An https origin whose certificate chains to the trusted root answers; the connection is reused")
    func trustedRoot() async throws {
        let certificates = try await TestCertificates.make()
        let pool = HTTP1ConnectionPool(configuration: .init(tls: try certificates.clientConfiguration()))
        defer { pool.closeIdleConnections() }
        try await withTLSOrigin(certificates) { origin in
            let (response, body) = try await Self.get("/secure?x=1", pool: pool, origin: origin)
            #expect(response.status.code == 200)
            #expect(response.headerFields[.init("X-Request-Target")!] == "/secure?x=1")
            #expect(body == "secure")
            #expect(try await Self.get("/again", pool: pool, origin: origin).1 == "secure")
            #expect(origin.requests == 2)
            #expect(pool.openConnections == 1, "one TLS connection, kept alive and reused")
        }
    }

    @Test("Response.timing: connect, TLS handshake and time to first byte on a new connection; none of the first two on a reused one")
    func timingPhases() async throws {
        let certificates = try await TestCertificates.make()
        let pool = HTTP1ConnectionPool(configuration: .init(tls: try certificates.clientConfiguration()))
        defer { pool.closeIdleConnections() }
        try await withTLSOrigin(certificates) { origin in
            let client = APIClient(baseURL: origin.url, transport: HTTP1Transport(pool: pool))
            let first = try await client.send(Endpoint<Data>.raw("secure")).timing
            let connect = try #require(first.connect, "\(first)")
            let handshake = try #require(first.tlsHandshake, "\(first)")
            let firstByte = try #require(first.timeToFirstByte, "\(first)")
            #expect(connect + handshake + firstByte <= first.timeToHeaders, "\(first)")
            let second = try await client.send(Endpoint<Data>.raw("again")).timing
            #expect(second.connect == nil && second.tlsHandshake == nil, "the connection was reused: \(second)")
            #expect(second.timeToFirstByte != nil, "\(second)")
            #expect(origin.requests == 2)
            #expect(pool.openConnections == 1)
        }
    }

    @Test("A certificate that does not chain to a trusted root: a TLSTrustFailure, nothing sent")
    func untrustedRoot() async throws {
        let certificates = try await TestCertificates.make()
        // Trusts another root, made the same way: the origin's chain does not lead to it.
        let other = try await TestCertificates.make(commonName: "Another Test Root")
        let pool = HTTP1ConnectionPool(configuration: .init(tls: try other.clientConfiguration()))
        defer { pool.closeIdleConnections() }
        try await withTLSOrigin(certificates) { origin in
            let failure = await #expect(throws: TLSTrustFailure.self) {
                _ = try await Self.get("/secure", pool: pool, origin: origin)
            }
            #expect(failure?.kind == .notTrusted, "\(String(describing: failure))")
            #expect(failure?.description.contains("TLS: 127.0.0.1: the server's certificate chain was refused") == true,
                    "\(String(describing: failure))")
            #expect(origin.requests == 0)
            let closed = await eventually { pool.openConnections == 0 }
            #expect(closed, "the rejected connection is closed")
        }
    }
}
