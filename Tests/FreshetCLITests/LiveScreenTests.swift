import Foundation
import FreshetSimulator
import FreshetTestSupport
import Testing

/// `hn --live` and `feed --watch` on a real terminal (tmux, 100×24): the status line over the
/// rows, redrawn in place as the stream or the polls change them, never more than fits.
@Suite("Live screens in a pseudo-terminal (tmux)", .enabled(if: tmuxPath != nil && python3Path != nil, "needs tmux and python3 on PATH (.ci/run installs both)"),
       .timeLimit(.minutes(2)))
struct LiveScreenTests {
    /// The rows between the shell's `BEFORE-UI` marker and the end of the screen, trailing blanks dropped.
    static func rows(_ screen: String) -> [String] {
        var rows = screen.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if let start = rows.firstIndex(of: "BEFORE-UI") { rows = Array(rows[(start + 1)...]) }
        while rows.last?.trimmingCharacters(in: .whitespaces).isEmpty == true { rows.removeLast() }
        return rows
    }

    @Test("hn --live: a new story slides in on top, a held reconnection says so, Ctrl-C leaves the list (exit 0)")
    func hnLive() async throws {
        try await withFreshetCLI { cli in
            let simulator = cli.sim.simulator
            let raw = RawHackerNews(cli.sim)
            var shown: [Int] = []
            for id in try await raw.list("top") where shown.count < 5 {
                if try await raw.isShown(id) { shown.append(id) }
            }
            let top = shown
            var newcomer: (id: Int, title: String)?
            for id in try await raw.list("new") where newcomer == nil && !top.contains(id) {
                if let item = try await raw.item(id), try await raw.isShown(id), let title = item["title"] as? String {
                    newcomer = (id, title)
                }
            }
            let fresh = try #require(newcomer)
            #expect(simulator.setHackerNewsList("topstories", ids: top))
            try await withTmux { tmux in
                try await tmux.start(cli, ["hn", "--live", "--limit", "4"])
                #expect(try await tmux.waitFor("● live · top stories · updated"))
                let first = Self.rows(try await tmux.screen())
                #expect(first.first?.hasPrefix("● live · top stories · updated") == true, "\(first)")
                #expect(first.dropFirst().map { $0.split(separator: " ").first.map(String.init) } == ["1.", "2.", "3.", "4."], "\(first)")

                #expect(simulator.setHackerNewsList("topstories", ids: [fresh.id] + top))
                #expect(try await tmux.waitFor(String(fresh.title.prefix(30))))
                let moved = Self.rows(try await tmux.screen())
                #expect(moved.count == 5, "the status line and four stories, redrawn in place: \(moved)")
                #expect(moved.dropFirst().first?.contains(String(fresh.title.prefix(30))) == true, "\(moved)")

                // The reconnection is held at the server: the status line says so until it is let through.
                await simulator.hold(route: "/v0/topstories.json")
                simulator.dropHackerNewsStreams()
                #expect(try await tmux.waitFor("reconnecting to the top stories stream"))
                await simulator.release(route: "/v0/topstories.json")
                #expect(try await tmux.waitFor("● live · top stories"))

                // Ctrl-C, to the process alone: the key would interrupt the test's wrapping shell too.
                #expect(kill(try #require(try tmux.pid()), SIGINT) == 0)
                #expect(try await tmux.waitFor("exit=0"))
                let final = Self.rows(try await tmux.screen())
                #expect(!final.contains { $0.contains("● live") }, "the status line is gone: \(final)")
                #expect(final.contains { $0.contains(String(fresh.title.prefix(30))) }, "the list stays: \(final)")
            }
        }
    }

    @Test("feed --watch: a list longer than the screen is drawn in the rows that fit, under the status line, and redrawn there")
    func feedWatchLongList() async throws {
        var configuration = SimulatorConfiguration()
        configuration.pollInterval = 1
        try await withFreshetCLI(configuration) { cli in
            try await withTmux { tmux in
                try await tmux.start(cli, ["feed", "ReactiveX/RxSwift", "--watch", "--limit", "60"])
                #expect(try await tmux.waitFor("next poll at"))
                let before = Self.rows(try await tmux.screen())
                #expect(await cli.sim.simulator.addEvents(repo: "ReactiveX/RxSwift", count: 3))
                let changed = try await eventually(within: 20) { Self.rows(try await tmux.screen()).dropFirst() != before.dropFirst() }
                #expect(changed, "the new events were drawn: \(before)")
                let after = Self.rows(try await tmux.screen())
                #expect(after.count <= 23, "no more rows than fit over the cursor: \(after.count)")
                #expect(after.first?.contains("next poll at") == true, "the status line stays on top: \(after)")
                // The rows are the newest events, in order: the first of what a pipe gets.
                let piped = try await cli.run("feed", "ReactiveX/RxSwift", "--limit", "60", environment: ["COLUMNS": "100"])
                let pipedRows = piped.stdout.split(separator: "\n").map(String.init)
                let expected = Array(pipedRows.prefix(after.count - 1))
                #expect(Array(after.dropFirst()) == expected, "\(after)")
                #expect(kill(try #require(try tmux.pid()), SIGINT) == 0)
                #expect(try await tmux.waitFor("exit=0"))
            }
        }
    }
}
