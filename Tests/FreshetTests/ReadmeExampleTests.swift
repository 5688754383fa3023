// README.md's library example, verbatim from here to the end marker: `ReadmeExampleTests`
// checks that the README says exactly this and runs it against the simulator.
import Foundation
import Freshet
import FreshetCache
import FreshetTransports
import GitHubAPI
import GRDB
import HackerNewsAPI

/// An app keeps the defaults (GitHub's and Hacker News's own origins); a test passes a simulator's.
func libraryTour(gitHub: URL = GitHub.defaultBaseURL, hackerNews: URL = HackerNews.defaultBaseURL,
                 databasePath: String = "app.sqlite") async throws {
    // The app owns its database (a GRDB DatabasePool, WAL); the cache registers its own tables in it.
    let database = try DatabasePool(path: databasePath)
    try SQLiteCacheStore.migrate(database)
    let cache = CacheMiddleware(store: SQLiteCacheStore(writer: database))

    let github = APIClient.live(baseURL: gitHub, middlewares: Middlewares.standard(innermost: [cache]))
    let user = try await github.value(GitHub.user(login: "octocat"))          // async/await, typed APIError
    print(user.login, user.publicRepos)
    let events = try await github.send(GitHub.repoEvents(owner: "ReactiveX", name: "RxSwift"))
    print(events.value.count, events.cache as Any)                            // hit, revalidated, miss, stale
    for try await page in github.pages(GitHub.repoEvents(owner: "apple", name: "swift", perPage: 100)) {
        print(page.value.count)                                               // follows Link: rel="next"
    }

    let hn = APIClient.live(baseURL: hackerNews, middlewares: Middlewares.standard(innermost: [cache]))
    let ids = try await hn.value(HackerNews.stories(.top))
    for await item in hn.fanOut(ids.prefix(100).map { HackerNews.item(id: $0) }, maxConcurrent: 32) {
        // completion order; at most 32 requests in flight; one failure never ends the stream
        if case .success(let story) = item.result { print(item.offset, story.value?.title ?? "") }
    }
    try await cache.store.flush()                                             // queued writes reach the disk
}
// End of the README's example.

import FreshetSimulator
import FreshetTestSupport
import Testing

@Suite("The README's library example")
struct ReadmeExampleTests {
    /// The lines of this file from the first import to the end marker.
    static func exampleInThisFile() throws -> String {
        let source = try String(contentsOfFile: #filePath, encoding: .utf8)
        let lines = source.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.hasPrefix("import ") })
        let end = try #require(lines.firstIndex { $0 == "// End of the README's example." })
        return lines[start..<end].joined(separator: "\n")
    }

    /// The first ```swift block under "## The library" in README.md.
    static func exampleInReadme() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appending(path: "README.md"), encoding: .utf8)
        let section = try #require(readme.range(of: "\n## The library\n"))
        let rest = readme[section.upperBound...]
        let open = try #require(rest.range(of: "```swift\n"))
        let close = try #require(rest[open.upperBound...].range(of: "\n```\n"))
        return String(rest[open.upperBound..<close.lowerBound])
    }

    @Test("README.md shows exactly the code this test runs")
    func readmeMatches() throws {
        #expect(try Self.exampleInReadme() == Self.exampleInThisFile())
    }

    @Test("the example runs against the simulator: GitHub and Hacker News through one cache in the app's database")
    func runsAgainstTheSimulator() async throws {
        try await withSimulator { sim in
            let folder = try StoreTemporaryDirectory()
            defer { folder.remove() }
            let path = folder.url.appending(path: "app.sqlite").path
            try await libraryTour(gitHub: sim.baseURL, hackerNews: sim.baseURL.appending(path: "v0"), databasePath: path)

            let log = await sim.simulator.requestLog().map(\.path)
            #expect(log.contains("/users/octocat"))
            #expect(log.contains { $0.hasPrefix("/repos/ReactiveX/RxSwift/events") })
            #expect(log.filter { $0.hasPrefix("/repos/apple/swift/events") }.count >= 2)   // more than one page
            #expect(log.contains("/v0/topstories.json"))
            #expect(log.filter { $0.hasPrefix("/v0/item/") }.count == 100)

            // Every response was stored in the app's file: user, two feeds' pages, the list, the items.
            let store = SQLiteCacheStore(writer: try DatabaseQueue(path: path))
            #expect(try await store.stats().entries > 100)
        }
    }
}
