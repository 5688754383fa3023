import Foundation
import FreshetSimulator
import FreshetTestSupport
import Testing

@Suite("freshet proxy's operator side, end to end")
struct ProxyOperatorTests {
    @Test("--log-format json alone logs one JSON object per request; --metrics serves /healthz; SIGTERM exits 0")
    func jsonLogAndHealth() async throws {
        try await withFreshetCLI { cli in
            let token = "ghp_cliSECRETcliSECRETcliSECRETcli0001"
            try await withProxy(cli, ["--log-format", "json", "--metrics", "127.0.0.1:0"]) { child, base in
                let announced = await eventually(within: 10) { child.stdout.contains("metrics on http://127.0.0.1:") }
                #expect(announced, "stdout: \(child.stdout)")
                let lines = child.stdout.split(separator: "\n")
                #expect(child.firstLine.hasPrefix("listening on "), "the listening line comes first: \(child.firstLine)")
                let metricsLine = try #require(lines.first { $0.hasPrefix("metrics on ") })
                let metrics = try #require(URL(string: String(metricsLine.dropFirst("metrics on ".count))))
                let operatorBase = "http://127.0.0.1:\(try #require(metrics.port))"

                let answer = try await curl(["-H", "Authorization: Bearer \(token)", base + "/users/octocat"])
                #expect(answer.status == 200)
                let health = try await curl([operatorBase + "/healthz"])
                #expect(health.status == 200)
                #expect(health.body == "ok\n")
                let exposition = try await curl([operatorBase + "/metrics"])
                #expect(exposition.body.contains("freshet_ratelimit_remaining{credential=\""))
                #expect(!exposition.body.contains(token))

                let logged = await eventually(within: 10) { child.stderr.contains("\"path\":\"/users/octocat\"") }
                #expect(logged, "stderr: \(child.stderr)")
                let line = try #require(child.stderr.split(separator: "\n").first { $0.contains("/users/octocat") })
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                #expect(object?["cache"] as? String == "miss")
                #expect((object?["credential"] as? String)?.count == 12)
                #expect(!child.stderr.contains(token))

                child.signal(SIGTERM)
                let status = await child.waitForExit(timeout: 30)
                #expect(status == 0, "stderr: \(child.stderr)")
            }
        }
    }
}
