import Foundation
import FreshetSimulator
import FreshetTestSupport
import Testing

/// `freshet hn --live --json` against the simulator's Firebase stream: one JSON line each time the
/// shown stories change, through list changes (`patch`), a change below the shown ones (no line),
/// a dropped stream (reconnected, no line: the list is the same) and Ctrl-C (exit 0); and the
/// polling fallback when the server answers plain JSON.
@Suite("freshet hn --live", .timeLimit(.minutes(2)))
struct HNFollowTests {
    /// The ids of each JSON line printed so far.
    static func lines(_ child: RunningProcess) -> [[Int]] {
        ([child.firstLine] + child.stdout.split(separator: "\n").map(String.init)).map(ids)
    }

    static func ids(_ line: String) -> [Int] {
        let stories = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [[String: Any]] ?? []
        return stories.compactMap { $0["id"] as? Int }
    }

    /// The first `count` of `ids` that are shown (not null, deleted or dead).
    static func visible(_ ids: [Int], count: Int, _ cli: FreshetCLI) async throws -> [Int] {
        var shown: [Int] = []
        for id in ids where shown.count < count {
            if try await RawHackerNews(cli.sim).isShown(id) { shown.append(id) }
        }
        return shown
    }

    static func start(_ cli: FreshetCLI, _ arguments: [String], _ body: (RunningProcess) async throws -> Void) async throws {
        let executable = try #require(builtProduct("freshet"))
        let environment = cli.baseEnvironment.merging(cli.environment) { _, new in new }
        try await withRunningProcess(executable, arguments, environment: environment, timeout: 60, body)
    }

    @Test("Lines follow put, patch and a dropped stream; each story is fetched once; Ctrl-C exits 0")
    func followsTheStream() async throws {
        try await withFreshetCLI { cli in
            let simulator = cli.sim.simulator
            // Lists of visible stories only, so what is shown is what was set.
            let top = try await Self.visible(RawHackerNews(cli.sim).list("top"), count: 6, cli)
            let fresh = try await Self.visible(RawHackerNews(cli.sim).list("new").filter { !top.contains($0) }, count: 2, cli)
            #expect(simulator.setHackerNewsList("topstories", ids: top))
            await simulator.resetLog()
            try await Self.start(cli, ["hn", "--live", "--json", "--limit", "3"]) { child in
                #expect(Self.ids(child.firstLine) == Array(top.prefix(3)), "the first line is the list as the stream's put gave it")

                // A new story slides in on top: a patch of every position.
                #expect(simulator.setHackerNewsList("topstories", ids: [fresh[0]] + top))
                let second = await eventually { Self.lines(child).count == 2 }
                #expect(second, "a second line after the patch: \(child.stdout)")
                #expect(Self.lines(child).last == [fresh[0], top[0], top[1]])

                // A change below the shown stories prints nothing; the next visible change does.
                #expect(simulator.setHackerNewsList("topstories", ids: [fresh[0], top[0], top[1], fresh[1]] + top.dropFirst(2)))
                #expect(simulator.setHackerNewsList("topstories", ids: [top[0], fresh[0], top[1], fresh[1]] + top.dropFirst(2)))
                let third = await eventually { Self.lines(child).count == 3 }
                #expect(third, "\(child.stdout)")
                #expect(Self.lines(child).last == [top[0], fresh[0], top[1]], "ranks moved")

                // The stream drops: the client reconnects, the new put carries the same list, no line.
                let before = await simulator.requestLog().count { $0.path.hasPrefix("/v0/topstories.json?ns=") }
                simulator.dropHackerNewsStreams()
                let reconnected = await eventually {
                    await simulator.requestLog().count { $0.path.hasPrefix("/v0/topstories.json?ns=") } == before + 1
                        && simulator.openHackerNewsStreams() == 1
                }
                #expect(reconnected, "\(child.stderr)")
                #expect(simulator.setHackerNewsList("topstories", ids: [fresh[1], top[0]] + top.dropFirst(1)))
                let fourth = await eventually { Self.lines(child).count == 4 }
                #expect(fourth, "\(child.stdout)")
                #expect(Self.lines(child) == [Array(top.prefix(3)), [fresh[0], top[0], top[1]], [top[0], fresh[0], top[1]],
                                              [fresh[1], top[0], top[1]]])
                #expect(child.stderr.contains("reconnecting in"), "\(child.stderr)")

                let items = await simulator.requestLog().filter { $0.path.hasPrefix("/v0/item/") }.map(\.path)
                #expect(items.count == Set(items).count, "each story fetched once: \(items)")

                child.signal(SIGINT)
                #expect(await child.waitForExit() == 0)
                #expect(child.stderr.contains("stopped following the top list."))
            }
        }
    }

    @Test("A server that answers plain JSON is polled every --interval seconds, with the same lines")
    func pollsWithoutAStream() async throws {
        var configuration = SimulatorConfiguration()
        configuration.hnStreams = false
        try await withFreshetCLI(configuration) { cli in
            let simulator = cli.sim.simulator
            let top = try await Self.visible(RawHackerNews(cli.sim).list("top"), count: 4, cli)
            #expect(simulator.setHackerNewsList("topstories", ids: top))
            try await Self.start(cli, ["hn", "--live", "--json", "--limit", "2", "--interval", "1"]) { child in
                #expect(Self.ids(child.firstLine) == Array(top.prefix(2)))
                #expect(simulator.setHackerNewsList("topstories", ids: [top[1], top[0]] + top.dropFirst(2)))
                let second = await eventually(within: 20) { Self.lines(child).count == 2 }
                #expect(second, "\(child.stdout)")
                #expect(Self.lines(child).last == [top[1], top[0]])
                #expect(child.stderr.contains("polling every 1s"), "\(child.stderr)")
                child.signal(SIGTERM)
                #expect(await child.waitForExit() == 0)
            }
        }
    }
}
