import Foundation
import Freshet
import FreshetTestSupport
import FreshetTransports
import HTTPTypes
import OpenAPIRuntime
import Testing

/// The roots `SSL_CERT_FILE` names are read when the first `https` request is sent, not when the
/// transport is made (a run the cache answers, or one over plain http, reads no certificate), and once.
@Suite("Roots from the environment, read on first use")
struct EnvironmentTrustTests {
    @Test("The file is read at the first request: made over garbage, the transport trusts the root written there before it")
    func readAtFirstRequest() async throws {
        let certificates = try await TestCertificates.make()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("freshet-roots-\(UUID().uuidString).pem")
        try Data("not a certificate yet".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let environment = ["SSL_CERT_FILE": file.path]
        #expect(TLSTrust.environmentProblem(environment) == nil, "a readable file is no problem until it is read")
        let transport = Transports.asyncHTTPClient(timeout: .seconds(20), trustingEnvironment: environment, proxies: .direct)

        try Data(contentsOf: URL(fileURLWithPath: try certificates.writeRoot())).write(to: file)
        try await withTLSOrigin(certificates) { origin in
            let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/trusted")
            let (response, _) = try await transport.send(request, body: nil, baseURL: origin.url, operationID: "trust")
            #expect(response.status.code == 200)

            // Read once: garbage written now changes nothing for this transport.
            try Data("garbage again".utf8).write(to: file)
            let (again, _) = try await transport.send(request, body: nil, baseURL: origin.url, operationID: "trust")
            #expect(again.status.code == 200)
        }
    }

    @Test("A file that holds no certificate fails an https request naming SSL_CERT_FILE, while plain http, which reads no certificate, is answered; a missing one is found before any")
    func unusableFile() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("freshet-roots-\(UUID().uuidString).pem")
        try Data("not a certificate".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let transport = Transports.asyncHTTPClient(trustingEnvironment: ["SSL_CERT_FILE": file.path], proxies: .direct)
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/_sim/stats")
        try await withSimClient { _, client in
            #expect(client.baseURL.scheme == "http")
            let (response, _) = try await transport.send(request, body: nil, baseURL: client.baseURL, operationID: "plain")
            #expect(response.status.code == 200)
        }
        await #expect {
            _ = try await transport.send(request, body: nil, baseURL: URL(string: "https://127.0.0.1:9")!, operationID: "trust")
        } throws: { error in
            String(describing: error).contains("SSL_CERT_FILE")
        }
        let missing = TLSTrust.environmentProblem(["SSL_CERT_FILE": "/nonexistent/ca.pem"])
        #expect(missing?.description.contains("/nonexistent/ca.pem") == true)
        #expect(TLSTrust.environmentProblem(["SSL_CERT_DIR": "/nonexistent-folder"]) != nil)
    }
}
