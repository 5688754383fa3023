import Foundation
import Freshet
import FreshetFeeds
import FreshetSimulator
import FreshetTestSupport
import HackerNewsAPI
import Testing

/// A Hacker News client on the simulator with the standard retry policy, whose waits are
/// recorded instead of slept.
private func hnClient(_ sim: RunningSimulator, sleeps: SleepRecorder = SleepRecorder()) -> APIClient {
    APIClient(baseURL: sim.baseURL.appendingPathComponent("v0"), transport: liveTransport,
              middlewares: [RetryMiddleware(sleep: sleeps.sleep)])
}

/// Reads the simulator without any Freshet model: the JSON as served (`nil` for `null`).
private typealias RawHN = RawHackerNews

extension RawHackerNews {
    /// Every ID in the tree below `kids` (whatever its state).
    func allDescendants(_ kids: [Int]) async throws -> [Int] {
        var out: [Int] = []
        for kid in kids {
            out.append(kid)
            out += try await allDescendants(try await item(kid)?["kids"] as? [Int] ?? [])
        }
        return out
    }
}

@Suite("Story loader and comment trees against the simulator")
struct StoryLoaderTests {
    @Test("The fan-out runs exactly the bound at once, never more, and reports progress for every item")
    func boundHonoured() async throws {
        try await withSimulator { sim in
            let control = SimControl(sim)
            try await control.resetLog()
            // Items are held at the server: the loader fills its eight slots and waits there.
            try await control.hold(route: "/v0/item")
            let loader = StoryLoader(client: hnClient(sim), concurrency: 8)
            let loading = Task { () async throws -> (StoryPage, [LoadProgress]) in
                var seen: [LoadProgress] = []
                let page = try await loader.load(.top, limit: 100) { seen.append($0) }
                return (page, seen)
            }
            let full = try await eventually { try await control.stats().inFlight == 8 }
            #expect(full, "eight items held at once")
            try await control.release(route: "/v0/item")
            let (page, seen) = try await loading.value
            let stats = try await control.stats()
            let requested = page.ids.count
            #expect(requested == 100 + page.skipped.count, "a replacement for each skipped item")
            #expect(stats.requests == requested + 1, "the list and one request per item")
            #expect(stats.maxInFlight == 8, "bound 8, saw \(stats.maxInFlight)")
            #expect(seen.map(\.completed) == Array(1...requested))
            #expect(seen.first?.total == 100 && seen.last?.total == requested)
            #expect(page.stories.count == 100, "--limit counts the stories shown")
            #expect(page.failures.isEmpty)
        }
    }

    @Test("Null, deleted and dead items are skipped and counted", arguments: ["top", "new"])
    func skipsNullDeletedDead(list: String) async throws {
        try await withSimulator { sim in
            let raw = RawHN(sim)
            let ids = Array(try await raw.list(list).prefix(500))
            var expectedSkipped: [Int] = []
            for id in ids where try await raw.isSkipped(id) { expectedSkipped.append(id) }
            #expect(!expectedSkipped.isEmpty, "the simulator's \(list) list has items to skip")
            if list == "top" {
                #expect(Set(expectedSkipped).isSubset(of: sim.simulator.hackerNewsNullItemIDs()))
            }

            let storyList = try #require(HackerNews.StoryList(rawValue: list))
            let page = try await StoryLoader(client: hnClient(sim)).load(storyList, limit: 500)
            #expect(page.skipped == expectedSkipped)
            #expect(page.stories.map(\.id) == ids.filter { !expectedSkipped.contains($0) })
            #expect(page.stories.allSatisfy { $0.item.isVisible })
            #expect(page.failures.isEmpty)
        }
    }

    @Test("Stories keep the list's rank; --sort score and time reorder them, ties in rank order")
    func rankOrder() async throws {
        try await withSimulator { sim in
            let ids = try await RawHN(sim).list("top")
            let loader = StoryLoader(client: hnClient(sim), concurrency: 16)
            let page = try await loader.load(.top, limit: 60)
            #expect(!page.skipped.isEmpty, "the first 60 hold items to skip")
            #expect(page.stories.count == 60, "each skipped item is replaced by the next of the list")
            #expect(page.ids == Array(ids.prefix(60 + page.skipped.count)))
            #expect(page.stories.map(\.rank) == page.stories.map(\.rank).sorted())
            for story in page.stories {
                #expect(ids[story.rank - 1] == story.id, "rank is the position in the list")
            }

            let byScore = try await loader.load(.top, limit: 60, sort: .score)
            #expect(Set(byScore.stories.map(\.id)) == Set(page.stories.map(\.id)))
            for (a, b) in zip(byScore.stories, byScore.stories.dropFirst()) {
                let (sa, sb) = (a.item.score ?? 0, b.item.score ?? 0)
                #expect(sa > sb || (sa == sb && a.rank < b.rank))
            }
            let byTime = try await loader.load(.top, limit: 60, sort: .time)
            for (a, b) in zip(byTime.stories, byTime.stories.dropFirst()) {
                let (ta, tb) = (a.item.time ?? 0, b.item.time ?? 0)
                #expect(ta > tb || (ta == tb && a.rank < b.rank))
            }
            #expect(byTime.stories.map(\.id) != byScore.stories.map(\.id))
        }
    }

    @Test("One item answering 500 three times is reported after the retries; the rest are returned")
    func failingItemIsReported() async throws {
        try await withSimulator { sim in
            let control = SimControl(sim)
            let ids = try await RawHN(sim).list("top")
            let victim = ids[3]
            try await control.fault(route: "/v0/item/\(victim).json", status: 500, times: 3)
            try await control.resetLog()
            let sleeps = SleepRecorder()
            let page = try await StoryLoader(client: hnClient(sim, sleeps: sleeps)).load(.top, limit: 30)

            #expect(page.failures.count == 1)
            let failure = try #require(page.failures.first)
            #expect(failure.id == victim)
            #expect(failure.rank == 4)
            guard case .httpStatus(500, _, _, _) = failure.error else {
                Issue.record("expected HTTP 500, got \(failure.error)")
                return
            }
            #expect(!page.stories.contains { $0.id == victim })
            #expect(page.stories.count == 29, "30 shown but the failed one (skipped items are replaced, failed ones named)")
            #expect(sleeps.sleeps.count == 2, "three attempts, two waits")
            let attempts = try await control.log().filter { $0.path == "/v0/item/\(victim).json" }
            #expect(attempts.map(\.status) == [500, 500, 500])
        }
    }

    @Test("The comment tree is complete: every reply the simulator has, in ranked order, level by level within the bound")
    func commentTreeComplete() async throws {
        try await withSimulator { sim in
            let raw = RawHN(sim)
            let control = SimControl(sim)
            // The story with the most comments among the first 30.
            var best: (id: Int, kids: [Int], count: Int)?
            for id in try await raw.list("top").prefix(30) {
                guard let object = try await raw.item(id), let kids = object["kids"] as? [Int] else { continue }
                let count = object["descendants"] as? Int ?? 0
                if count > best?.count ?? -1 { best = (id, kids, count) }
            }
            let story = try #require(best)
            let expected = try await raw.thread(story.kids)
            let everything = try await raw.allDescendants(story.kids)
            #expect(expected.contains { $0.depth >= 2 }, "the tree has nested replies")

            try await control.setLatency(route: "/v0/item", milliseconds: 10)
            try await control.resetLog()
            let loader = CommentTreeLoader(client: hnClient(sim), concurrency: 4)
            var last: LoadProgress?
            let thread = try #require(try await loader.load(id: story.id) { last = $0 })
            let stats = try await control.stats()

            #expect(thread.root.id == story.id)
            #expect(thread.flattened.map(\.id) == expected.map(\.id))
            #expect(thread.flattened.map(\.depth) == expected.map(\.depth))
            #expect(thread.failures.isEmpty)
            #expect(Set(thread.skipped).union(expected.map(\.id)) == Set(everything))
            #expect(stats.requests == everything.count + 1, "each item fetched once")
            #expect(stats.maxInFlight <= 4, "bound 4, saw \(stats.maxInFlight)")
            #expect(last?.completed == everything.count)
            for node in thread.flattened {
                #expect(node.children.allSatisfy { $0.depth == node.depth + 1 })
                #expect(node.item.isVisible || !node.children.isEmpty, "hidden comments stay only as parents")
            }
            // Visible comments carry text; the simulator's HTML renders without tags or entities.
            let text = thread.flattened.filter(\.item.isVisible).compactMap(\.item.text).map(HTMLText.plainText)
                .joined(separator: "\n")
            #expect(!text.isEmpty)
            for leftover in ["<p>", "<a ", "</a>", "<i>", "&#x27;", "&quot;", "&#x2F;", "&gt;"] {
                #expect(!text.contains(leftover), "\(leftover)")
            }
        }
    }

    @Test("An ID the API answers with null is no thread")
    func nullRoot() async throws {
        try await withSimulator { sim in
            let id = try #require(sim.simulator.hackerNewsNullItemIDs().first)
            #expect(try await CommentTreeLoader(client: hnClient(sim)).load(id: id) == nil)
            #expect(try await CommentTreeLoader(client: hnClient(sim)).load(id: 1) == nil)
        }
    }

    @Test("A list that cannot be fetched throws; nothing is guessed")
    func listFailureThrows() async throws {
        let dead = try await closedLoopbackURL()
        let client = APIClient(baseURL: dead.appendingPathComponent("v0"), transport: liveTransport)
        await #expect(throws: APIError.self) {
            _ = try await StoryLoader(client: client).load(.top, limit: 5)
        }
    }
}

@Suite("Story and comment rendering helpers")
struct StoryFormattingTests {
    @Test("JSON: the upstream field names plus rank (and comments for a thread)")
    func jsonShape() throws {
        let story = RankedStory(rank: 7, item: HNItem(
            id: 8863, type: .story, by: "dhouston", time: 1_175_714_200, url: "http://www.getdropbox.com/u/2/screencast.html",
            score: 104, title: "My YC app: Dropbox", descendants: 71, kids: [9224]))
        let object = try #require(try JSONSerialization.jsonObject(with: HackerNews.encoder.encode([story])) as? [[String: Any]])
        #expect(Set(object[0].keys) == ["id", "type", "by", "time", "url", "score", "title", "descendants", "kids", "rank"])
        #expect(object[0]["rank"] as? Int == 7)
        #expect(object[0]["id"] as? Int == 8863)
        #expect(story.domain == "getdropbox.com")

        let node = CommentNode(item: HNItem(id: 9224, type: .comment, by: "pg", parent: 8863), depth: 0,
                               children: [CommentNode(item: HNItem(id: 9300, type: .comment, parent: 9224), depth: 1)])
        let tree = try #require(try JSONSerialization.jsonObject(with: HackerNews.encoder.encode(node)) as? [String: Any])
        #expect(tree["by"] as? String == "pg")
        let replies = try #require(tree["comments"] as? [[String: Any]])
        #expect(replies.map { $0["id"] as? Int } == [9300])
    }

    @Test("Domains: host without www., self for text posts, empty for bare records")
    func domains() {
        #expect(StoryDomain.of(HNItem(id: 1, url: "https://www.nytimes.com/2025/1/1/x.html")) == "nytimes.com")
        #expect(StoryDomain.of(HNItem(id: 1, url: "https://blog.swift.org/a")) == "blog.swift.org")
        #expect(StoryDomain.of(HNItem(id: 1, text: "Ask HN body")) == "self")
        #expect(StoryDomain.of(HNItem(id: 1, type: .story, time: 2)) == "")
    }

    @Test("Domains read off the text agree with URLComponents", arguments: [
        "https://WWW.Example.COM:8443/a?b#c", "http://example.com", "http://example.com?x=1", "https://user:pw@example.com/x",
        "https://[::1]:8080/x", "https://ex%41mple.com/", "ftp://example.com/x", "https://münchen.de/x", "https://a_b.example/",
        "not a url", "https://", "https:///path",
    ])
    func plainDomains(url: String) {
        let parsed = URLComponents(string: url)?.host?.lowercased() ?? ""
        let expected = parsed.hasPrefix("www.") ? String(parsed.dropFirst(4)) : parsed
        #expect(StoryDomain.of(HNItem(id: 1, url: url)) == expected)
    }

    @Test("Sorting is stable: equal scores and times keep rank order")
    func stableSort() {
        let stories = [
            RankedStory(rank: 3, item: HNItem(id: 3, time: 10, score: 5)),
            RankedStory(rank: 1, item: HNItem(id: 1, time: 10, score: 5)),
            RankedStory(rank: 2, item: HNItem(id: 2, time: 20, score: 9)),
        ]
        #expect(StoryLoader.Sort.rank.apply(stories).map(\.rank) == [1, 2, 3])
        #expect(StoryLoader.Sort.score.apply(stories).map(\.rank) == [2, 1, 3])
        #expect(StoryLoader.Sort.time.apply(stories).map(\.rank) == [2, 1, 3])
    }
}
