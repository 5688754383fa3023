import Foundation
import FreshetSimulator
import FreshetTestSupport
import Testing

/// The lines of a feed's output, without the relative-time column (which moves with the clock).
func rows(_ output: String) -> [String] {
    output.split(separator: "\n").map { line in
        line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(2).joined(separator: " ")
    }
}

@Suite("freshet feed, end to end")
struct FeedTests {
    @Test("First run 200 and N events; a repeat within max-age makes no request; --refresh gets a 304 with the validators")
    func conditionalRefresh() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            let first = try await cli.run("feed", "--limit", "20")
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.stdout.split(separator: "\n").count == 20)
            var log = try await control.log()
            #expect(log.map(\.path) == ["/repos/ReactiveX/RxSwift/events?per_page=100"])
            #expect(log.first?.status == 200)

            let second = try await cli.run("feed", "--limit", "20")
            #expect(second.status == 0)
            #expect(rows(second.stdout) == rows(first.stdout))
            #expect(try await control.log().count == 1, "a repeat within max-age=60 makes no request")

            let third = try await cli.run("feed", "--limit", "20", "--refresh")
            #expect(third.status == 0)
            #expect(rows(third.stdout) == rows(first.stdout))
            log = try await control.log()
            #expect(log.count == 2)
            let revalidation = try #require(log.last)
            #expect(revalidation.status == 304)
            #expect(revalidation.bytesSent == 0)
            #expect(revalidation.headers["if-none-match"]?.hasPrefix("W/\"") == true)
            #expect(revalidation.headers["if-modified-since"] != nil)
        }
    }

    @Test("New events appear on top, without duplicates; the cap holds")
    func newEventsOnTop() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            let before = try await cli.run("feed", "--limit", "10", "--json")
            let old = try JSONSerialization.jsonObject(with: Data(before.stdout.utf8)) as? [[String: Any]] ?? []
            #expect(old.count == 10)
            try await control.post("events", ["repo": "ReactiveX/RxSwift", "count": 3])
            let after = try await cli.run("feed", "--limit", "10", "--json", "--refresh")
            #expect(after.status == 0, "\(after.stderr)")
            let new = try JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [[String: Any]] ?? []
            let ids = new.compactMap { $0["id"] as? String }
            #expect(ids.count == 10)
            #expect(Set(ids).count == 10, "no duplicates")
            #expect(Array(ids.dropFirst(3)) == old.prefix(7).compactMap { $0["id"] as? String })
            #expect(try await control.log().last?.status == 200)
            // Upstream field names in --json.
            let first = try #require(new.first)
            #expect(first["type"] is String)
            #expect((first["actor"] as? [String: Any])?["login"] is String)
            #expect((first["repo"] as? [String: Any])?["name"] as? String == "ReactiveX/RxSwift")
            #expect(first["created_at"] is String)
            #expect(first["payload"] is [String: Any])
        }
    }

    @Test("--top-swift: one search, then each repository's events with its own validators")
    func topSwift() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            let first = try await cli.run("feed", "--top-swift", "3", "--limit", "30")
            #expect(first.status == 0, "\(first.stderr)")
            var log = try await control.log()
            #expect(log.first?.path.hasPrefix("/search/repositories?q=language%3Aswift&sort=stars") == true)
            let eventPaths = log.dropFirst().map(\.path)
            #expect(eventPaths.count == 3)
            #expect(eventPaths.allSatisfy { $0.hasSuffix("/events?per_page=100") })
            let repos = Set(first.stdout.split(separator: "\n").compactMap { line in
                line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).first.map(String.init)
            })
            #expect(repos.count >= 2, "rows name their repository: \(repos)")

            try await control.resetLog()
            let second = try await cli.run("feed", "--top-swift", "3", "--limit", "30", "--refresh")
            #expect(second.status == 0)
            log = try await control.log()
            let revalidations = log.filter { $0.path.hasSuffix("/events?per_page=100") }
            #expect(revalidations.count == 3)
            #expect(revalidations.allSatisfy { $0.status == 304 })
            let tags = Set(revalidations.compactMap { $0.headers["if-none-match"] })
            #expect(tags.count == 3, "each repository sends its own ETag")
        }
    }

    @Test("Server gone: the stored feed is shown with a warning, exit 3 (0 with --allow-stale); nothing stored: exit 2")
    func offline() async throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("freshet-offline-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let shown = try await withSimulator(.init()) { sim in
            let cli = FreshetCLI(sim: sim, home: home)
            let result = try await cli.run("feed", "--limit", "5")
            #expect(result.status == 0)
            return result.stdout
        }
        let deadURL = try await closedLoopbackURL().absoluteString
        let env = ["FRESHET_GITHUB_URL": deadURL, "FRESHET_HOME": home.path]
        let freshet = try #require(builtProduct("freshet"))
        let stale = try await runProcess(freshet, ["feed", "--limit", "5", "--refresh"], environment: env)
        #expect(stale.status == 3)
        #expect(rows(stale.stdout) == rows(shown))
        #expect(stale.stderr.contains("warning: showing stored data"))
        #expect(stale.stderr.contains("could not connect"))
        let allowed = try await runProcess(freshet, ["feed", "--limit", "5", "--allow-stale", "--refresh"], environment: env)
        #expect(allowed.status == 0)
        let nothing = try await runProcess(freshet, ["feed", "apple/swift"], environment: env)
        #expect(nothing.status == 2)
        #expect(nothing.stdout.isEmpty)
        #expect(nothing.stderr.contains("could not connect"))
    }

    @Test("Bad input: a malformed OWNER/REPO is a usage error before any request; an unknown repo is named")
    func badInput() async throws {
        try await withFreshetCLI { cli in
            for bad in ["a/../b", "noslash", "a/b/c", "a/b?x", "/b", "a/", "%2F/x"] {
                let result = try await cli.run("feed", bad)
                #expect(result.status == 1, "\(bad)")
                #expect(result.stderr.contains("expected OWNER/REPO"), "\(bad)")
            }
            #expect(try await SimControl(cli.sim).log().isEmpty)
            let missing = try await cli.run("feed", "nobody/nothing")
            #expect(missing.status == 2)
            #expect(missing.stderr.contains("repository nobody/nothing not found"))
        }
    }

    @Test("Rate limited: says when it resets and that GITHUB_TOKEN raises the limit")
    func rateLimited() async throws {
        try await withFreshetCLI { cli in
            try await SimControl(cli.sim).post("ratelimit", ["resource": "core", "remaining": 0])
            let result = try await cli.run("feed")
            #expect(result.status == 2)
            #expect(result.stderr.contains("rate limit"))
            #expect(result.stderr.contains("resets"))
            #expect(result.stderr.contains("GITHUB_TOKEN"))
        }
    }
}

@Suite("freshet feed --watch, end to end", .timeLimit(.minutes(1)))
struct FeedWatchTests {
    @Test("--watch polls at the server's X-Poll-Interval with conditional requests, prints new events, stops on SIGINT (exit 0)")
    func watch() async throws {
        var configuration = SimulatorConfiguration()
        configuration.pollInterval = 1
        try await withFreshetCLI(configuration) { cli in
            let control = SimControl(cli.sim)
            let executable = try #require(builtProduct("freshet"))
            let arguments = ["feed", "ReactiveX/RxSwift", "--watch", "--limit", "5"]
            try await withRunningProcess(executable, arguments, environment: cli.baseEnvironment) { child in
                let firstPage = await eventually { child.stdout.split(separator: "\n").count == 4 }
                #expect(firstPage, "the first line and 4 more: \(child.stdout)")
                // At least one poll that found nothing new: a conditional request answered 304.
                let notModified = try await eventually {
                    try await control.log().contains { $0.path.hasPrefix("/repos/ReactiveX/RxSwift/events") && $0.status == 304 }
                }
                #expect(notModified)
                try await control.post("events", ["repo": "ReactiveX/RxSwift", "count": 2])
                let twoMore = await eventually { child.stdout.split(separator: "\n").count == 6 }
                #expect(twoMore, "two new events: \(child.stdout)")
                child.signal(SIGINT)
                #expect(await child.waitForExit(timeout: 10) == 0)
                #expect(child.stderr.contains("stopped watching."), "\(child.stderr)")
                #expect(child.stderr.contains("next poll at"), "\(child.stderr)")
                let polls = try await control.log().filter { $0.path.hasPrefix("/repos/ReactiveX/RxSwift/events") }
                #expect(polls.dropFirst().allSatisfy { $0.headers["if-none-match"] != nil || $0.headers["if-modified-since"] != nil },
                        "every poll after the first is conditional")
            }
        }
    }

    @Test("--watch with the network down: the stored feed, and the failure said at once, before the first poll")
    func watchOffline() async throws {
        try await withFreshetCLI { cli in
            let executable = try #require(builtProduct("freshet"))
            let stored = try await runProcess(executable, ["feed", "ReactiveX/RxSwift", "--limit", "3"], environment: cli.baseEnvironment)
            #expect(stored.status == 0, "\(stored.stderr)")
            var offline = cli.baseEnvironment
            offline["FRESHET_GITHUB_URL"] = try await closedLoopbackURL().absoluteString
            let arguments = ["feed", "ReactiveX/RxSwift", "--watch", "--refresh", "--limit", "3"]
            try await withRunningProcess(executable, arguments, environment: offline) { child in
                let waiting = await eventually { child.stderr.contains("next poll at") }
                #expect(waiting, "\(child.stderr)")
                let warning = try #require(child.stderr.range(of: "warning: refresh failed"), "\(child.stderr)")
                let firstPoll = try #require(child.stderr.range(of: "next poll at"))
                #expect(warning.lowerBound < firstPoll.lowerBound, "the warning comes first: \(child.stderr)")
                #expect(child.firstLine + "\n" + child.stdout == stored.stdout, "the stored feed is shown")
                child.signal(SIGINT)
                #expect(await child.waitForExit(timeout: 10) == 0)
            }
        }
    }
}
