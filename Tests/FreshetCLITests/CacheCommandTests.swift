import Foundation
import FreshetSimulator
import FreshetTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("freshet cache")
struct CacheCommandTests {
    @Test("stats counts responses, bytes and answers; clear empties the store")
    func statsAndClear() async throws {
        try await withFreshetCLI { cli in
            #expect(try await cli.run("feed", "--limit", "5").status == 0)
            #expect(try await cli.run("feed", "--limit", "5").status == 0)
            let stats = try await cli.run("cache", "stats", "--json")
            #expect(stats.status == 0)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any])
            #expect(json["entries"] as? Int == 1)
            #expect((json["bytes"] as? Int ?? 0) > 1000)
            let outcomes = try #require(json["outcomes"] as? [String: Int])
            #expect(outcomes["miss"] == 1)
            #expect(outcomes["hit"] == 1)
            #expect((json["feed_events"] as? Int ?? 0) > 0)
            #expect(FileManager.default.fileExists(atPath: cli.home.appendingPathComponent("freshet.sqlite").path))

            let human = try await cli.run("cache", "stats")
            #expect(human.stdout.contains("HTTP cache  1 response, "), "\(human.stdout)")

            let clear = try await cli.run("cache", "clear", "--json")
            #expect(clear.status == 0)
            let removed = try #require(try JSONSerialization.jsonObject(with: Data(clear.stdout.utf8)) as? [String: Int], "\(clear.stdout)")
            #expect(removed["removed_responses"] == 1)
            #expect((removed["removed_feed_events"] ?? 0) > 0)
            let after = try await cli.run("cache", "stats", "--json")
            let emptied = try #require(try JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [String: Any])
            #expect(emptied["entries"] as? Int == 0)
            #expect(emptied["feed_events"] as? Int == 0)
            #expect(try await cli.run("cache", "clear").stdout == "removed 0 cached responses and 0 stored events\n")
        }
    }

    @Test("cache stats|clear take no request options; --demo reads the demo's store without starting its server")
    func storeOptionsOnly() async throws {
        try await withFreshetCLI { cli in
            for option in ["--refresh", "--allow-stale", "-v", "--transport"] {
                let result = try await cli.run("cache", "stats", option)
                #expect(result.status != 0, "\(option) is refused")
                #expect(result.stderr.contains(option), "\(option): \(result.stderr)")
            }
            // The demo's store, after one demo run. A demo server that started would read
            // FRESHET_DEMO_PORT and refuse this one.
            #expect(try await cli.run("hn", "--demo", "--limit", "2", environment: ["FRESHET_DEMO_PORT": "0"]).status == 0)
            let stats = try await cli.run("cache", "stats", "--demo", "--json", environment: ["FRESHET_DEMO_PORT": "not-a-port"])
            #expect(stats.status == 0, "\(stats.stderr)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any])
            #expect((json["database"] as? String)?.hasSuffix("/demo/freshet.sqlite") == true, "\(stats.stdout)")
            #expect((json["entries"] as? Int ?? 0) >= 3, "the list and two items")
        }
    }

    @Test("Counters kept in memory are exact after every clean exit: hn twice, then the proxy stopped by SIGTERM")
    func batchedCountersAreExactAfterExit() async throws {
        try await withFreshetCLI { cli in
            func outcomes() async throws -> [String: Int] {
                let stats = try await cli.run("cache", "stats", "--json")
                let json = try #require(try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any])
                return try #require(json["outcomes"] as? [String: Int])
            }
            #expect(try await cli.run("hn", "--limit", "20", "--json").status == 0)
            #expect(try await cli.run("hn", "--limit", "20", "--json").status == 0)
            #expect(try await outcomes() == ["miss": 22, "hit": 22],
                    "the list, 20 stories and one in place of the null job at rank 12: each fetched once, then served")

            let control = SimControl(cli.sim)
            try await control.script("counted", headers: [("Cache-Control", "max-age=300")], body: "{}")
            try await withProxy(cli) { child, base in
                var seen: [String?] = []
                for _ in 0..<6 {
                    seen.append(try await curl([base + "/scripted/counted"]).header("X-Cache"))
                }
                #expect(seen == ["MISS"] + Array(repeating: "HIT", count: 5))
                child.signal(SIGTERM)
                #expect(await child.waitForExit(timeout: 30) == 0, "stderr: \(child.stderr)")
            }
            #expect(try await outcomes() == ["miss": 23, "hit": 27])
        }
    }

    @Test("A command folds a grown log into the database as it ends, and leaves a small one for the next start")
    func logFoldedOnceGrown() async throws {
        try await withFreshetCLI { cli in
            let wal = cli.home.appendingPathComponent("freshet.sqlite-wal").path
            func logBytes() -> Int { (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0 }
            // A cold run writes the answer and its events, well past 256 KiB of log: folded.
            #expect(try await cli.run("feed", "--limit", "5").status == 0)
            #expect(logBytes() == 0)
            // A warm one writes LRU stamps and counters, a few pages: left, no checkpoint and no
            // sync at its end, and read by the next start, which then writes nothing to open.
            #expect(try await cli.run("feed", "--limit", "5").status == 0)
            let small = logBytes()
            #expect(small > 0 && small <= 256 * 1024)
            let stats = try await cli.run("cache", "stats", "--json")
            #expect(stats.status == 0)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any])
            #expect(json["outcomes"] as? [String: Int] == ["miss": 1, "hit": 1])
        }
    }

    @Test("Database files are private (0600)")
    func filePermissions() async throws {
        try await withFreshetCLI { cli in
            #expect(try await cli.run("feed", "--limit", "5").status == 0)
            let files = try FileManager.default.contentsOfDirectory(atPath: cli.home.path).filter { $0.hasPrefix("freshet.sqlite") }
            #expect(files.contains("freshet.sqlite"))
            for file in files {
                let attributes = try FileManager.default.attributesOfItem(atPath: cli.home.appendingPathComponent(file).path)
                #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(file)")
            }
        }
    }
}
