import Foundation
import Freshet
import FreshetSimulator
import FreshetTestSupport
import HTTPTypes
import OpenAPIRuntime
import Synchronization
import Testing

/// Starts `freshet proxy --store <cluster>` against the CLI's simulator and hands `body` the child
/// and its base URL.
private func withFleetProxy<T: Sendable>(
    _ cli: FreshetCLI, _ cluster: PostgresCluster, _ extra: [String] = [],
    _ body: (RunningProcess, String) async throws -> T
) async throws -> T {
    let executable = try #require(builtProduct("freshet"), "the freshet executable was not built")
    let arguments = ["proxy", "--origin", cli.sim.baseURL.absoluteString, "--listen", "127.0.0.1:0",
                     "--store", cluster.url, "--log"] + extra
    let environment = cli.baseEnvironment.merging(cluster.environment) { _, new in new }
    return try await withRunningProcess(executable, arguments, environment: environment) { child in
        let prefix = "listening on "
        try #require(child.firstLine.hasPrefix(prefix), "\(child.firstLine) \(child.stderr)")
        return try await body(child, String(child.firstLine.dropFirst(prefix.count)))
    }
}

/// The base URL of a proxy's `--metrics 127.0.0.1:0` listener, from the line it prints.
private func metricsBase(_ proxy: RunningProcess) async throws -> URL {
    let announced = await eventually(within: 10) { proxy.stdout.contains("metrics on http://127.0.0.1:") }
    try #require(announced, "\(proxy.stdout)")
    let line = try #require(proxy.stdout.split(separator: "\n").first { $0.hasPrefix("metrics on ") })
    let url = try #require(URL(string: String(line.dropFirst("metrics on ".count))))
    let host = try #require(url.host), port = try #require(url.port)
    return try #require(URL(string: "http://\(host):\(port)"))
}

/// A proxy's `freshet_proxy_requests_in_flight`: the requests it is forwarding now.
private func inFlight(_ metrics: URL) async throws -> Double {
    let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/metrics")
    let (_, body) = try await liveTransport.send(request, body: nil, baseURL: metrics, operationID: "metrics")
    let text = String(decoding: try await Data(collecting: try #require(body), upTo: 1 << 20), as: UTF8.self)
    return try PrometheusText.parse(text)["freshet_proxy_requests_in_flight"] ?? -1
}

/// A proxy's answer: its status and `X-Cache`.
private struct Answer: Equatable, Sendable, CustomStringConvertible {
    var status: Int
    var cache: String?
    init(_ status: Int, _ cache: String?) { (self.status, self.cache) = (status, cache) }
    var description: String { "\(status) \(cache ?? "-")" }
}

/// One GET through a proxy, in process, its body read whole.
private func get(_ base: String, _ path: String) async throws -> Answer {
    let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: path)
    let (response, body) = try await liveTransport.send(request, body: nil, baseURL: URL(string: base)!, operationID: "fleet")
    if let body { _ = try await Data(collecting: body, upTo: 1 << 20) }
    return Answer(response.status.code, response.headerFields[HTTPField.Name("X-Cache")!])
}

/// The simulator's log entries for `path` with `method`.
private func origin(_ control: SimControl, _ path: String, _ method: String = "GET") async throws -> Int {
    try await control.log().filter { $0.path == path && $0.method == method }.count
}

@Suite("freshet proxy on PostgreSQL: a fleet sharing one cache", .serialized)
struct ProxyFleetTests {
    @Test("A response fetched through one proxy is a hit on another, with no origin request")
    func sharedHit() async throws {
        try await withPostgres { cluster in
            try await withFreshetCLI { cli in
                let control = SimControl(cli.sim)
                try await control.script("fleet", headers: [("Cache-Control", "max-age=600")], body: "{\"shared\":true}")
                try await withFleetProxy(cli, cluster) { _, a in
                    try await withFleetProxy(cli, cluster) { _, b in
                        let answer1 = try await get(a, "/scripted/fleet")
                        #expect(answer1 == Answer(200, "MISS"))
                        let answer2 = try await get(b, "/scripted/fleet")
                        #expect(answer2 == Answer(200, "HIT"))
                        let answer3 = try await get(b, "/scripted/fleet")
                        #expect(answer3 == Answer(200, "HIT"))
                        let answer4 = try await origin(control, "/scripted/fleet")
                        #expect(answer4 == 1)
                    }
                }
            }
        }
    }

    @Test("A DELETE answered through one proxy drops the other proxy's copy")
    func invalidationAcrossInstances() async throws {
        try await withPostgres { cluster in
            try await withFreshetCLI { cli in
                let control = SimControl(cli.sim)
                try await control.script("doc", headers: [("Cache-Control", "max-age=600")], body: "{\"v\":1}")
                try await withFleetProxy(cli, cluster) { _, a in
                    try await withFleetProxy(cli, cluster) { _, b in
                        let answer5 = try await get(a, "/scripted/doc")
                        #expect(answer5 == Answer(200, "MISS"))
                        let answer6 = try await get(a, "/scripted/doc")
                        #expect(answer6 == Answer(200, "HIT"))   // from A's memory tier
                        let delete = HTTPRequest(method: .delete, scheme: nil, authority: nil, path: "/scripted/doc")
                        let (deleted, rest) = try await liveTransport.send(delete, body: nil, baseURL: URL(string: b)!, operationID: "fleet")
                        if let rest { _ = try await Data(collecting: rest, upTo: 1 << 20) }
                        #expect(deleted.status == .ok)
                        // The notification reaches A within a bounded time; A then asks the origin again.
                        let refetched = try await eventually(within: 10) {
                            try await get(a, "/scripted/doc").cache == "MISS"
                        }
                        #expect(refetched)
                        let answer7 = try await origin(control, "/scripted/doc")
                        #expect(answer7 == 2)
                    }
                }
            }
        }
    }

    @Test("Twenty concurrent misses spread over two proxies make one origin request")
    func coalescedMisses() async throws {
        try await withPostgres { cluster in
            try await withFreshetCLI { cli in
                let control = SimControl(cli.sim)
                try await control.script("hot", headers: [("Cache-Control", "max-age=600")], body: "{\"hot\":true}")
                // Held at the origin until all twenty are waiting in the two proxies (their
                // in-flight gauges say so): every one arrives while the first is still there.
                try await control.hold(route: "/scripted/hot")
                try await withFleetProxy(cli, cluster, ["--metrics", "127.0.0.1:0"]) { proxyA, a in
                    try await withFleetProxy(cli, cluster, ["--metrics", "127.0.0.1:0"]) { proxyB, b in
                        let metricsA = try await metricsBase(proxyA), metricsB = try await metricsBase(proxyB)
                        let results = try await withThrowingTaskGroup(of: Answer.self) { group in
                            for index in 0..<20 {
                                group.addTask { try await get(index % 2 == 0 ? a : b, "/scripted/hot") }
                            }
                            let waiting = try await eventually(within: 20) {
                                try await inFlight(metricsA) + inFlight(metricsB) == 20
                            }
                            #expect(waiting, "all twenty waiting in the proxies")
                            try await control.release(route: "/scripted/hot")
                            return try await group.reduce(into: []) { $0.append($1) }
                        }
                        #expect(results.count == 20)
                        #expect(results.allSatisfy { $0.status == 200 })
                        #expect(results.filter { $0.cache == "MISS" }.count == 1, "\(results)")
                        let answer8 = try await origin(control, "/scripted/hot")
                        #expect(answer8 == 1)
                    }
                }
            }
        }
    }

    @Test("PostgreSQL stopped under load: no client request fails; the proxy says so once and reconnects")
    func postgresLost() async throws {
        try await withPostgres { cluster in
            try await withFreshetCLI { cli in
                let control = SimControl(cli.sim)
                for index in 0..<10 {
                    try await control.script("load\(index)", headers: [("Cache-Control", "max-age=600")], body: "{\"n\":\(index)}")
                }
                try await withFleetProxy(cli, cluster) { proxyA, a in
                    try await withFleetProxy(cli, cluster) { _, b in
                        let sent = SentCount()
                        let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
                            for worker in 0..<6 {
                                group.addTask {
                                    var seen: [Int] = []
                                    for round in 0..<40 {
                                        let base = (worker + round) % 2 == 0 ? a : b
                                        seen.append(try await get(base, "/scripted/load\((worker * 7 + round) % 10)").status)
                                        sent.add()
                                    }
                                    return seen
                                }
                            }
                            // Stop PostgreSQL once the load is under way.
                            group.addTask {
                                while sent.value < 40 { try await Task.sleep(for: .milliseconds(5)) }
                                try await cluster.kill()
                                return []
                            }
                            return try await group.reduce(into: []) { $0 += $1 }
                        }
                        #expect(statuses.count == 240)
                        #expect(statuses.allSatisfy { $0 == 200 }, "\(Dictionary(grouping: statuses, by: { $0 }).mapValues(\.count))")
                        let lost = await eventually(within: 10) { proxyA.stderr.contains("lost PostgreSQL at \(cluster.url)") }
                        #expect(lost, "\(proxyA.stderr.suffix(2000))")
                        #expect(proxyA.stderr.components(separatedBy: "lost PostgreSQL").count == 2, "said once")
                        // Back: the proxies reconnect and share again.
                        try await cluster.restart()
                        let back = await eventually(within: 30) { proxyA.stderr.contains("PostgreSQL at \(cluster.url) is back") }
                        #expect(back, "\(proxyA.stderr.suffix(2000))")
                        try await control.script("after", headers: [("Cache-Control", "max-age=600")], body: "{}")
                        let answer9 = try await get(a, "/scripted/after")
                        #expect(answer9 == Answer(200, "MISS"))
                        let shared = try await eventually(within: 10) { try await get(b, "/scripted/after").cache == "HIT" }
                        #expect(shared)
                    }
                }
            }
        }
    }

    @Test("--metrics serves Prometheus text whose counters match the requests sent")
    func metrics() async throws {
        try await withPostgres { cluster in
            try await withFreshetCLI { cli in
                let control = SimControl(cli.sim)
                try await control.script("counted", headers: [("Cache-Control", "max-age=600")], body: "{}")
                try await withFleetProxy(cli, cluster, ["--metrics", "127.0.0.1:0"]) { proxy, base in
                    let announced = await eventually(within: 10) { proxy.stdout.contains("metrics on http://127.0.0.1:") }
                    try #require(announced, "\(proxy.stdout)")
                    let line = try #require(proxy.stdout.split(separator: "\n").first { $0.hasPrefix("metrics on ") })
                    let metricsURL = try #require(URL(string: String(line.dropFirst("metrics on ".count))))
                    #expect(metricsURL.path == "/metrics")
                    let answer10 = try await get(base, "/scripted/counted")
                    #expect(answer10 == Answer(200, "MISS"))
                    let answer11 = try await get(base, "/scripted/counted")
                    #expect(answer11 == Answer(200, "HIT"))
                    let answer12 = try await get(base, "/scripted/counted")
                    #expect(answer12 == Answer(200, "HIT"))
                    let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/metrics")
                    let metricsBase = try #require(URL(string: "http://\(metricsURL.host!):\(metricsURL.port!)"))
                    // A request is counted when its answer is done, which may be just after the
                    // client has read it: read the counters until the third request is in them.
                    let lastText = Mutex("")
                    let counted = try await eventually(within: 10) {
                        let (response, body) = try await liveTransport.send(request, body: nil, baseURL: metricsBase, operationID: "metrics")
                        #expect(response.status == .ok)
                        #expect(response.headerFields[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
                        let text = String(decoding: try await Data(collecting: try #require(body), upTo: 1 << 20), as: UTF8.self)
                        lastText.withLock { $0 = text }
                        return try PrometheusText.parse(text)["freshet_proxy_requests_total{cache=\"hit\"}"] == 2
                    }
                    let text = lastText.withLock { $0 }
                    #expect(counted, "\(text)")
                    let samples = try PrometheusText.parse(text)
                    #expect(samples["freshet_proxy_requests_total{cache=\"miss\"}"] == 1)
                    #expect(samples["freshet_proxy_requests_total{cache=\"revalidated\"}"] == 0)
                    #expect(samples["freshet_proxy_requests_total{cache=\"stale\"}"] == 0)
                    #expect(samples["freshet_proxy_origin_duration_seconds_count"] == 1)
                    #expect(samples["freshet_proxy_requests_in_flight"] == 0)
                    #expect((samples["freshet_cache_memory_bytes"] ?? 0) > 0)
                    #expect(samples["freshet_cache_store_errors_total"] == 0)
                }
            }
        }
    }

    @Test("PostgreSQL unreachable at start: a clear error and exit 1, never the password")
    func unreachableAtStart() async throws {
        try await withFreshetCLI { cli in
            let result = try await cli.run(
                "proxy", "--origin", cli.sim.baseURL.absoluteString, "--listen", "127.0.0.1:0",
                "--store", "postgres://fleet:s3cret-pw@127.0.0.1:1/cache")
            #expect(result.status == 1)
            #expect(result.stderr.contains("could not connect to PostgreSQL at postgres://fleet@127.0.0.1:1/cache: connection refused"),
                    "\(result.stderr)")
            #expect(!result.stderr.contains("s3cret-pw") && !result.stdout.contains("s3cret-pw"))
            let fromEnvironment = try await cli.run(
                ["proxy", "--origin", cli.sim.baseURL.absoluteString, "--listen", "127.0.0.1:0"],
                environment: ["FRESHET_DATABASE_URL": "mysql://nowhere", "PGPASSWORD": "s3cret-pw"])
            #expect(fromEnvironment.status != 0)
            #expect(fromEnvironment.stderr.contains("FRESHET_DATABASE_URL: the store URL cannot be used"), "\(fromEnvironment.stderr)")
        }
    }
}

/// Requests sent so far, across tasks.
private final class SentCount: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

/// Prometheus' text exposition format, parsed strictly enough to fail on anything malformed:
/// `# HELP`/`# TYPE` comments and `name{labels} value` samples.
enum PrometheusText {
    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    /// Every sample by its name with labels, as written.
    static func parse(_ text: String) throws -> [String: Double] {
        var samples: [String: Double] = [:]
        let sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"]*")*\})? ([-+]?(?:[0-9.]+(?:[eE][-+]?[0-9]+)?|Inf|NaN))$/
        for line in text.split(separator: "\n") where !line.isEmpty {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                guard parts.count == 4, ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3]) else {
                    throw Malformed(description: "bad TYPE line: \(line)")
                }
                continue
            }
            if line.hasPrefix("# ") { continue }
            guard let match = try sample.wholeMatch(in: String(line)), let value = Double(String(match.output.4).replacingOccurrences(of: "Inf", with: "inf")) else {
                throw Malformed(description: "bad sample line: \(line)")
            }
            samples[String(match.output.1) + String(match.output.2 ?? "")] = value
        }
        return samples
    }
}
