import Foundation
import FreshetCache
import GitHubAPI
import GRDB

/// The feed's events, kept per repository in the user's database: de-duplicated by event `id`,
/// newest first by `created_at`, at most ``maxPerRepository`` per repository.
///
/// Validators (ETag, Last-Modified) are not kept here: they live with the HTTP cache, per URL.
public struct FeedStore: Sendable {
    /// The most events kept per repository (GitHub serves at most 300).
    public static let maxPerRepository = 300

    /// The database migrations the store needs (registered when the database opens).
    public static let migrations: [FreshetDatabase.Migration] = [
        .init(name: "feeds-v1") { db in
            try db.execute(sql: """
                CREATE TABLE feed_event (
                    repo TEXT NOT NULL,
                    id TEXT NOT NULL,
                    created_at REAL NOT NULL,
                    json BLOB NOT NULL,
                    PRIMARY KEY (repo, id)
                );
                CREATE INDEX feed_event_by_time ON feed_event (repo, created_at DESC);
                """)
        }
    ]

    let database: FreshetDatabase

    /// A store in `database`.
    public init(database: FreshetDatabase) {
        self.database = database
    }

    /// The key a repository is stored under: `owner/name`, lowercased (GitHub names are case-insensitive).
    public static func key(_ repository: String) -> String { repository.lowercased() }

    /// The newest `limit` events of the given repositories, merged, newest first.
    public func events(repositories: [String], limit: Int) async throws -> [GitHubEvent] {
        let keys = repositories.map(Self.key)
        return try await database.pool.read { db in
            let marks = databaseQuestionMarks(count: keys.count)
            let rows = try Row.fetchAll(db, sql: """
                SELECT json FROM feed_event WHERE repo IN (\(marks))
                ORDER BY created_at DESC, id DESC LIMIT ?
                """, arguments: StatementArguments(keys) + [max(0, limit)])
            return rows.compactMap { row -> GitHubEvent? in
                let data: Data = row["json"]
                return try? GitHub.decoder.decode(GitHubEvent.self, from: data)
            }
        }
    }

    /// Adds `events` to `repository`'s feed, keeping each `id` once and only the newest
    /// ``maxPerRepository``. Returns the events that were not stored before.
    @discardableResult
    public func merge(_ events: [GitHubEvent], into repository: String) async throws -> [GitHubEvent] {
        let key = Self.key(repository)
        return try await database.pool.write { db in
            var added: [GitHubEvent] = []
            for event in events {
                let exists = try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM feed_event WHERE repo = ? AND id = ?", arguments: [key, event.id]) ?? false
                let json = try GitHub.encoder.encode(event)
                try db.execute(sql: """
                    INSERT INTO feed_event (repo, id, created_at, json) VALUES (?, ?, ?, ?)
                    ON CONFLICT (repo, id) DO UPDATE SET created_at = excluded.created_at, json = excluded.json
                    """, arguments: [key, event.id, event.createdAt.timeIntervalSince1970, json])
                if !exists { added.append(event) }
            }
            try db.execute(sql: """
                DELETE FROM feed_event WHERE repo = ? AND id NOT IN (
                    SELECT id FROM feed_event WHERE repo = ? ORDER BY created_at DESC, id DESC LIMIT ?)
                """, arguments: [key, key, Self.maxPerRepository])
            return added
        }
    }

    /// How many events are stored for `repository`.
    public func count(repository: String) async throws -> Int {
        try await database.pool.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM feed_event WHERE repo = ?", arguments: [Self.key(repository)]) ?? 0
        }
    }

    /// How many events are stored in all.
    public func totalCount() async throws -> Int {
        try await database.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM feed_event") ?? 0 }
    }

    /// Removes every stored event.
    public func removeAll() async throws {
        try await database.pool.write { db in try db.execute(sql: "DELETE FROM feed_event") }
    }
}
