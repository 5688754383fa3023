import Foundation
import FreshetSimulator
import FreshetTestSupport
import Testing

@Suite("news-combine: the News app's Combine pipeline lists what freshet hn lists")
struct NewsCombineTests {
    /// Runs `news-combine` against the test's simulator.
    func newsCombine(_ cli: FreshetCLI, _ arguments: [String]) async throws -> ProcessResult {
        let executable = try #require(builtProduct("news-combine"))
        return try await runProcess(executable, arguments, environment: cli.baseEnvironment.merging(["COLUMNS": "100"]) { _, new in new })
    }

    @Test("The same rows as `freshet hn`, and a JSON array of the same items with their upstream fields")
    func sameStories() async throws {
        // Ages in days, so two runs a moment apart show the same ages.
        try await withFreshetCLI(.init(anchorDate: Date().addingTimeInterval(-3 * 86_400))) { cli in
            for limit in ["30", "12"] {
                let combine = try await newsCombine(cli, ["--limit", limit])
                #expect(combine.status == 0, "\(combine.stderr)")
                let hn = try await cli.run("hn", "--limit", limit, environment: ["COLUMNS": "100"])
                #expect(combine.stdout == hn.stdout, "news-combine:\n\(combine.stdout)\nfreshet hn:\n\(hn.stdout)")
                #expect(!combine.stdout.isEmpty)
            }
            let json = try await newsCombine(cli, ["--limit", "12", "--json"])
            #expect(json.status == 0, "\(json.stderr)")
            let items = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
            let hn = try await cli.run("hn", "--limit", "12", "--json")
            let ranked = try #require(try JSONSerialization.jsonObject(with: Data(hn.stdout.utf8)) as? [[String: Any]])
            #expect(items.compactMap { $0["id"] as? Int } == ranked.compactMap { $0["id"] as? Int })
            #expect(items.count == 12, "12 shown: the null job at rank 12 left out, rank 13 in its place")
            #expect(items.compactMap { $0["title"] as? String } == ranked.compactMap { $0["title"] as? String })
            for item in items { #expect(item["rank"] == nil && item["id"] is Int && item["type"] is String) }
        }
    }

    @Test("A list that cannot be loaded: a clear message, exit 2; a bad --limit: exit 1")
    func failures() async throws {
        try await withFreshetCLI { cli in
            try await SimControl(cli.sim).fault(route: "/v0/topstories.json", status: 404, times: 1)
            let failed = try await newsCombine(cli, [])
            #expect(failed.status == 2)
            #expect(failed.stderr.contains("could not load the top stories"), "\(failed.stderr)")
            let usage = try await newsCombine(cli, ["--limit", "0"])
            #expect(usage.status != 0 && usage.stderr.contains("--limit"))
        }
    }
}
