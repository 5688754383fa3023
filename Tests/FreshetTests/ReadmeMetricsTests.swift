// README.md's metrics example ("### Metrics"), verbatim from here to the end marker:
// `ReadmeMetricsTests` checks that the README says exactly this, runs it against the simulator,
// and checks the README's output against what it printed.
import Foundation
import Freshet
import FreshetCache
import FreshetTransports
import GitHubAPI
import Prometheus

/// Three calls through the standard chain, then the client's metrics in Prometheus' text format.
func metricsTour(gitHub: URL = GitHub.defaultBaseURL) async throws -> String {
    // An app bootstraps the process' backend once instead, and keeps `MetricsMiddleware()`:
    // MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))    (import Metrics)
    let registry = PrometheusCollectorRegistry()
    let metrics = MetricsMiddleware(factory: PrometheusMetricsFactory(registry: registry))
    let cache = CacheMiddleware(store: MemoryCacheStore())
    let github = APIClient.live(baseURL: gitHub, middlewares: Middlewares.standard(metrics: metrics, innermost: [cache]))
    _ = try await github.send(GitHub.user(login: "octocat").named("/users/{login}"))          // miss
    _ = try await github.send(GitHub.user(login: "octocat").named("/users/{login}"))          // hit
    _ = try? await github.send(GitHub.user(login: "no-such-user-x").named("/users/{login}"))  // 404
    return registry.emitToString()                                  // what GET /metrics answers
}
// End of the README's metrics example.

import FreshetSimulator
import FreshetTestSupport
import Testing

@Suite("The README's metrics example")
struct ReadmeMetricsTests {
    /// The lines of this file from the first import to the end marker.
    static func exampleInThisFile() throws -> String {
        let source = try String(contentsOfFile: #filePath, encoding: .utf8)
        let lines = source.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.hasPrefix("import ") })
        let end = try #require(lines.firstIndex { $0 == "// End of the README's metrics example." })
        return lines[start..<end].joined(separator: "\n")
    }

    /// The README's "### Metrics" section: its first ```swift block and the plain ``` block after it.
    static func readmeBlocks() throws -> (code: String, output: String) {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appending(path: "README.md"), encoding: .utf8)
        let section = try #require(readme.range(of: "\n### Metrics\n"))
        let rest = readme[section.upperBound...]
        let open = try #require(rest.range(of: "```swift\n"))
        let close = try #require(rest[open.upperBound...].range(of: "\n```\n"))
        let after = rest[close.upperBound...]
        let outputOpen = try #require(after.range(of: "```\n"))
        let outputClose = try #require(after[outputOpen.upperBound...].range(of: "\n```\n"))
        return (String(rest[open.upperBound..<close.lowerBound]), String(after[outputOpen.upperBound..<outputClose.lowerBound]))
    }

    /// A line without its value when it is a timer's (durations differ from run to run).
    static func comparable(_ line: Substring) -> String {
        guard line.contains("_seconds"), !line.hasPrefix("#"), let space = line.lastIndex(of: " ") else { return String(line) }
        return String(line[..<space])
    }

    @Test("README.md shows exactly the code this test runs")
    func readmeMatches() throws {
        #expect(try Self.readmeBlocks().code == Self.exampleInThisFile())
    }

    @Test("The example runs against the simulator; the README's output is what it prints")
    func runsAgainstTheSimulator() async throws {
        try await withSimulator { sim in
            let text = try await metricsTour(gitHub: sim.baseURL)
            print(text)
            let printed = text.split(separator: "\n")
            #expect(printed.contains(#"freshet_client_requests_total{method="GET",route="/users/{login}",status_class="2xx",cache="miss"} 1"#))
            #expect(printed.contains(#"freshet_client_requests_total{method="GET",route="/users/{login}",status_class="2xx",cache="hit"} 1"#))
            #expect(printed.contains(#"freshet_client_requests_total{method="GET",route="/users/{login}",status_class="4xx",cache="miss"} 1"#))
            #expect(await sim.simulator.requestLog().count == 2, "the hit never reached the server")

            // Every line the README shows was printed (a timer's without its value); every line
            // printed but the timers' buckets and sums is in the README.
            let shown = try Self.readmeBlocks().output.split(separator: "\n").filter { $0 != "…" }
            let printedSet = Set(printed.map(Self.comparable))
            let notPrinted = shown.filter { !printedSet.contains(Self.comparable($0)) }
            #expect(notPrinted.isEmpty, "README lines not printed: \(notPrinted)")
            let shownSet = Set(shown.map(Self.comparable))
            let notShown = printed.filter { !$0.contains("_bucket") && !$0.contains("_sum") && !shownSet.contains(Self.comparable($0)) }
            #expect(notShown.isEmpty, "printed lines not in the README: \(notShown)")
        }
    }
}
