import Foundation
import Freshet
import FreshetCache
import FreshetPostgres
import FreshetProxy
import FreshetSimulator
import FreshetTestSupport
import GRDB
import HTTPTypes
import ServiceLifecycle
import Testing

/// Two tokens whose text must never appear in metrics or logs.
private let tokenA = "ghp_alphaSECRETalphaSECRETalphaSECRET0001"
private let tokenB = "ghp_bravoSECRETbravoSECRETbravoSECRET0002"

private func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }

/// The label the proxy gives `token` (12 hex digits of a SHA-256).
private func label(_ token: String) throws -> String {
    try #require(RequestCredential(bearer(token))?.label)
}

/// The value of the sample `name{labels}` in Prometheus text (label order does not matter).
func sample(_ text: String, _ name: String, _ labels: [String: String] = [:]) -> Double? {
    for line in text.split(separator: "\n") where line.hasPrefix(name + "{") || line.hasPrefix(name + " ") {
        let rest = line.dropFirst(name.count)
        var found: [String: String] = [:]
        var valueText = rest
        if rest.hasPrefix("{"), let close = rest.firstIndex(of: "}") {
            for pair in rest[rest.index(after: rest.startIndex)..<close].split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { continue }
                found[String(parts[0])] = String(parts[1].dropFirst().dropLast())
            }
            valueText = rest[rest.index(after: close)...]
        }
        if found == labels { return Double(valueText.trimmingCharacters(in: .whitespaces)) }
    }
    return nil
}

/// Every label value of `label` among the samples of `name`.
func labelValues(_ text: String, _ name: String, _ label: String) -> [String] {
    text.split(separator: "\n").filter { $0.hasPrefix(name + "{") }.compactMap { line in
        guard let range = line.range(of: "\(label)=\"") else { return nil }
        return String(line[range.upperBound...].prefix { $0 != "\"" })
    }
}

@Suite("freshet proxy as a library: in process, over loopback")
struct ProxyServerTests {
    @Test("Rate-limit gauges per credential and resource hold what the origin sent; no token in the exposition")
    func rateLimitGaugesPerCredential() async throws {
        try await withSimulator { sim in
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: sim.baseURL, store: store) { proxy in
                    let a = try await proxy.send("/users/octocat", headers: bearer(tokenA))
                    let aSearch = try await proxy.send("/search/repositories?q=swift", headers: bearer(tokenA))
                    let b = try await proxy.send("/users/octocat", headers: bearer(tokenB))
                    let anonymous = try await proxy.send("/users/octocat")
                    for answer in [a, aSearch, b, anonymous] {
                        #expect(answer.status == 200)
                        #expect(answer.cache == "MISS")
                    }
                    let text = try await proxy.metrics()
                    let expected: [(String, String, Answer)] = [
                        (try label(tokenA), "core", a), (try label(tokenA), "search", aSearch),
                        (try label(tokenB), "core", b), ("anonymous", "core", anonymous),
                    ]
                    for (credential, resource, answer) in expected {
                        #expect(answer.fields[.xRateLimitResource] == resource)
                        let labels = ["credential": credential, "resource": resource]
                        let remaining = try #require(answer.fields[.xRateLimitRemaining].flatMap(Double.init))
                        let reset = try #require(answer.fields[.xRateLimitReset].flatMap(Double.init))
                        #expect(sample(text, "freshet_ratelimit_remaining", labels) == remaining, "\(labels)\n\(text)")
                        #expect(sample(text, "freshet_ratelimit_reset_timestamp_seconds", labels) == reset, "\(labels)")
                    }
                    #expect(Set(labelValues(text, "freshet_ratelimit_remaining", "credential"))
                            == [try label(tokenA), try label(tokenB), "anonymous"])
                    #expect(sample(text, "freshet_proxy_credential_requests_total", ["credential": try label(tokenA)]) == 2)
                    #expect(sample(text, "freshet_proxy_credential_requests_total", ["credential": try label(tokenB)]) == 1)
                    #expect(sample(text, "freshet_proxy_credential_requests_total", ["credential": "anonymous"]) == 1)
                    #expect(sample(text, "freshet_proxy_requests_total", ["cache": "miss"]) == 4)
                    for secret in [tokenA, tokenB, "SECRET", "Bearer"] {
                        #expect(!text.contains(secret), "the exposition shows \(secret)")
                    }
                }
            }
        }
    }

    @Test("Past 64 credentials, requests are counted under credential=\"other\"")
    func credentialLabelsAreBounded() async throws {
        try await withSimulator { sim in
            await sim.simulator.setScript(path: "/scripted/bounded", Script(headers: [["Cache-Control", "no-store"]], body: "b"))
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: sim.baseURL, store: store) { proxy in
                    let count = ProxyMetrics.maxCredentials + 3
                    for index in 0..<count {
                        let answer = try await proxy.send("/scripted/bounded", headers: bearer("token-\(index)"))
                        #expect(answer.status == 200)
                    }
                    let text = try await proxy.metrics()
                    let labels = labelValues(text, "freshet_proxy_credential_requests_total", "credential")
                    #expect(labels.filter { $0 != "other" }.count == ProxyMetrics.maxCredentials, "\(labels)")
                    #expect(sample(text, "freshet_proxy_credential_requests_total", ["credential": "other"]) == 3)
                    #expect(!labels.contains(try #require(RequestCredential(bearer("token-\(count - 1)"))?.label)))
                }
            }
        }
    }

    @Test("JSON log entries parse, for misses and for hits answered on the event loop, with the label and never the token")
    func jsonLogEntries() async throws {
        try await withSimulator { sim in
            await sim.simulator.setScript(path: "/scripted/shared", Script(
                headers: [["Cache-Control", "public, max-age=300"], ["Content-Type", "text/plain"]], body: "shared"))
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: sim.baseURL, store: store) { proxy in
                    let miss = try await proxy.send("/users/octocat?access_token=sekrit-query-value", headers: bearer(tokenA))
                    let stored = try await proxy.send("/scripted/shared", headers: bearer(tokenB))
                    let hit = try await proxy.send("/scripted/shared", headers: bearer(tokenB))
                    let anonymousHit = try await proxy.send("/scripted/shared")
                    #expect([miss.cache, stored.cache, hit.cache, anonymousHit.cache] == ["MISS", "MISS", "HIT", "HIT"])
                    let entries = proxy.entries.all
                    try #require(entries.count == 4)
                    var objects: [[String: Any]] = []
                    for entry in entries {
                        #expect(!entry.json.contains("\n"))
                        let parsed = try JSONSerialization.jsonObject(with: Data(entry.json.utf8))
                        objects.append(try #require(parsed as? [String: Any], "\(entry.json)"))
                        for secret in [tokenA, tokenB, "SECRET", "sekrit"] {
                            #expect(!entry.json.contains(secret) && !entry.text.contains(secret), "\(entry.json)")
                        }
                    }
                    for object in objects {
                        #expect(Set(object.keys) == ["time", "method", "path", "status", "cache", "duration_ms", "credential",
                                                     "ratelimit_remaining"])
                        let time = try #require(object["time"] as? String)
                        let parsedTime = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(time)
                        #expect(parsedTime.map { abs($0.timeIntervalSinceNow) < 600 } == true, "\(time)")
                        #expect(time.hasSuffix("Z"), "UTC: \(time)")
                        #expect(object["method"] as? String == "GET")
                        #expect(object["status"] as? Int == 200)
                        #expect((object["duration_ms"] as? Double).map { $0 >= 0 } == true)
                    }
                    #expect(objects[0]["path"] as? String == "/users/octocat?access_token=REDACTED")
                    #expect(objects[0]["cache"] as? String == "miss")
                    #expect(objects[0]["credential"] as? String == (try label(tokenA)))
                    #expect(objects[0]["ratelimit_remaining"] as? Int == miss.fields[.xRateLimitRemaining].flatMap { Int($0) })
                    #expect(objects[0]["ratelimit_remaining"] as? Int != nil)
                    #expect(objects[1]["cache"] as? String == "miss")
                    #expect(objects[2]["path"] as? String == "/scripted/shared")
                    #expect(objects[2]["cache"] as? String == "hit")
                    #expect(objects[2]["credential"] as? String == (try label(tokenB)))
                    #expect(objects[2]["ratelimit_remaining"] is NSNull)
                    #expect(objects[3]["cache"] as? String == "hit")
                    #expect(objects[3]["credential"] is NSNull)
                    // The text format is today's line.
                    #expect(entries[2].text.hasPrefix("GET /scripted/shared 200 hit "), "\(entries[2].text)")
                    #expect(entries[2].text.hasSuffix("ms"))
                }
            }
        }
    }

    @Test("/healthz and /readyz: 200 while serving; /readyz 503 with a reason once the SQLite database cannot be read")
    func healthAndReadinessOnSQLite() async throws {
        try await withSimulator { sim in
            try await withSQLiteStore { store, pool in
                try await withInProcessProxy(origin: sim.baseURL, store: store) { proxy in
                    let health = try await proxy.operatorSend("/healthz")
                    #expect(health.status == 200)
                    #expect(health.body == "ok\n")
                    let ready = try await proxy.operatorSend("/readyz")
                    #expect(ready.status == 200)
                    #expect(ready.body == "ready\n")
                    let head = try await proxy.operatorSend("/healthz", method: .head)
                    #expect(head.status == 200)
                    let wrongMethod = try await proxy.operatorSend("/healthz", method: .post)
                    #expect(wrongMethod.status == 405)
                    #expect(wrongMethod.fields[.allow] == "GET, HEAD")

                    try pool.close()
                    let closed = try await proxy.operatorSend("/readyz")
                    #expect(closed.status == 503)
                    #expect(closed.body.hasPrefix("not ready: the SQLite cache database cannot be read"), "\(closed.body)")
                    #expect(closed.body.filter { $0 == "\n" }.count == 1)
                    #expect(try await proxy.operatorSend("/healthz").status == 200, "serving all the same")
                }
            }
        }
    }

    @Test("/readyz on PostgreSQL: 503 while the server is stopped, 200 again once it is back")
    func readinessOnPostgres() async throws {
        try await withSimulator { sim in
            try await withPostgres { cluster in
                var configuration = try PostgresStoreConfiguration(url: cluster.url, environment: cluster.environment)
                // 5 s per query (and 15 s to migrate at connect): a loaded machine starts slowly;
                // readiness still turns within the 20 s waited for below.
                configuration.queryTimeout = .seconds(5)
                let store = try await PostgresCacheStore.connect(configuration, logger: quietLogger)
                do {
                    try await withInProcessProxy(origin: sim.baseURL, store: store) { proxy in
                        #expect(try await proxy.operatorSend("/readyz").status == 200)
                        try await cluster.kill()
                        let down = await eventually(within: 20) { (try? await proxy.operatorSend("/readyz").status) == 503 }
                        #expect(down, "readyz says 503 once PostgreSQL is gone")
                        let reason = try await proxy.operatorSend("/readyz").body
                        #expect(reason.hasPrefix("not ready: "), "\(reason)")
                        #expect(reason.contains("PostgreSQL at postgres://freshet@127.0.0.1:"), "\(reason)")
                        #expect(!reason.contains(PostgresCluster.password))
                        #expect(try await proxy.operatorSend("/healthz").status == 200, "the proxy serves all the same")
                        try await cluster.restart()
                        let back = await eventually(within: 30) { (try? await proxy.operatorSend("/readyz").status) == 200 }
                        #expect(back, "readyz says 200 once PostgreSQL is back")
                    }
                } catch {
                    await store.shutdown()
                    throw error
                }
                await store.shutdown()
            }
        }
    }

    @Test("POST /purge drops every credential's copy of a path (and nothing else); the next requests are misses")
    func purge() async throws {
        try await withSimulator { sim in
            // Public, and varying on Authorization: one stored variant per credential.
            let headers = [["Cache-Control", "public, max-age=300"], ["Vary", "Authorization"]]
            await sim.simulator.setScript(path: "/scripted/purge-me", Script(headers: headers, body: "purge me"))
            await sim.simulator.setScript(path: "/scripted/keep", Script(headers: headers, body: "keep"))
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: sim.baseURL, store: store) { proxy in
                    func caches() async throws -> [String?] {
                        var seen: [String?] = []
                        for credential in [bearer(tokenA), bearer(tokenB)] {
                            seen.append(try await proxy.send("/scripted/purge-me", headers: credential).cache)
                        }
                        seen.append(try await proxy.send("/scripted/keep", headers: bearer(tokenA)).cache)
                        return seen
                    }
                    #expect(try await caches() == ["MISS", "MISS", "MISS"])
                    #expect(try await caches() == ["HIT", "HIT", "HIT"], "each credential has its own stored copy")

                    let purged = try await proxy.operatorSend("/purge?path=/scripted/purge-me", method: .post)
                    #expect(purged.status == 200)
                    #expect(purged.fields[.contentType] == "application/json")
                    let object = try JSONSerialization.jsonObject(with: Data(purged.body.utf8)) as? [String: Any]
                    #expect(object?["purged"] as? Bool == true)
                    #expect(object?["url"] as? String == sim.baseURL.absoluteString + "/scripted/purge-me")

                    #expect(try await caches() == ["MISS", "MISS", "HIT"], "both copies gone; the other path kept")
                    let log = await sim.simulator.requestLog().filter { $0.path == "/scripted/purge-me" }
                    #expect(log.count == 4)
                }
            }
        }
    }

    @Test("/purge refuses a missing or invalid path (400) and methods other than POST (405)")
    func purgeRefusals() async throws {
        try await withSimulator { sim in
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: sim.baseURL, store: store) { proxy in
                    for target in ["/purge", "/purge?path=", "/purge?path=repos/a/b", "/purge?path=//evil.example/a",
                                   "/purge?path=/a%20b", "/purge?other=/a"] {
                        let answer = try await proxy.operatorSend(target, method: .post)
                        #expect(answer.status == 400, "\(target)")
                        let object = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]
                        #expect(object?["purged"] as? Bool == false, "\(target)")
                    }
                    for method in [HTTPRequest.Method.get, .put, .delete] {
                        let answer = try await proxy.operatorSend("/purge?path=/a", method: method)
                        #expect(answer.status == 405, "\(method)")
                        #expect(answer.fields[.allow] == "POST")
                    }
                    #expect(try await proxy.operatorSend("/nothing").status == 404)
                }
            }
        }
    }

    @Test("Graceful shutdown: /healthz says 503 and no connection is accepted while the request in flight finishes")
    func gracefulShutdown() async throws {
        try await withSimulator { sim in
            await sim.simulator.setScript(path: "/scripted/slow", Script(headers: [["Cache-Control", "max-age=60"]], body: "finished"))
            await sim.simulator.hold(route: "/scripted/slow")
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: sim.baseURL, store: store) { proxy in
                    #expect(proxy.server.status.current == .serving)
                    let port = try #require(proxy.base.port)
                    let request = Task { try await proxy.send("/scripted/slow") }
                    // Bounded, but generous: the whole suite runs in parallel on two cores.
                    let arrived = await eventually(within: 30) { await sim.simulator.requestLog().contains { $0.path == "/scripted/slow" } }
                    #expect(arrived, "the request reached the origin")

                    await proxy.group.triggerGracefulShutdown()
                    let draining = await eventually { (try? await proxy.operatorSend("/healthz").status) == 503 }
                    #expect(draining, "/healthz answers 503 once the shutdown began")
                    #expect(proxy.server.status.current == .draining)
                    #expect(try await proxy.operatorSend("/readyz").status == 503)
                    let refused = await eventually { (try? RawClient(port: port)) == nil }
                    #expect(refused, "no new connection is accepted")

                    await sim.simulator.release(route: "/scripted/slow")
                    let answer = try await request.value
                    #expect(answer.status == 200)
                    #expect(answer.body == "finished")
                }
            }
        }
    }
}
