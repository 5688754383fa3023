import Foundation
import Freshet
import GRDB
import HTTPTypes

/// A ``CacheStore`` kept in the user's ``FreshetDatabase``, shared by every process that opens it.
///
/// Responses live in the `cache_entry` table (one row per key and variant; header fields as a
/// JSON array of `[name, value]` pairs, order, duplicates and spelling kept) and the outcome
/// counters in `cache_outcome`. After each save, the least recently used rows are evicted until
/// the stored bytes (``CachedResponse/size``) fit in ``maxBytes``. Times are stored as Unix
/// seconds (`REAL`), so they come back to within a microsecond.
public final class SQLiteCacheStore: CacheStore {
    /// The database holding the tables.
    public let database: FreshetDatabase
    /// The size cap in bytes (sum of ``CachedResponse/size``). A response larger than this is
    /// never stored.
    public let maxBytes: Int

    /// Creates a store on `database`, keeping at most `maxBytes` (100 MiB by default).
    public init(database: FreshetDatabase, maxBytes: Int = 100 * 1024 * 1024) {
        self.database = database
        self.maxBytes = maxBytes
    }

    /// Every stored variant for `key`, most recently stored first; marks them as used.
    public func variants(forKey key: String) async throws -> [CachedResponse] {
        // Read concurrently (WAL); mark as used on the serial writer without waiting for it.
        // Later writes queue behind the mark, so eviction still sees it.
        let responses = try await database.pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT key, variant, url, status, request_time, response_time, headers, body
                FROM cache_entry WHERE key = ? ORDER BY stored_at DESC
                """, arguments: [key]).compactMap(Self.response(from:))
        }
        if responses.isEmpty { return [] }
        database.pool.asyncWrite({ db in
            try db.execute(sql: "UPDATE cache_entry SET last_access = ? WHERE key = ?",
                           arguments: [try Self.nextStamp(db), key])
        }, completion: { _, _ in })
        return responses
    }

    /// Stores `response`, replacing the row with the same key and variant, then evicts least
    /// recently used rows until the store fits in ``maxBytes``. A response larger than
    /// ``maxBytes`` is not stored, and the older copy of its variant is removed.
    public func save(_ response: CachedResponse) async throws {
        let size = response.size
        let maxBytes = maxBytes
        guard size <= maxBytes else {
            try await database.pool.write { db in
                try db.execute(sql: "DELETE FROM cache_entry WHERE key = ? AND variant = ?",
                               arguments: [response.key, response.variant])
            }
            return
        }
        let headers = try HeaderCoding.encode(response.headers)
        try await database.pool.write { db in
            let stamp = try Self.nextStamp(db)
            try db.execute(sql: """
                INSERT OR REPLACE INTO cache_entry
                    (key, variant, url, status, request_time, response_time, stored_at, last_access,
                     size, headers, body)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [
                    response.key, response.variant, response.url, response.status,
                    response.requestTime.timeIntervalSince1970, response.responseTime.timeIntervalSince1970,
                    stamp, stamp, size, headers, response.body,
                ])
            try Self.evict(db, maxBytes: maxBytes)
        }
    }

    /// Removes every variant of `key`.
    public func remove(key: String) async throws {
        try await database.pool.write { db in
            try db.execute(sql: "DELETE FROM cache_entry WHERE key = ?", arguments: [key])
        }
    }

    /// Removes every entry whose display URL equals `url`.
    public func remove(url: String) async throws {
        try await database.pool.write { db in
            try db.execute(sql: "DELETE FROM cache_entry WHERE url = ?", arguments: [url])
        }
    }

    /// Removes every stored response and resets the outcome counters.
    public func removeAll() async throws {
        try await database.pool.write { db in
            try db.execute(sql: "DELETE FROM cache_entry")
            try db.execute(sql: "DELETE FROM cache_outcome")
        }
    }

    /// Adds one to the counter of `outcome`.
    public func record(_ outcome: CacheOutcome) async throws {
        try await database.pool.write { db in
            try db.execute(sql: """
                INSERT INTO cache_outcome (outcome, count) VALUES (?, 1)
                ON CONFLICT (outcome) DO UPDATE SET count = count + 1
                """, arguments: [outcome.rawValue])
        }
    }

    /// The number of stored responses, their bytes and the outcome counters.
    public func stats() async throws -> CacheStats {
        try await database.pool.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT count(*), coalesce(sum(size), 0) FROM cache_entry")
            var outcomes: [String: Int] = [:]
            for counter in try Row.fetchAll(db, sql: "SELECT outcome, count FROM cache_outcome") {
                outcomes[counter[0]] = counter[1]
            }
            return CacheStats(entries: row?[0] ?? 0, bytes: row?[1] ?? 0, outcomes: outcomes)
        }
    }

    // MARK: - Helpers

    /// A strictly increasing access stamp: now, or just after the latest stamp when the clock has
    /// not moved on (or went back), so recency order never depends on clock resolution.
    private static func nextStamp(_ db: Database) throws -> Double {
        let now = Date().timeIntervalSince1970
        guard let latest = try Double.fetchOne(db, sql: "SELECT max(last_access) FROM cache_entry") else {
            return now
        }
        return max(now, latest.nextUp)
    }

    /// Deletes least recently used rows until the total size is at most `maxBytes`.
    private static func evict(_ db: Database, maxBytes: Int) throws {
        var total = try Int.fetchOne(db, sql: "SELECT coalesce(sum(size), 0) FROM cache_entry") ?? 0
        guard total > maxBytes else { return }
        var victims: [Int64] = []
        let cursor = try Row.fetchCursor(db, sql: "SELECT rowid, size FROM cache_entry ORDER BY last_access, rowid")
        while total > maxBytes, let row = try cursor.next() {
            victims.append(row[0])
            total -= row[1] as Int
        }
        let delete = try db.cachedStatement(sql: "DELETE FROM cache_entry WHERE rowid = ?")
        for rowid in victims {
            try delete.execute(arguments: [rowid])
        }
    }

    /// The response in `row`, or nil when its header column cannot be read.
    private static func response(from row: Row) -> CachedResponse? {
        guard let headers = HeaderCoding.decode(row["headers"]) else { return nil }
        return CachedResponse(
            key: row["key"], variant: row["variant"], url: row["url"], status: row["status"],
            headers: headers, body: row["body"] ?? Data(),
            requestTime: Date(timeIntervalSince1970: row["request_time"]),
            responseTime: Date(timeIntervalSince1970: row["response_time"]))
    }
}

/// The tables of the HTTP cache, created by the `cache-v1` migration of ``FreshetDatabase``.
enum CacheSchema {
    static func createVersion1(_ db: Database) throws {
        // Small columns first: SQLite reads `size` and `last_access` without walking the blobs.
        try db.execute(sql: """
            CREATE TABLE cache_entry (
                key TEXT NOT NULL,
                variant TEXT NOT NULL,
                url TEXT NOT NULL,
                status INTEGER NOT NULL,
                request_time REAL NOT NULL,
                response_time REAL NOT NULL,
                stored_at REAL NOT NULL,
                last_access REAL NOT NULL,
                size INTEGER NOT NULL,
                headers BLOB NOT NULL,
                body BLOB NOT NULL,
                PRIMARY KEY (key, variant)
            );
            CREATE INDEX cache_entry_url ON cache_entry (url);
            CREATE INDEX cache_entry_last_access ON cache_entry (last_access, size);
            CREATE TABLE cache_outcome (
                outcome TEXT NOT NULL PRIMARY KEY,
                count INTEGER NOT NULL
            );
            """)
    }
}

/// Header fields as a JSON array of `[name, value]` pairs.
enum HeaderCoding {
    static func encode(_ fields: HTTPFields) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return try encoder.encode(fields.map { [$0.name.rawName, $0.value] })
    }

    /// The fields in `data`, skipping pairs whose name is not a valid field name; nil when `data`
    /// is not such an array.
    static func decode(_ data: Data?) -> HTTPFields? {
        guard let data, let pairs = try? JSONDecoder().decode([[String]].self, from: data) else {
            return nil
        }
        var fields = HTTPFields()
        for pair in pairs where pair.count == 2 {
            guard let name = HTTPField.Name(pair[0]) else { continue }
            fields.append(HTTPField(name: name, value: pair[1]))
        }
        return fields
    }
}
