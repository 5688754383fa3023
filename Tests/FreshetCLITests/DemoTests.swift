import Foundation
import FreshetTestSupport
import Testing

/// Runs `freshet` with nothing but a home folder and `extra`: no `FRESHET_*_URL`, no token, no key.
private func runBare(_ home: URL, _ arguments: [String], _ extra: [String: String] = [:], stdin: String? = nil)
    async throws -> ProcessResult
{
    let freshet = try #require(builtProduct("freshet"))
    return try await runProcess(freshet, arguments, environment: ["FRESHET_HOME": home.path].merging(extra) { _, new in new },
                                timeout: 60, stdin: stdin)
}

private func withHome<T>(_ body: (URL) async throws -> T) async throws -> T {
    let home = FileManager.default.temporaryDirectory.appendingPathComponent("freshet-demo-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: home) }
    return try await body(home)
}

@Suite("The built-in demo: every command with no network, no URL, no token and no key", .timeLimit(.minutes(3)))
struct DemoTests {
    @Test("FRESHET_DEMO=1: feed, hn, user, repo, repos and blogs all show simulated data")
    func everyCommand() async throws {
        try await withHome { home in
            let demo = ["FRESHET_DEMO": "1", "FRESHET_DEMO_PORT": "0"]
            let cases: [([String], String?, (String) -> Bool)] = [
                (["feed", "--limit", "5"], nil, { $0.split(separator: "\n").count == 5 }),
                (["hn", "--limit", "5"], nil, { $0.hasPrefix("1. ") || $0.hasPrefix(" 1. ") || $0.contains("\n5. ") }),
                (["user", "kzaher"], nil, { $0.contains("(kzaher)") && $0.contains("followers") }),
                (["repo", "apple/swift"], nil, { $0.hasPrefix("apple/swift\n") && $0.contains("stars") }),
                (["repos", "--limit", "3"], "rxswift\n", { $0.contains("match “rxswift”") && $0.contains("ReactiveX/RxSwift") }),
                (["blogs", "RxSwift", "--size", "3"], nil, { $0.contains("posts for “RxSwift”") }),
            ]
            for (arguments, input, shows) in cases {
                let result = try await runBare(home, arguments, demo, stdin: input)
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
                #expect(shows(result.stdout), "\(arguments): \(result.stdout)")
            }
            // The demo keeps its own database: nothing simulated lands in the user's.
            #expect(FileManager.default.fileExists(atPath: home.appendingPathComponent("demo/freshet.sqlite").path))
            #expect(!FileManager.default.fileExists(atPath: home.appendingPathComponent("freshet.sqlite").path))

            // Without the demo the same command has nowhere to go (this machine has no network):
            // it fails, so the runs above were served by the demo.
            let real = try await runBare(home, ["repo", "apple/swift"], ["FRESHET_GITHUB_URL": try await closedLoopbackURL().absoluteString])
            #expect(real.status == 2, "\(real.stdout)")
        }
    }

    @Test("hn --live --demo streams from the demo's simulator: the list as a JSON line, SIGTERM exits 0")
    func liveFromTheDemo() async throws {
        try await withHome { home in
            let freshet = try #require(builtProduct("freshet"))
            let environment = ["FRESHET_HOME": home.path, "FRESHET_DEMO_PORT": "0"]
            try await withRunningProcess(freshet, ["hn", "--live", "--demo", "--json", "--limit", "3"], environment: environment) { child in
                let stories = try JSONSerialization.jsonObject(with: Data(child.firstLine.utf8)) as? [[String: Any]]
                #expect(stories?.count == 3, "\(child.firstLine)")
                let live = await eventually { child.stderr.contains("● live · top stories") }
                #expect(live, "the demo answered with a stream, not plain JSON: \(child.stderr)")
                child.signal(SIGTERM)
                #expect(await child.waitForExit() == 0)
            }
        }
    }

    @Test("--demo: a second run finds the first one's responses in the cache, like the real APIs")
    func secondRunIsCached() async throws {
        try await withHome { home in
            // Kept for the demo: its server binds it on both runs, and nothing else can meanwhile.
            let port = try reservedLoopbackPort()
            let environment = ["FRESHET_DEMO_PORT": "\(port)"]
            let first = try await runBare(home, ["feed", "--demo", "--limit", "3", "-v", "--json"], environment)
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.stderr.contains("cache=miss") && first.stderr.contains("127.0.0.1:\(port)/repos/ReactiveX/RxSwift/events"))
            let second = try await runBare(home, ["feed", "--demo", "--limit", "3", "-v", "--json"], environment)
            #expect(second.status == 0, "\(second.stderr)")
            #expect(second.stderr.contains("cache=hit"), "\(second.stderr)")
            #expect(second.stdout == first.stdout && !first.stdout.isEmpty, "the same simulated events on every run")
        }
    }

    @Test("--demo with its port busy: another port, yet the second run is still a cache hit; the folder is 0700")
    func busyPortStillCached() async throws {
        try await withHome { home in
            // Bound by this process without SO_REUSEADDR: the demo cannot have it on either run.
            let busy = try #require(try await closedLoopbackURL().port)
            let environment = ["FRESHET_DEMO_PORT": "\(busy)"]
            let first = try await runBare(home, ["feed", "--demo", "--limit", "3", "-v", "--json"], environment)
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.stderr.contains("cache=miss"), "\(first.stderr)")
            let second = try await runBare(home, ["feed", "--demo", "--limit", "3", "-v", "--json"], environment)
            #expect(second.status == 0, "\(second.stderr)")
            #expect(second.stderr.contains("cache=hit") && !second.stderr.contains("cache=miss"), "\(second.stderr)")
            #expect(second.stdout == first.stdout && !first.stdout.isEmpty)
            let attributes = try FileManager.default.attributesOfItem(atPath: home.appendingPathComponent("demo").path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        }
    }

    @Test("An invalid FRESHET_DEMO_PORT is an error that names it; an unreachable API suggests --demo")
    func badPortAndHint() async throws {
        try await withHome { home in
            for value in ["http", "70000", "-1"] {
                let result = try await runBare(home, ["hn", "--demo", "--limit", "1"], ["FRESHET_DEMO_PORT": value])
                #expect(result.status == 1, "\(value): \(result.stdout)")
                #expect(result.stderr.contains("FRESHET_DEMO_PORT must be a port number"), "\(value): \(result.stderr)")
            }
            let closed = try await closedLoopbackURL().absoluteString
            let offline = try await runBare(home, ["repo", "apple/swift"], ["FRESHET_GITHUB_URL": closed])
            #expect(offline.status == 2)
            #expect(offline.stderr.contains("could not connect") && offline.stderr.contains("--demo runs the command"), "\(offline.stderr)")
        }
    }

    @Test("A bad FRESHET_DEMO value is not the demo; a usage error is still a usage error")
    func switches() async throws {
        try await withHome { home in
            let closed = try await closedLoopbackURL().absoluteString
            let off = try await runBare(home, ["repo", "apple/swift"], ["FRESHET_DEMO": "0", "FRESHET_GITHUB_URL": closed])
            #expect(off.status == 2, "FRESHET_DEMO=0 leaves the demo off: \(off.stdout)")
            let usage = try await runBare(home, ["hn", "--demo", "--limit", "0"])
            #expect(usage.status == 1 && usage.stderr.contains("--limit"))
        }
    }
}

@Suite("The demo's interactive search in a pseudo-terminal (tmux)", .enabled(if: tmuxPath != nil && python3Path != nil, "needs tmux and python3 on PATH (.ci/run installs both)"),
       .timeLimit(.minutes(2)))
struct DemoInteractiveTests {
    @Test("repos --demo: typing searches the simulated GitHub; Esc quits")
    func searchAsYouType() async throws {
        try await withHome { home in
            try await withTmux { tmux in
                try await tmux.start(environment: ["FRESHET_HOME": home.path, "FRESHET_DEMO_PORT": "0"],
                                     ["repos", "--demo", "--debounce", "100"])
                #expect(try await tmux.waitFor("type to search"))
                try await tmux.type("alamofire")
                let found = try await tmux.waitFor("Alamofire/Alamofire")
                let screen = try await tmux.screen()
                #expect(found, "results appear: \(screen)")
                try await tmux.send("Escape")
                #expect(try await tmux.waitFor("exit=0"))
            }
        }
    }
}
