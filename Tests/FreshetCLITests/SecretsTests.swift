import Foundation
import Freshet
import FreshetSimulator
import FreshetTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Secrets stay secret: tokens and keys never reach output, logs or the database.
///
/// Related tests elsewhere: a cross-host redirect drops `Authorization`
/// (`MiddlewareTests.crossHostRedirectDropsCredentials`), the database, `-wal` and `-shm` files are
/// 0600 (`CacheCommandTests.filePermissions`), URLs in errors and log lines are redacted
/// (`ErrorBodyTests`, `MiddlewareTests.loggingRedactsSecrets`) and an echoed Kakao key is hidden
/// (`BlogsTests.keyNeverShown`).
@Suite("Secrets: markers in GITHUB_TOKEN and KAKAO_REST_API_KEY never leak", .serialized, .timeLimit(.minutes(3)))
struct SecretsTests {
    static let gitHubToken = "ghp_MARKERtoken7d1f0c9e2a"
    static let kakaoKey = "MARKERkakao5e2b8a41"
    static let markers = [gitHubToken, kakaoKey]

    /// The markers as they could be written: raw, percent-encoded, in a `Bearer`/`KakaoAK` header.
    static var forms: [[UInt8]] {
        markers.flatMap { marker -> [[UInt8]] in
            let encoded = marker.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? marker
            return [Array(marker.utf8), Array(encoded.utf8), Array(marker.prefix(12).utf8)]
        }
    }

    /// Every marker form found in `text`.
    static func leaks(in bytes: [UInt8]) -> [String] {
        forms.filter { form in
            guard bytes.count >= form.count else { return false }
            return (0...(bytes.count - form.count)).contains { start in
                bytes[start] == form[0] && Array(bytes[start..<(start + form.count)]) == form
            }
        }.map { String(decoding: $0, as: UTF8.self) }
    }

    /// Every file under `home` (the database, its `-wal` and `-shm`, the lock file…) with a marker in it.
    static func leakingFiles(_ home: URL) -> [String] {
        guard let files = FileManager.default.enumerator(at: home, includingPropertiesForKeys: nil) else { return [] }
        var found: [String] = []
        for case let file as URL in files {
            guard let data = FileManager.default.contents(atPath: file.path) else { continue }
            let leaks = leaks(in: Array(data))
            if !leaks.isEmpty { found.append("\(file.lastPathComponent): \(leaks)") }
        }
        return found
    }

    /// ``leakingFiles(_:)`` off the cooperative pool.
    static func scan(_ home: URL) async throws -> [String] {
        try await offPool { leakingFiles(home) }
    }

    static let environment = ["GITHUB_TOKEN": gitHubToken, "KAKAO_REST_API_KEY": kakaoKey, "FRESHET_LOG": "trace"]

    @Test("Every command under -v and FRESHET_LOG=trace, success and failure: no marker in stdout, stderr or any file")
    func everyCommand() async throws {
        // The detector itself finds a marker, whole or cut short.
        #expect(Self.leaks(in: Array("Authorization: Bearer \(Self.gitHubToken)".utf8)).count == 2)
        #expect(!Self.leaks(in: Array("key=\(Self.kakaoKey.prefix(12))…".utf8)).isEmpty)
        let configuration = SimulatorConfiguration(kakaoAPIKey: Self.kakaoKey, enforceRateLimits: false)
        try await withFreshetCLI(configuration) { cli in
            let raw = APIClient(baseURL: cli.sim.baseURL, transport: liveTransport)
            let top = try JSONDecoder().decode([Int].self, from: try await raw.value(Endpoint<Data>.raw("v0", "topstories.json")))
            var runs: [(arguments: [String], statuses: Set<Int32>)] = [
                (["feed", "-v"], [0]), (["feed", "-v", "--refresh"], [0]), (["feed", "--json", "-v"], [0]),
                (["feed", "--top-swift", "2", "-v"], [0]), (["feed", "nobody/nothing", "-v"], [2]),
                (["hn", "--limit", "3", "-v"], [0]), (["hn", "item", "\(top[0])", "-v"], [0]),
                (["user", "octocat", "-v"], [0]), (["user", "nobody-here-x", "-v"], [2]),
                (["repo", "ReactiveX/RxSwift", "-v"], [0]), (["repos", "swift", "--limit", "3", "-v"], [0]),
                (["repos", "swift", "--json", "-v"], [0]),
                (["blogs", "스위프트", "-v"], [0]), (["blogs", "swift", "--json", "-v"], [0]),
                (["cache", "stats"], [0]), (["cache", "stats", "--json"], [0]),
            ]
            var results: [([String], ProcessResult)] = []
            for run in runs {
                let result = try await cli.run(run.arguments, environment: Self.environment)
                #expect(run.statuses.contains(result.status), "\(run.arguments): \(result.status) \(result.stderr.prefix(500))")
                results.append((run.arguments, result))
            }
            // Failures print messages and stale warnings, and log at warning level.
            await cli.sim.simulator.injectFaults(Fault(route: "/users/octocat", status: 401, times: 10,
                                                       body: #"{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}"#))
            await cli.sim.simulator.injectFaults(Fault(route: "/repos/ReactiveX/RxSwift/events", status: 503, times: 10))
            await cli.sim.simulator.injectFaultMode(FaultMode(route: "/v2/search/blog", mode: .resetMidBody, times: 10))
            runs = [
                (["user", "octocat", "-v", "--refresh"], [2, 3]), (["feed", "-v", "--refresh"], [3]),
                (["blogs", "스위프트", "-v", "--refresh"], [2, 3]),
            ]
            for run in runs {
                let result = try await cli.run(run.arguments, environment: Self.environment)
                #expect(run.statuses.contains(result.status), "\(run.arguments): \(result.status) \(result.stderr.prefix(500))")
                results.append((run.arguments, result))
            }

            // The credentials were sent (so there was something to leak)…
            let log = await cli.sim.simulator.requestLog()
            #expect(log.contains { $0.headers["authorization"] == "Bearer \(Self.gitHubToken)" })
            #expect(log.contains { $0.headers["authorization"] == "KakaoAK \(Self.kakaoKey)" })
            // …the exchanges were logged, and nothing shows a marker.
            #expect(results.contains { $0.1.stderr.contains("/repos/ReactiveX/RxSwift/events") }, "-v logs each exchange")
            #expect(results.contains { $0.1.stderr.contains("REDACTED") }, "trace logs headers, redacted")
            for (arguments, result) in results {
                #expect(Self.leaks(in: Array(result.stdout.utf8)).isEmpty, "stdout of \(arguments)")
                #expect(Self.leaks(in: Array(result.stderr.utf8)).isEmpty, "stderr of \(arguments): \(result.stderr.prefix(2000))")
            }
            let leaking = try await Self.scan(cli.home)
            #expect(leaking.isEmpty, "\(leaking)")
        }
    }

    @Test("While a watching feed and a proxy hold the database open, neither it nor its -wal and -shm hold a marker")
    func openDatabaseFiles() async throws {
        let freshet = try #require(builtProduct("freshet"))
        let configuration = SimulatorConfiguration(kakaoAPIKey: Self.kakaoKey, enforceRateLimits: false)
        try await withFreshetCLI(configuration) { cli in
            let environment = cli.baseEnvironment.merging(Self.environment) { _, new in new }
            try await withRunningProcess(freshet, ["feed", "--watch", "-v", "--limit", "3"], environment: environment) { watcher in
                // The first row is printed: the events are stored, the database is open with its WAL.
                #expect(!watcher.firstLine.isEmpty)
                let files = try FileManager.default.contentsOfDirectory(atPath: cli.home.path)
                #expect(files.contains("freshet.sqlite-wal"), "\(files)")
                let leaking = try await Self.scan(cli.home)
                #expect(leaking.isEmpty, "\(leaking)")

                let arguments = ["proxy", "--origin", cli.sim.baseURL.absoluteString, "--listen", "127.0.0.1:0", "--log", "--private"]
                try await withRunningProcess(freshet, arguments, environment: environment) { proxy in
                    let base = String(proxy.firstLine.dropFirst("listening on ".count))
                    for path in ["/users/octocat", "/repos/ReactiveX/RxSwift", "/users/octocat"] {
                        let response = try await curl([base + path, "-H", "Authorization: Bearer \(Self.gitHubToken)"])
                        #expect(response.status == 200)
                    }
                    let leaking = try await Self.scan(cli.home)
                    #expect(leaking.isEmpty, "\(leaking)")
                    proxy.signal(SIGTERM)
                    #expect(await proxy.waitForExit(timeout: 20) == 0)
                    #expect(Self.leaks(in: Array((proxy.stdout + proxy.stderr).utf8)).isEmpty, "\(proxy.stderr.prefix(2000))")
                }
                watcher.signal(SIGTERM)
                await watcher.waitForExit(timeout: 20)
                #expect(Self.leaks(in: Array((watcher.firstLine + watcher.stdout + watcher.stderr).utf8)).isEmpty)
            }
            let leaking = try await Self.scan(cli.home)
            #expect(leaking.isEmpty, "\(leaking)")
            // Private files (also `CacheCommandTests.filePermissions`).
            for file in try FileManager.default.contentsOfDirectory(atPath: cli.home.path) where file.hasPrefix("freshet.sqlite") {
                let attributes = try FileManager.default.attributesOfItem(atPath: cli.home.appendingPathComponent(file).path)
                #expect(attributes[.posixPermissions] as? Int == 0o600, "\(file)")
            }
        }
    }

    @Test("freshet feed: a redirect to another host arrives there without the token")
    func crossHostRedirect() async throws {
        try await withFreshetCLI(.init(enforceRateLimits: false)) { cli in
            // `localhost` is another origin than `127.0.0.1`, served by the same simulator.
            let target = "http://localhost:\(cli.sim.port)/repos/reactivex/rxswift/events?per_page=100"
            await cli.sim.simulator.injectFaults(Fault(route: "/repos/ReactiveX/RxSwift/events", status: 301, headers: ["Location": target]))
            let result = try await cli.run(["feed", "--limit", "5"], environment: ["GITHUB_TOKEN": Self.gitHubToken])
            #expect(result.status == 0, "\(result.stderr)")
            let log = await cli.sim.simulator.requestLog()
            #expect(log.count == 2)
            #expect(log.first?.headers["authorization"] == "Bearer \(Self.gitHubToken)")
            #expect(log.last?.headers["host"]?.hasPrefix("localhost") == true)
            #expect(log.last?.headers["authorization"] == nil, "the token stayed with its origin")
        }
    }
}
