import Foundation
import FreshetTestSupport
import Testing

/// `freshet proxy --ca-file … --pin …` in front of an https origin on loopback whose root and
/// server certificate are made at test time (the `openssl` command, which also computes the pins).
@Suite("freshet proxy: TLS trust of the origin", .enabled(if: TestCertificates.opensslAvailable, "needs the openssl command"))
struct ProxyTLSTests {
    @Test("With the origin's root as --ca-file and its key as --pin, requests are forwarded")
    func rightPin() async throws {
        let certificates = try await TestCertificates.make()
        let caFile = try certificates.writeRoot()
        defer { try? FileManager.default.removeItem(atPath: caFile) }
        try await withFreshetCLI { cli in
            try await withTLSOrigin(certificates) { origin in
                let extra = ["--ca-file", caFile, "--pin", certificates.serverPin]
                try await withProxy(cli, extra, origin: origin.url.absoluteString) { _, base in
                    let response = try await curl([base + "/pinned?x=1"])
                    #expect(response.status == 200)
                    #expect(response.body == "secure")
                    #expect(response.header("X-Request-Target") == "/pinned?x=1")
                    #expect(origin.requests == 1)
                }
            }
        }
    }

    @Test("An https origin's no-store answers are then forwarded on the event loop, over the same trust and pins")
    func passThroughTLS() async throws {
        let certificates = try await TestCertificates.make()
        let caFile = try certificates.writeRoot()
        defer { try? FileManager.default.removeItem(atPath: caFile) }
        try await withFreshetCLI { cli in
            try await withTLSOrigin(certificates, fields: [("Cache-Control", "no-store")]) { origin in
                let extra = ["--ca-file", caFile, "--pin", certificates.serverPin]
                try await withProxy(cli, extra, origin: origin.url.absoluteString) { _, base in
                    var seen: [String?] = []
                    for _ in 0..<3 {
                        let response = try await curl([base + "/unkept", "-H", "Accept-Encoding: br, gzip"])
                        #expect(response.status == 200)
                        #expect(response.body == "secure")
                        #expect(response.header("X-Cache") == "MISS")
                        seen.append(response.header("X-Accept-Encoding"))
                    }
                    #expect(seen == ["gzip", "br, gzip", "br, gzip"], "the chain first, then the event loop with the client's own")
                    #expect(origin.requests == 3)
                }
            }
        }
    }

    @Test("With a wrong --pin, the proxy answers 502 naming the pins and sends the origin nothing")
    func wrongPin() async throws {
        let certificates = try await TestCertificates.make()
        let other = try await TestCertificates.make(commonName: "Another Test Root")
        let caFile = try certificates.writeRoot()
        defer { try? FileManager.default.removeItem(atPath: caFile) }
        try await withFreshetCLI { cli in
            try await withTLSOrigin(certificates) { origin in
                let extra = ["--ca-file", caFile, "--pin", other.serverPin]
                try await withProxy(cli, extra, origin: origin.url.absoluteString) { _, base in
                    let response = try await curl([base + "/pinned"])
                    #expect(response.status == 502)
                    #expect(response.body.contains("matched none of the pins"), "\(response.body)")
                    #expect(response.body.contains(other.serverPin) && response.body.contains(certificates.serverPin),
                            "\(response.body)")
                    #expect(origin.requests == 0)
                }
            }
        }
    }

    @Test("A malformed --pin or an unreadable --ca-file stops the proxy at start with a non-zero status and a clear message")
    func badArguments() async throws {
        try await withFreshetCLI { cli in
            let badPin = try await cli.run("proxy", "--origin", "https://127.0.0.1:1", "--listen", "127.0.0.1:0",
                                           "--pin", "sha256/not-base64")
            #expect(badPin.status != 0)
            #expect(badPin.stderr.contains("--pin") && badPin.stderr.contains("sha256/not-base64"), "\(badPin.stderr)")
            #expect(!badPin.stdout.contains("listening on"), "\(badPin.stdout)")

            let missing = try await cli.run("proxy", "--origin", "https://127.0.0.1:1", "--listen", "127.0.0.1:0",
                                            "--ca-file", "/nonexistent/freshet-ca.pem")
            #expect(missing.status != 0)
            #expect(missing.stderr.contains("--ca-file") && missing.stderr.contains("/nonexistent/freshet-ca.pem"),
                    "\(missing.stderr)")
            #expect(!missing.stdout.contains("listening on"), "\(missing.stdout)")
        }
    }

    @Test("SSL_CERT_FILE and SSL_CERT_DIR: the data commands trust those roots in place of the system's; an unreadable one is named")
    func rootsFromEnvironment() async throws {
        let certificates = try await TestCertificates.make()
        let caFile = try certificates.writeRoot()
        defer { try? FileManager.default.removeItem(atPath: caFile) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("freshet-certs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try certificates.rootPEM.write(to: directory.appendingPathComponent("a1b2c3d4.0"), atomically: true, encoding: .utf8)
        try "not a certificate".write(to: directory.appendingPathComponent("README"), atomically: true, encoding: .utf8)
        let story = #"{"id":1,"type":"story","by":"tls","time":1700000000,"title":"Trusted through SSL_CERT_FILE"}"#
        try await withFreshetCLI { cli in
            try await withTLSOrigin(certificates, answering: story) { origin in
                let hn = ["FRESHET_HN_URL": origin.url.absoluteString + "/v0"]
                let untrusted = try await cli.run(["hn", "item", "1"], environment: hn)
                #expect(untrusted.status == 2, "the test root is no system root: \(untrusted.stdout)")
                for variable in [["SSL_CERT_FILE": caFile], ["SSL_CERT_DIR": directory.path]] {
                    let trusted = try await cli.run(["hn", "item", "1", "--refresh"], environment: hn.merging(variable) { $1 })
                    #expect(trusted.status == 0, "\(variable): \(trusted.stderr)")
                    #expect(trusted.stdout.contains("Trusted through SSL_CERT_FILE"), "\(variable): \(trusted.stdout)")
                }
                let missing = try await cli.run(["hn", "item", "1"], environment: hn.merging(["SSL_CERT_FILE": "/nonexistent/ca.pem"]) { $1 })
                #expect(missing.status == 1)
                #expect(missing.stderr.contains("SSL_CERT_FILE") && missing.stderr.contains("/nonexistent/ca.pem"), "\(missing.stderr)")
            }
        }
    }
}
