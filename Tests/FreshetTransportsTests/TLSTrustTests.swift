import Foundation
import Freshet
import FreshetTestSupport
import FreshetTransports
import HTTPTypes
import NIOSSL
import OpenAPIRuntime
import Testing

/// Custom trust roots and public-key pins, on the default transport
/// (`Transports.asyncHTTPClient(trust:)`) and on `HTTP1Transport` (the proxy's), against an https
/// origin on loopback whose root and server certificate are made at test time by the `openssl`
/// command — which also computes the pins, independently of Freshet's own hashing.
@Suite("TLS trust: roots and pins", .timeLimit(.minutes(1)), .enabled(if: TestCertificates.opensslAvailable, "needs the openssl command"))
struct TLSTrustTests {
    /// The two transports under test.
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case defaultTransport, http1
        var testDescription: String { self == .defaultTransport ? "Transports.asyncHTTPClient(trust:)" : "HTTP1Transport" }

        func transport(_ trust: TLSTrust) -> any ClientTransport {
            switch self {
            case .defaultTransport: return Transports.asyncHTTPClient(timeout: .seconds(20), trust: trust)
            case .http1: return HTTP1Transport(headTimeout: .seconds(20), pool: HTTP1ConnectionPool(configuration: .init(trust: trust)))
            }
        }
    }

    static func get(_ transport: any ClientTransport, _ origin: TLSOrigin) async throws -> (HTTPResponse, String) {
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/pinned")
        let (response, body) = try await transport.send(request, body: nil, baseURL: origin.url, operationID: "tls")
        return (response, try await String(collecting: try #require(body), upTo: 1 << 16))
    }

    /// The trust failure `body` throws (failing the test when it throws another error or none).
    static func refusal(_ body: () async throws -> Void) async -> TLSTrustFailure? {
        await #expect(throws: TLSTrustFailure.self) { try await body() }
    }

    @Test("The openssl command and Freshet compute the same pin for a certificate's key")
    func pinFormat() async throws {
        let certificates = try await TestCertificates.make()
        let server = try NIOSSLCertificate(bytes: Array(certificates.serverCertificatePEM.utf8), format: .pem)
        #expect(try SPKIPin(publicKeyOf: server).description == certificates.serverPin)
        #expect(try SPKIPin(publicKeyOf: certificates.root()).description == certificates.rootPin)
        #expect(try SPKIPin(certificates.serverPin) == SPKIPin(publicKeyOf: server))
    }

    @Test("Malformed pins and unreadable CA files are refused with a message saying what is wrong")
    func configurationErrors() throws {
        #expect(throws: TLSTrust.ConfigurationError.self) { try SPKIPin("sha256/not base64!") }
        #expect(throws: TLSTrust.ConfigurationError.self) { try SPKIPin("sha256/AAAA") }
        let sha1 = #expect(throws: TLSTrust.ConfigurationError.self) { try SPKIPin("sha1/AAAAAAAAAAAAAAAAAAAAAAAAAAA=") }
        #expect(sha1?.description.contains("only sha256") == true, "\(String(describing: sha1))")
        let missing = #expect(throws: TLSTrust.ConfigurationError.self) { try TLSTrust(rootsPEMFile: "/nonexistent/ca.pem") }
        #expect(missing?.description.contains("/nonexistent/ca.pem") == true, "\(String(describing: missing))")
        #expect(throws: TLSTrust.ConfigurationError.self) { try TLSTrust(rootsPEM: "not a certificate") }
    }

    @Test("Right pin (the server's key): 200", arguments: Kind.allCases)
    func rightServerPin(kind: Kind) async throws {
        let certificates = try await TestCertificates.make()
        let trust = try TLSTrust(rootsPEM: certificates.rootPEM, pins: [try SPKIPin(certificates.serverPin)])
        try await withTLSOrigin(certificates) { origin in
            let (response, body) = try await Self.get(kind.transport(trust), origin)
            #expect(response.status.code == 200)
            #expect(body == "secure")
            #expect(origin.requests == 1)
        }
    }

    @Test("Right pin (the root's key, another certificate of the verified chain): 200", arguments: Kind.allCases)
    func rightRootPin(kind: Kind) async throws {
        let certificates = try await TestCertificates.make()
        let trust = try TLSTrust(rootsPEM: certificates.rootPEM, pins: [try SPKIPin(certificates.rootPin)])
        try await withTLSOrigin(certificates) { origin in
            let (response, _) = try await Self.get(kind.transport(trust), origin)
            #expect(response.status.code == 200)
        }
    }

    @Test("Wrong pin: refused before any request, the message naming the pins expected and seen", arguments: Kind.allCases)
    func wrongPin(kind: Kind) async throws {
        let certificates = try await TestCertificates.make()
        let other = try await TestCertificates.make(commonName: "Another Test Root")
        let trust = try TLSTrust(rootsPEM: certificates.rootPEM, pins: [try SPKIPin(other.serverPin)])
        try await withTLSOrigin(certificates) { origin in
            let failure = await Self.refusal { _ = try await Self.get(kind.transport(trust), origin) }
            #expect(failure?.kind == .pinMismatch, "\(String(describing: failure))")
            let text = failure?.description ?? ""
            #expect(text.contains("matched none of the pins"), "\(text)")
            #expect(text.contains(other.serverPin), "the pin expected: \(text)")
            #expect(text.contains(certificates.serverPin) && text.contains(certificates.rootPin), "the chain's keys: \(text)")
            #expect(origin.requests == 0)
        }
    }

    @Test("A pinned CA certificate the server merely sends along, off the verified chain, does not count")
    func pinOffTheVerifiedChain() async throws {
        let certificates = try await TestCertificates.make()
        let other = try await TestCertificates.make(commonName: "Pinned But Unrelated Root")
        // The client trusts the origin's root and pins the other root's key; the origin sends that
        // other root's certificate after its own, as an impostor could.
        let trust = try TLSTrust(rootsPEM: certificates.rootPEM, pins: [try SPKIPin(other.rootPin)])
        try await withTLSOrigin(certificates, alsoSent: [other.rootPEM]) { origin in
            for kind in Kind.allCases {
                let failure = await Self.refusal { _ = try await Self.get(kind.transport(trust), origin) }
                #expect(failure?.kind == .pinMismatch, "\(kind): \(String(describing: failure))")
            }
            #expect(origin.requests == 0)
        }
    }

    @Test("Expired server certificate, even with the right pin: refused as expired", arguments: Kind.allCases)
    func expiredWithRightPin(kind: Kind) async throws {
        let certificates = try await TestCertificates.make(expiredServer: true)
        let trust = try TLSTrust(rootsPEM: certificates.rootPEM, pins: [try SPKIPin(certificates.serverPin)])
        try await withTLSOrigin(certificates) { origin in
            let failure = await Self.refusal { _ = try await Self.get(kind.transport(trust), origin) }
            #expect(failure?.kind == .expired, "\(String(describing: failure))")
            #expect(failure?.description.contains("has expired") == true, "\(String(describing: failure))")
            #expect(origin.requests == 0)
        }
    }

    @Test("Unknown root, even with the server's key pinned: refused as not leading to a trusted root", arguments: Kind.allCases)
    func unknownRootWithRightPin(kind: Kind) async throws {
        let certificates = try await TestCertificates.make()
        let other = try await TestCertificates.make(commonName: "Another Test Root")
        let trust = try TLSTrust(rootsPEM: other.rootPEM, pins: [try SPKIPin(certificates.serverPin)])
        try await withTLSOrigin(certificates) { origin in
            let failure = await Self.refusal { _ = try await Self.get(kind.transport(trust), origin) }
            #expect(failure?.kind == .unknownRoot, "\(String(describing: failure))")
            #expect(failure?.description.contains("does not lead to a trusted root") == true, "\(String(describing: failure))")
            #expect(origin.requests == 0)
        }
    }

    #if os(Linux)
    @Test("Pins with the system's roots (Linux): a test root is not among them, so even the right pin is refused", arguments: Kind.allCases)
    func systemRootsWithPin(kind: Kind) async throws {
        let certificates = try await TestCertificates.make()
        let trust = TLSTrust(roots: .system, pins: [try SPKIPin(certificates.serverPin)])
        try await withTLSOrigin(certificates) { origin in
            let failure = await Self.refusal { _ = try await Self.get(kind.transport(trust), origin) }
            #expect(failure?.kind == .unknownRoot, "\(String(describing: failure))")
            #expect(origin.requests == 0)
        }
    }
    #endif

    @Test("Custom roots without pins: the trusted root answers 200; expired and unknown-root chains are refused", arguments: Kind.allCases)
    func rootsWithoutPins(kind: Kind) async throws {
        let certificates = try await TestCertificates.make()
        let expired = try await TestCertificates.make(expiredServer: true)
        let trust = try TLSTrust(rootsPEM: certificates.rootPEM)
        try await withTLSOrigin(certificates) { origin in
            let (response, _) = try await Self.get(kind.transport(trust), origin)
            #expect(response.status.code == 200)
        }
        // The origin's root is not the one trusted.
        try await withTLSOrigin(expired) { origin in
            let failure = await Self.refusal { _ = try await Self.get(kind.transport(trust), origin) }
            #expect(failure?.kind == .notTrusted, "\(String(describing: failure))")
            #expect(origin.requests == 0)
        }
        // Trusted root, expired certificate.
        try await withTLSOrigin(expired) { origin in
            let failure = await Self.refusal {
                _ = try await Self.get(kind.transport(try TLSTrust(rootsPEM: expired.rootPEM)), origin)
            }
            #expect(failure?.kind == .notTrusted, "\(String(describing: failure))")
            #expect(origin.requests == 0)
        }
    }

    @Test("Through APIClient, a pin mismatch is APIError.transport whose cause is the TLSTrustFailure, kind and all")
    func apiErrorThroughClient() async throws {
        let certificates = try await TestCertificates.make()
        let other = try await TestCertificates.make(commonName: "Another Test Root")
        let pin = try SPKIPin(other.serverPin)
        let trust = try TLSTrust(rootsPEM: certificates.rootPEM, pins: [pin])
        try await withTLSOrigin(certificates) { origin in
            let client = APIClient.live(baseURL: origin.url, transport: Transports.asyncHTTPClient(trust: trust))
            let endpoint = Endpoint<Data>(path: ["pinned"]) { data, _ in data }
            let error = await #expect(throws: APIError.self) { _ = try await client.send(endpoint) }
            guard case .transport(_, let cause)? = error, let refusal = cause as? TLSTrustFailure else {
                Issue.record("expected APIError.transport caused by a TLSTrustFailure, got \(String(describing: error))")
                return
            }
            #expect(refusal.kind == .pinMismatch)
            #expect(refusal.expectedPins == [pin])
            #expect((error?.underlyingError as? TLSTrustFailure)?.kind == .pinMismatch)
            let reason = error?.reason ?? ""
            #expect(reason == refusal.description)
            #expect(reason.contains("matched none of the pins") && reason.contains(other.serverPin), "\(reason)")
            #expect(origin.requests == 0)
        }
    }
}
