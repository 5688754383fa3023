import Foundation
import FreshetCache
import GitHubAPI
import GRDB

/// The feed's events, kept per repository in the user's database: de-duplicated by event `id`,
/// newest first by `created_at`, at most ``maxPerRepository`` per repository. Each event is kept
/// twice over: the fields its row shows as columns (``entries(repositories:limit:)`` reads them
/// without decoding anything) and the whole event as JSON, for `--json`
/// (``events(repositories:limit:)``).
///
/// Validators (ETag, Last-Modified) are not kept here: they live with the HTTP cache, per URL.
public struct FeedStore: Sendable {
    /// The most events kept per repository (GitHub serves at most 300).
    public static let maxPerRepository = 300

    /// Registers the migrations that build the store's tables in the app's migrator (see
    /// ``AppDatabase/Schema``).
    public static func registerMigrations(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("feeds-v1") { db in
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
        migrator.registerMigration("feeds-v2") { db in
            // Per repository, the fingerprint of the last events page merged: the same page again
            // (a fresh cache hit, a 304) needs neither decoding nor merging.
            try db.execute(sql: """
                CREATE TABLE feed_source (
                    repo TEXT NOT NULL PRIMARY KEY,
                    fingerprint INTEGER NOT NULL
                );
                """)
        }
        migrator.registerMigration("feeds-v3") { db in
            // The row's fields as columns, filled in from the stored JSON; an event that no longer
            // decodes could not be shown either, and goes.
            try db.execute(sql: """
                ALTER TABLE feed_event ADD COLUMN type TEXT NOT NULL DEFAULT '';
                ALTER TABLE feed_event ADD COLUMN actor TEXT NOT NULL DEFAULT '';
                ALTER TABLE feed_event ADD COLUMN repo_name TEXT NOT NULL DEFAULT '';
                ALTER TABLE feed_event ADD COLUMN activity TEXT NOT NULL DEFAULT '';
                """)
            let rows = try Row.fetchAll(db, sql: "SELECT repo, id, json FROM feed_event")
            for row in rows {
                let (repo, id, json): (String, String, Data) = (row["repo"], row["id"], row["json"])
                if let event = try? GitHub.decoder.decode(GitHubEvent.self, from: json) {
                    let entry = FeedEntry(event)
                    try db.execute(sql: """
                        UPDATE feed_event SET type = ?, actor = ?, repo_name = ?, activity = ? WHERE repo = ? AND id = ?
                        """, arguments: [entry.type.rawValue, entry.actor, entry.repository, entry.activity, repo, id])
                } else {
                    try db.execute(sql: "DELETE FROM feed_event WHERE repo = ? AND id = ?", arguments: [repo, id])
                }
            }
        }
        migrator.registerMigration("feeds-v4") { db in
            // Beside the fingerprint, the ETag of the page merged last: when the HTTP cache holds
            // that page fresh, a refresh need not read its body at all.
            try db.execute(sql: "ALTER TABLE feed_source ADD COLUMN etag TEXT")
        }
    }

    let writer: any DatabaseWriter

    /// A store in the database of `writer`, which has the store's tables.
    public init(writer: any DatabaseWriter) {
        self.writer = writer
    }

    /// The key a repository is stored under: `owner/name`, lowercased (GitHub names are case-insensitive).
    public static func key(_ repository: String) -> String { repository.lowercased() }

    /// The rows of the newest `limit` events of the given repositories, merged, newest first:
    /// read from columns, nothing decoded.
    public func entries(repositories: [String], limit: Int) async throws -> [FeedEntry] {
        // Read by position, in the order selected: GRDB's lookup by name lowercases every column's name.
        try await newest(repositories, limit: limit, columns: "id, type, actor, repo_name, activity, created_at") { row in
            FeedEntry(id: row[0], type: GitHubEvent.Kind(rawValue: row[1]), actor: row[2],
                      repository: row[3], activity: row[4],
                      createdAt: Date(timeIntervalSince1970: row[5]))
        }
    }

    /// The newest `limit` events of the given repositories, merged, newest first, decoded whole
    /// from their stored JSON (for `--json`; a row that no longer decodes is left out).
    public func events(repositories: [String], limit: Int) async throws -> [GitHubEvent] {
        try await newest(repositories, limit: limit, columns: "json") { row in
            try? GitHub.decoder.decode(GitHubEvent.self, from: row[0] as Data)
        }
    }

    /// `columns` of the newest `limit` events of `repositories`, each made into a value by `make`.
    private func newest<T: Sendable>(_ repositories: [String], limit: Int, columns: String, make: @escaping @Sendable (Row) -> T?)
        async throws -> [T]
    {
        let keys = repositories.map(Self.key)
        return try await writer.read { db in
            let rows = try Row.fetchCursor(db, sql: """
                SELECT \(columns) FROM feed_event WHERE repo IN (\(databaseQuestionMarks(count: keys.count)))
                ORDER BY created_at DESC, id DESC LIMIT ?
                """, arguments: StatementArguments(keys) + [max(0, limit)])
            var values: [T] = []
            while let row = try rows.next() {
                if let value = make(row) { values.append(value) }
            }
            return values
        }
    }

    /// Adds `events` to `repository`'s feed, keeping each `id` once and only the newest
    /// ``maxPerRepository``. Returns the events that were not stored before.
    ///
    /// - Parameters:
    ///   - events: the events to add, in any order.
    ///   - repository: the repository as `owner/name`, in any case (stored under ``key(_:)``).
    ///   - fingerprint: the ``fingerprint(_:)`` of the response body `events` were
    ///     decoded from, recorded so that the same body need not be merged again
    ///     (``mergedPages(repositories:)``); `nil` forgets the recorded one.
    ///   - etag: the response's `ETag`, recorded with the fingerprint.
    @discardableResult
    public func merge(_ events: [GitHubEvent], into repository: String, fingerprint: Int64? = nil,
                      etag: String? = nil) async throws -> [GitHubEvent]
    {
        let key = Self.key(repository)
        return try await writer.write { db in
            if let fingerprint {
                try db.execute(sql: """
                    INSERT INTO feed_source (repo, fingerprint, etag) VALUES (?, ?, ?)
                    ON CONFLICT (repo) DO UPDATE SET fingerprint = excluded.fingerprint, etag = excluded.etag
                    """, arguments: [key, fingerprint, etag])
            } else {
                try db.execute(sql: "DELETE FROM feed_source WHERE repo = ?", arguments: [key])
            }
            var added: [GitHubEvent] = []
            for event in events {
                let exists = try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM feed_event WHERE repo = ? AND id = ?", arguments: [key, event.id]) ?? false
                let json = try GitHub.encoder.encode(event)
                let entry = FeedEntry(event)
                try db.execute(sql: """
                    INSERT INTO feed_event (repo, id, created_at, json, type, actor, repo_name, activity)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (repo, id) DO UPDATE SET created_at = excluded.created_at, json = excluded.json,
                        type = excluded.type, actor = excluded.actor, repo_name = excluded.repo_name,
                        activity = excluded.activity
                    """, arguments: [key, event.id, event.createdAt.timeIntervalSince1970, json, entry.type.rawValue,
                                     entry.actor, entry.repository, entry.activity])
                if !exists { added.append(event) }
            }
            try db.execute(sql: """
                DELETE FROM feed_event WHERE repo = ? AND id NOT IN (
                    SELECT id FROM feed_event WHERE repo = ? ORDER BY created_at DESC, id DESC LIMIT ?)
                """, arguments: [key, key, Self.maxPerRepository])
            return added
        }
    }

    /// Records `etag` as the `ETag` of the page merged last into `repository` (which has one).
    public func record(etag: String, for repository: String) async throws {
        try await writer.write { db in
            try db.execute(sql: "UPDATE feed_source SET etag = ? WHERE repo = ?", arguments: [etag, Self.key(repository)])
        }
    }

    /// What ``merge(_:into:fingerprint:etag:)`` recorded of the page merged last.
    public struct MergedPage: Sendable, Equatable {
        /// The ``fingerprint(_:)`` of its body.
        public var fingerprint: Int64
        /// Its `ETag`, when it had one.
        public var etag: String?

        /// A page with `fingerprint` and `etag`.
        public init(fingerprint: Int64, etag: String? = nil) {
            self.fingerprint = fingerprint
            self.etag = etag
        }
    }

    /// The pages recorded by ``merge(_:into:fingerprint:etag:)`` for `repositories`, by
    /// repository as given; a repository without one is missing.
    public func mergedPages(repositories: [String]) async throws -> [String: MergedPage] {
        let keys = repositories.map(Self.key)
        let stored = try await writer.read { db in
            let rows = try Row.fetchAll(
                db, sql: "SELECT repo, fingerprint, etag FROM feed_source WHERE repo IN (\(databaseQuestionMarks(count: keys.count)))",
                arguments: StatementArguments(keys))
            return Dictionary(rows.map { ($0[0] as String, MergedPage(fingerprint: $0[1], etag: $0[2])) }, uniquingKeysWith: { $1 })
        }
        var result: [String: MergedPage] = [:]
        for repository in repositories {
            if let page = stored[Self.key(repository)] { result[repository] = page }
        }
        return result
    }

    /// A 64-bit FNV-1a hash of a response body with its length: equal bodies have equal
    /// fingerprints, and different ones almost surely do not.
    public static func fingerprint(_ body: Data) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        body.withUnsafeBytes { bytes in
            for byte in bytes {
                hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            }
        }
        hash = (hash ^ UInt64(body.count)) &* 0x0000_0100_0000_01b3
        return Int64(bitPattern: hash)
    }

    /// How many events are stored for `repository`.
    public func count(repository: String) async throws -> Int {
        try await writer.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM feed_event WHERE repo = ?", arguments: [Self.key(repository)]) ?? 0
        }
    }

    /// How many events are stored in all.
    public func totalCount() async throws -> Int {
        try await writer.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM feed_event") ?? 0 }
    }

    /// Removes every stored event.
    public func removeAll() async throws {
        try await writer.write { db in
            try db.execute(sql: "DELETE FROM feed_event")
            try db.execute(sql: "DELETE FROM feed_source")
        }
    }
}
