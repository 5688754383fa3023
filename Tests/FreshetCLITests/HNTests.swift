import Foundation
import Freshet
import FreshetSimulator
import FreshetTestSupport
import Testing

/// Reads the simulator's Hacker News as served, without Freshet's models.
private typealias SimHN = RawHackerNews

extension RawHackerNews {
    /// The story among the first `count` of the top list with the most comments.
    func busiestStory(among count: Int = 30) async throws -> (id: Int, kids: [Int], title: String) {
        var best: (id: Int, kids: [Int], title: String, count: Int)?
        for id in try await list("top").prefix(count) {
            guard let object = try await item(id), let kids = object["kids"] as? [Int] else { continue }
            let comments = object["descendants"] as? Int ?? 0
            if comments > best?.count ?? -1 { best = (id, kids, object["title"] as? String ?? "", comments) }
        }
        let found = try #require(best)
        return (found.id, found.kids, found.title)
    }
}

private func jsonArray(_ text: String) throws -> [[String: Any]] {
    try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
}

@Suite("freshet hn, end to end")
struct HNTests {
    @Test("--limit 500 prints the non-null stories in rank order, within the concurrency bound")
    func fullList() async throws {
        try await withFreshetCLI { cli in
            let sim = SimHN(cli.sim)
            let ids = try await sim.list("top")
            #expect(ids.count == 500)
            var shown: [Int] = []
            for id in ids where try await sim.isShown(id) { shown.append(id) }
            let skipped = ids.count - shown.count
            #expect(skipped > 0, "the simulator lists a null job")

            let control = SimControl(cli.sim)
            try await control.setLatency(route: "/v0/item", milliseconds: 5)
            try await control.resetLog()
            let result = try await cli.run("hn", "--limit", "500", "--concurrency", "20", "--json")
            #expect(result.status == 0, "\(result.stderr)")
            let stories = try jsonArray(result.stdout)
            #expect(stories.compactMap { $0["id"] as? Int } == shown)
            #expect(stories.compactMap { $0["rank"] as? Int } == shown.map { ids.firstIndex(of: $0)! + 1 })
            #expect(result.stderr.contains("skipped \(skipped) deleted or dead item"))
            let stats = try await control.stats()
            #expect(stats.requests == 501)
            #expect(stats.maxInFlight <= 20, "bound 20, saw \(stats.maxInFlight)")

            // The text rows: one per story, rank first, in the same order; no progress bar off a TTY.
            let text = try await cli.run("hn", "--limit", "500")
            #expect(text.status == 0)
            let ranks = text.stdout.split(separator: "\n").map { line in
                Int(line.split(separator: " ").first?.dropLast() ?? "") ?? -1
            }
            #expect(ranks == shown.map { ids.firstIndex(of: $0)! + 1 })
            #expect(!text.stderr.contains("/500 stories"))
            #expect(!text.stdout.contains("&amp;") && !text.stdout.contains("&#x27;"), "titles are decoded")
        }
    }

    @Test("A repeat within the freshness window makes zero requests; --refresh asks again")
    func repeatIsFree() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            let first = try await cli.run("hn", "--limit", "30", "--json")
            #expect(first.status == 0, "\(first.stderr)")
            #expect(try await control.log().count == 32, "the list, 30 items and one to replace the null job")

            try await control.resetLog()
            let second = try await cli.run("hn", "--limit", "30", "--json")
            #expect(second.status == 0)
            #expect(second.stdout == first.stdout)
            #expect(try await control.log().isEmpty, "lists are fresh for 60 s, items for 5 min")
            let text = try await cli.run("hn", "--limit", "30")
            #expect(text.status == 0)
            #expect(try await control.log().isEmpty)

            let refreshed = try await cli.run("hn", "--limit", "30", "--refresh", "--json")
            #expect(refreshed.status == 0)
            #expect(refreshed.stdout == first.stdout)
            #expect(try await control.log().count == 32, "the list, 30 items and one to replace the null job")
        }
    }

    @Test("hn item ID prints the story and its whole comment tree, indented two spaces per level, as plain text")
    func itemTree() async throws {
        try await withFreshetCLI { cli in
            let sim = SimHN(cli.sim)
            let story = try await sim.busiestStory()
            let expected = try await sim.thread(story.kids)
            #expect(expected.contains { $0.depth >= 2 })

            let result = try await cli.run("hn", "item", "\(story.id)", "--concurrency", "8")
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(lines.first == story.title.replacingOccurrences(of: "&amp;", with: "&")
                .replacingOccurrences(of: "&#x27;", with: "'"))
            // Comment header lines end in "· id N"; their indentation gives the depth.
            let headers = lines.compactMap { line -> (indent: Int, id: Int)? in
                guard let marker = line.range(of: " · id ", options: .backwards),
                      let id = Int(line[marker.upperBound...]) else { return nil }
                return (line.prefix { $0 == " " }.count, id)
            }
            #expect(headers.map(\.id) == expected.map(\.id))
            #expect(headers.map(\.indent) == expected.map { 2 * ($0.depth + 1) })
            for leftover in ["<p>", "<a ", "</a>", "<i>", "<pre>", "&#x27;", "&quot;", "&#x2F;", "&gt;"] {
                #expect(!result.stdout.contains(leftover), "\(leftover)")
            }

            let json = try await cli.run("hn", "item", "\(story.id)", "--json")
            #expect(json.status == 0)
            let root = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            #expect(root["id"] as? Int == story.id)
            func ids(_ nodes: [[String: Any]]) -> [Int] {
                nodes.flatMap { [$0["id"] as? Int ?? -1] + ids($0["comments"] as? [[String: Any]] ?? []) }
            }
            #expect(ids(root["comments"] as? [[String: Any]] ?? []) == expected.map(\.id))
        }
    }

    @Test("--json: an array of items with upstream field names plus rank")
    func jsonShape() async throws {
        try await withFreshetCLI { cli in
            let result = try await cli.run("hn", "--limit", "12", "--json", "--sort", "score")
            #expect(result.status == 0, "\(result.stderr)")
            let stories = try jsonArray(result.stdout)
            #expect(stories.count == 12, "12 shown: the null job at rank 12 is skipped and rank 13 takes its place")
            #expect(stories.compactMap { $0["rank"] as? Int }.sorted() == Array(1...11) + [13])
            let upstream: Set<String> = [
                "id", "type", "by", "time", "text", "url", "score", "title", "descendants", "kids", "parent",
                "parts", "deleted", "dead", "poll",
            ]
            for story in stories {
                #expect(story["rank"] is Int)
                #expect(story["id"] is Int)
                #expect(story["title"] is String)
                #expect(story["time"] is Int)
                #expect(Set(story.keys).subtracting(upstream) == ["rank"], "\(story.keys.sorted())")
            }
            let scores = stories.compactMap { $0["score"] as? Int }
            #expect(scores == scores.sorted(by: >))
        }
    }

    @Test("--json prints titles decoded, the same text as the rows; `text` stays the HTML the API sends")
    func jsonDecodesTitles() async throws {
        try await withFreshetCLI { cli in
            let sim = SimHN(cli.sim)
            for list in ["top", "ask"] {
                let json = try await cli.run("hn", list, "--limit", "60", "--json")
                #expect(json.status == 0, "\(json.stderr)")
                let rows = try await cli.run("hn", list, "--limit", "60", environment: ["COLUMNS": "400"])
                let lines = rows.stdout.split(separator: "\n").map(String.init)
                var escaped = 0
                var withText = 0
                for story in try jsonArray(json.stdout) {
                    let id = try #require(story["id"] as? Int)
                    let upstream = try #require(try await sim.item(id))
                    let raw = try #require(upstream["title"] as? String)
                    let title = try #require(story["title"] as? String)
                    let decoded = raw.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
                        .replacingOccurrences(of: "&#x27;", with: "'").replacingOccurrences(of: "&amp;", with: "&")
                    #expect(title == decoded, "item \(id): \(raw)")
                    if raw != decoded { escaped += 1 }
                    let rank = try #require(story["rank"] as? Int)
                    let row = lines.first { $0.hasPrefix("\(rank). ") || $0.contains(" \(rank). ") }
                    #expect(row?.contains(title) == true, "row \(rank) shows “\(title)”: \(row ?? "none")")
                    if let text = upstream["text"] as? String {
                        withText += 1
                        #expect(story["text"] as? String == text, "item \(id): text is passed on as HTML")
                    }
                }
                if list == "top" { #expect(escaped > 0, "the simulator escapes some titles") }
                if list == "ask" { #expect(withText > 0, "Ask HN stories have text") }
            }
        }
    }

    @Test("Usage errors exit 1 before any request")
    func usageErrors() async throws {
        try await withFreshetCLI { cli in
            let cases: [([String], String)] = [
                (["hn", "bogus"], "unknown list 'bogus'"),
                (["hn", "--limit", "501"], "--limit must be between 1 and 500"),
                (["hn", "ask", "--limit", "201"], "--limit must be between 1 and 200"),
                (["hn", "--limit", "0"], "--limit"),
                (["hn", "--sort", "votes"], "unknown --sort"),
                (["hn", "--concurrency", "0"], "--concurrency"),
                (["hn", "--concurrency", "101"], "--concurrency"),
                (["hn", "item"], "needs an item ID"),
                (["hn", "item", "-5"], "item"),
                (["hn", "top", "123"], "hn item 123"),
                (["hn", "item", "8863", "--live"], "--live follows a story list"),
                (["hn", "--live", "--interval", "0"], "--interval must be between 1 and 3600"),
            ]
            for (arguments, message) in cases {
                let result = try await cli.run(arguments)
                #expect(result.status == 1, "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
                #expect(result.stdout.isEmpty)
            }
            #expect(try await SimControl(cli.sim).log().isEmpty)
            for list in ["new", "best", "ask", "show", "job"] {
                let result = try await cli.run("hn", list, "--limit", "3")
                #expect(result.status == 0, "\(list): \(result.stderr)")
                #expect(!result.stdout.isEmpty || !result.stderr.isEmpty)
            }
        }
    }

    @Test("Server unreachable and nothing cached: exit 2 with the cause")
    func unreachable() async throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("freshet-hn-offline-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let freshet = try #require(builtProduct("freshet"))
        let dead = try await closedLoopbackURL().absoluteString + "/v0"
        let env = ["FRESHET_HN_URL": dead, "FRESHET_HOME": home.path]
        for arguments in [["hn"], ["hn", "item", "8863"]] {
            let result = try await runProcess(freshet, arguments, environment: env)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains("could not connect"), "\(result.stderr)")
        }
    }

    @Test("A refresh the server fails after a cached run: the stored page with a warning, exit 3 (0 with --allow-stale)")
    func staleAfterFailedRefresh() async throws {
        try await withFreshetCLI { cli in
            let shown = try await cli.run("hn", "--limit", "5", "--json")
            #expect(shown.status == 0)
            let control = SimControl(cli.sim)
            try await control.fault(route: "/v0/", status: 503, times: 1000)
            try await control.resetLog()
            let stale = try await cli.run("hn", "--limit", "5", "--json", "--refresh")
            #expect(stale.status == 3, "\(stale.stderr)")
            #expect(stale.stdout == shown.stdout)
            #expect(stale.stderr.contains("warning: showing stored data"))
            #expect(stale.stderr.contains("HTTP 503"))
            let refresh = try await control.log()
            #expect(!refresh.isEmpty, "the refresh reached the server")
            #expect(refresh.allSatisfy { $0.path.hasPrefix("/v0/") && $0.status == 503 }, "\(refresh.map(\.path))")
            let allowed = try await cli.run("hn", "--limit", "5", "--json", "--refresh", "--allow-stale")
            #expect(allowed.status == 0)
            #expect(allowed.stdout == shown.stdout)
        }
    }

    @Test("An item answering 500 three times is named on stderr and the rest shown (exit 0); an unknown item exits 2")
    func failingAndMissingItems() async throws {
        try await withFreshetCLI { cli in
            let ids = try await SimHN(cli.sim).list("top")
            let victim = ids[2]
            try await SimControl(cli.sim).fault(route: "/v0/item/\(victim).json", status: 500, times: 3)
            let result = try await cli.run("hn", "--limit", "10", "--json")
            #expect(result.status == 0, "\(result.stderr)")
            let stories = try jsonArray(result.stdout)
            #expect(stories.count == 9)
            #expect(!stories.contains { $0["id"] as? Int == victim })
            #expect(result.stderr.contains("could not load item \(victim) (rank 3)"), "\(result.stderr)")
            #expect(result.stderr.contains("HTTP 500"))
            let attempts = try await SimControl(cli.sim).log().filter { $0.path == "/v0/item/\(victim).json" }
            #expect(attempts.count == 3, "retried twice")

            let nullID = try #require(cli.sim.simulator.hackerNewsNullItemIDs().first)
            for id in [nullID, 1] {
                let missing = try await cli.run("hn", "item", "\(id)")
                #expect(missing.status == 2)
                #expect(missing.stderr.contains("item \(id) not found"), "\(missing.stderr)")
                #expect(missing.stdout.isEmpty)
            }
        }
    }
}
