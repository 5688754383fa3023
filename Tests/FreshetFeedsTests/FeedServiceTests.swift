import Foundation
import Freshet
import FreshetFeeds
import FreshetSimulator
import FreshetTestSupport
import GitHubAPI
import GRDB
import Testing

/// The apps' context on `home`, against the simulator.
private func context(_ sim: RunningSimulator, home: URL) throws -> AppContext {
    let configuration = try AppConfiguration.from(["FRESHET_HOME": home.path, "FRESHET_GITHUB_URL": sim.baseURL.absoluteString])
    return try AppContext(configuration: configuration, transport: liveTransport)
}

@Suite("Feed service against the simulator")
struct FeedServiceTests {
    @Test("Within freshness, the page merged last is known by its ETag: its stored body is not read")
    func freshMergedPageReadsNothing() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let repository = try #require(RepositoryName("ReactiveX/RxSwift"))
        try await withSimulator { sim in
            let first = try context(sim, home: temporary.url)
            let fetched = try #require(await FeedService(context: first).refresh([repository]).first).get()
            #expect(fetched.merged && fetched.cache == .miss)
            await first.close()

            // A page recorded before ETags were (an older store): a refresh within freshness still
            // reads the stored body, finds the page merged last, and records its ETag.
            let older = try context(sim, home: temporary.url)
            try await older.database.writer.write { db in try db.execute(sql: "UPDATE feed_source SET etag = NULL") }
            let fingerprinted = try #require(await FeedService(context: older).refresh([repository]).first).get()
            #expect(!fingerprinted.merged && fingerprinted.cache == .hit)
            let recorded = try await older.database.writer.read { db in try String.fetchOne(db, sql: "SELECT etag FROM feed_source") }
            #expect(recorded?.contains("\"") == true, "the stored page's entity tag, recorded: \(recorded ?? "none")")
            // The stored body made unreadable: only a refresh that never reads it can succeed.
            try await older.database.writer.write { db in try db.execute(sql: "UPDATE cache_entry SET body = x'00'") }
            await older.close()

            let requestsBefore = try await SimControl(sim).stats().requests
            let again = try context(sim, home: temporary.url)
            let service = FeedService(context: again)
            let results = await service.refresh([repository])
            let refresh = try #require(results.first).get()
            #expect(!refresh.merged && refresh.cache == .hit && refresh.added.isEmpty)
            #expect(refresh.pollInterval == 60, "X-Poll-Interval from the stored head")
            let single = try await service.refresh(repository)
            #expect(!single.merged && single.cache == .hit)
            #expect(try await SimControl(sim).stats().requests == requestsBefore, "no request")
            #expect(await service.stored([repository], limit: 5).count == 5, "the merged events are still there")
            await again.close()
        }
    }
}
