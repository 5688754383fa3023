import Foundation
import FreshetFeeds
import GitHubAPI
import GRDB
import Testing

/// Events of three kinds whose rows differ in every column.
private func sampleEvents() -> [GitHubEvent] {
    let repo = GitHubEvent.Repo(id: 1, name: "apple/swift", url: "https://api.github.com/repos/apple/swift")
    return [
        GitHubEvent(id: "3", type: .release, actor: .init(id: 3, login: "bot", avatarURL: "a"), repo: repo,
                    payload: .init(raw: .object(["action": .string("published"), "release": .object(["tag_name": .string("v6.0")])])),
                    createdAt: Date(timeIntervalSince1970: 1_700_000_300)),
        GitHubEvent(id: "2", type: .watch, actor: .init(id: 2, login: "octocat", displayLogin: "Octo", avatarURL: "a"), repo: repo,
                    createdAt: Date(timeIntervalSince1970: 1_700_000_200)),
        GitHubEvent(id: "1", type: "SponsorshipEvent", actor: .init(id: 1, login: "someone", avatarURL: "a"), repo: repo,
                    createdAt: Date(timeIntervalSince1970: 1_700_000_100)),
    ]
}

@Suite("The feed store: rows from columns, events whole for --json, older databases filled in")
struct FeedStoreTests {
    @Test("Rows are read from columns and equal the events' own; the events come back whole")
    func rowsAndEvents() async throws {
        var migrator = DatabaseMigrator()
        FeedStore.registerMigrations(in: &migrator)
        let queue = try DatabaseQueue()
        try migrator.migrate(queue)
        let store = FeedStore(writer: queue)
        let events = sampleEvents()
        try await store.merge(events.reversed(), into: "Apple/Swift")
        let rows = try await store.entries(repositories: ["apple/swift"], limit: 10)
        #expect(rows == events.map(FeedEntry.init))
        #expect(rows.map(\.actor) == ["bot", "Octo", "someone"])
        #expect(rows.map(\.activity) == ["published release v6.0", "starred", "sponsorship"])
        #expect(try await store.events(repositories: ["apple/swift"], limit: 10) == events)
        #expect(try await store.entries(repositories: ["apple/swift"], limit: 2).map(\.id) == ["3", "2"])
    }

    @Test("A database from before the columns gets them filled in from its JSON; an event that no longer decodes goes")
    func migrationFillsColumns() async throws {
        let queue = try DatabaseQueue()
        // The schema as feeds-v1 and feeds-v2 left it, with two events and one unreadable row.
        var old = DatabaseMigrator()
        old.registerMigration("feeds-v1") { db in
            try db.execute(sql: """
                CREATE TABLE feed_event (repo TEXT NOT NULL, id TEXT NOT NULL, created_at REAL NOT NULL,
                    json BLOB NOT NULL, PRIMARY KEY (repo, id));
                CREATE INDEX feed_event_by_time ON feed_event (repo, created_at DESC);
                """)
        }
        old.registerMigration("feeds-v2") { db in
            try db.execute(sql: "CREATE TABLE feed_source (repo TEXT NOT NULL PRIMARY KEY, fingerprint INTEGER NOT NULL)")
        }
        try old.migrate(queue)
        let events = Array(sampleEvents().prefix(2))
        try await queue.write { db in
            for event in events {
                try db.execute(sql: "INSERT INTO feed_event (repo, id, created_at, json) VALUES (?, ?, ?, ?)",
                               arguments: ["apple/swift", event.id, event.createdAt.timeIntervalSince1970, try GitHub.encoder.encode(event)])
            }
            try db.execute(sql: "INSERT INTO feed_event (repo, id, created_at, json) VALUES ('apple/swift', '9', 1, x'7b')")
        }

        var migrator = DatabaseMigrator()
        FeedStore.registerMigrations(in: &migrator)
        try migrator.migrate(queue)
        let store = FeedStore(writer: queue)
        #expect(try await store.entries(repositories: ["apple/swift"], limit: 10) == events.map(FeedEntry.init))
        #expect(try await store.count(repository: "apple/swift") == 2, "the unreadable row is gone")
    }
}
