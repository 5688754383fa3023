import Foundation
import FreshetSimulator
import FreshetTestSupport
import Testing

@Suite("freshet hn on a terminal: the list fills in live (tmux)", .enabled(if: tmuxPath != nil && python3Path != nil, "needs tmux and python3 on PATH (.ci/run installs both)"),
       .timeLimit(.minutes(2)))
struct HNLiveTests {
    @Test("Rows appear in their places under the progress line while an item is held; the final screen is the piped list")
    func fillsInLive() async throws {
        // Ages in days, so the list printed later shows the same ages as the screen.
        let configuration = SimulatorConfiguration(anchorDate: Date().addingTimeInterval(-3 * 86_400))
        try await withFreshetCLI(configuration) { cli in
            let ids = try await RawHackerNews(cli.sim).list("top")
            let control = SimControl(cli.sim)
            // Hold the 4th story: every other one lands, it waits until released.
            let held = "/v0/item/\(ids[3]).json"
            try await control.hold(route: held)
            try await withTmux { tmux in
                try await tmux.start(cli, ["hn", "--limit", "8"])
                let partial = try await tmux.waitFor("7/8 stories")
                let during = try await tmux.screen()
                #expect(partial, "the progress line counts the landed items: \(during)")
                let rows = during.split(separator: "\n").map(String.init)
                let progress = try #require(rows.firstIndex { $0.contains("7/8 stories") })
                let ranks = rows[(progress + 1)...].compactMap { Int($0.split(separator: " ").first?.dropLast() ?? "") }
                #expect(ranks == [1, 2, 3, 5, 6, 7, 8], "the landed rows in rank order, under the progress line: \(during)")

                try await control.release(route: held)
                #expect(try await tmux.waitFor("exit=0"))
                let final = try await tmux.screen().split(separator: "\n").map(String.init)
                let start = try #require(final.firstIndex(of: "BEFORE-UI"))
                let end = try #require(final.firstIndex(of: "exit=0"))
                let shown = Array(final[(start + 1)..<end])
                #expect(!shown.contains { $0.contains("stories") && $0.contains("[") }, "no progress line left: \(shown)")

                let piped = try await cli.run("hn", "--limit", "8", environment: ["COLUMNS": "100"])
                #expect(piped.status == 0)
                let pipedLines = piped.stdout.split(separator: "\n").map(String.init)
                #expect(pipedLines.count == 8)
                #expect(shown == pipedLines, "the final screen is the piped list: \(shown)")
            }
        }
    }
}
