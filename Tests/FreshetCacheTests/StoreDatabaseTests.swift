import Foundation
import Freshet
import FreshetCache
import FreshetTestSupport
import GRDB
import HTTPTypes
import Testing

@Suite("SQLite cache store on disk")
struct StoreDatabaseTests {
    @Test func dataPersistsAcrossReopening() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let original = storeSample(key: "k", variant: "v", status: 200, body: Data("kept".utf8))
        do {
            let database = try cacheDatabase(in: temporary.url)
            let store = SQLiteCacheStore(writer: database)
            try await store.save(original)
            try await store.record(.revalidated)
            try await store.flush() // as every process does before it exits
            try database.close()
        }
        let database = try cacheDatabase(in: temporary.url)
        defer { try? database.close() }
        let store = SQLiteCacheStore(writer: database)
        #expect(try await store.variants(forKey: "k") == [original])
        #expect(try await store.stats() == CacheStats(entries: 1, bytes: 4, outcomes: ["revalidated": 1]))
    }

    @Test("Header fields are kept as HTTP/1 field lines, exactly; rows in the older JSON format are still read")
    func headerFieldsOnDisk() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        var fields = HTTPFields()
        fields.append(HTTPField(name: .cacheControl, value: "max-age=60, x=\"a: b\""))
        fields.append(HTTPField(name: HTTPField.Name("Set-Cookie")!, value: "a=1"))
        fields.append(HTTPField(name: HTTPField.Name("Set-Cookie")!, value: "b=2"))
        fields.append(HTTPField(name: HTTPField.Name("X-Empty")!, value: ""))
        fields.append(HTTPField(name: HTTPField.Name("X-Text")!, value: "Grüße: 日本"))
        let stored = storeSample(key: "lines", headers: fields, body: Data("{}".utf8))
        let legacy = storeSample(key: "legacy", headers: [.eTag: "\"old\"", .contentType: "text/plain"], body: Data("b".utf8))
        do {
            let database = try cacheDatabase(in: temporary.url)
            let writer = SQLiteCacheStore(writer: database)
            try await writer.save(stored)
            try await writer.flush()
            try await database.write { db in
                let raw = try #require(try Data.fetchOne(db, sql: "SELECT headers FROM cache_entry WHERE key = 'lines'"))
                #expect(String(decoding: raw, as: UTF8.self)
                    == "Cache-Control: max-age=60, x=\"a: b\"\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nX-Empty: \r\nX-Text: Grüße: 日本\r\n")
                try db.execute(sql: """
                    INSERT INTO cache_entry (key, variant, url, status, request_time, response_time, stored_at,
                                             last_access, size, headers, body)
                    VALUES ('legacy', '', ?, 200, ?, ?, 0, 0, 1, ?, ?)
                    """, arguments: [legacy.url, legacy.requestTime.timeIntervalSince1970, legacy.responseTime.timeIntervalSince1970,
                                     Data(#"[["ETag","\"old\""],["Content-Type","text/plain"]]"#.utf8), legacy.body])
                try db.execute(sql: """
                    INSERT INTO cache_entry (key, variant, url, status, request_time, response_time, stored_at,
                                             last_access, size, headers, body)
                    VALUES ('broken', '', 'https://api.example.com/broken', 200, 0, 0, 0, 0, 1, ?, x'00')
                    """, arguments: [Data("no colon here".utf8)])
            }
            try database.close()
        }
        let database = try cacheDatabase(in: temporary.url)
        defer { try? database.close() }
        let store = SQLiteCacheStore(writer: database)
        #expect(try await store.variants(forKey: "lines") == [stored])
        #expect(try await store.variants(forKey: "legacy") == [legacy])
        #expect(try await store.variants(forKey: "broken").isEmpty, "an unreadable header column is no answer")
    }

    @Test("A stored name comes back spelled as it was stored, whether or not it is one of the names known by spelling")
    func storedNamesKeepTheirSpelling() throws {
        let lines = "content-type: a\r\nContent-Type: b\r\nCONTENT-TYPE: c\r\nX-RateLimit-Limit: 60\r\n"
            + "x-ratelimit-limit: 61\r\nETag: \"e\"\r\nEtag: \"f\"\r\nX-Own: Grüße\r\nBad Name: x\r\nDate: \r\n"
        let fields = try #require(HeaderCoding.decode(Data(lines.utf8)))
        #expect(fields.map(\.name.rawName) == ["content-type", "Content-Type", "CONTENT-TYPE", "X-RateLimit-Limit",
                                               "x-ratelimit-limit", "ETag", "Etag", "X-Own", "Date"])
        #expect(fields.map(\.name.canonicalName) == ["content-type", "content-type", "content-type", "x-ratelimit-limit",
                                                     "x-ratelimit-limit", "etag", "etag", "x-own", "date"])
        #expect(fields.map(\.value) == ["a", "b", "c", "60", "61", "\"e\"", "\"f\"", "Grüße", ""])
        #expect(fields[values: .contentType] == ["a", "b", "c"])
        #expect(try HeaderCoding.decode(HeaderCoding.encode(fields)) == fields)
    }

    @Test func twoDatabasesOnOneFileWriteConcurrently() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let first = try cacheDatabase(in: temporary.url)
        let second = try cacheDatabase(in: temporary.url)
        defer {
            try? first.close()
            try? second.close()
        }
        let stores = [SQLiteCacheStore(writer: first), SQLiteCacheStore(writer: second)]

        try await withThrowingTaskGroup(of: Void.self) { group in
            for (number, store) in stores.enumerated() {
                for index in 0..<50 {
                    group.addTask {
                        try await store.save(storeSample(key: "s\(number)-\(index)", bodySize: 100))
                        try await store.record(.miss)
                    }
                }
            }
            try await group.waitForAll()
        }
        for store in stores { try await store.flush() }

        for store in stores {
            #expect(try await store.stats() == CacheStats(entries: 100, bytes: 100 * 100, outcomes: ["miss": 100]))
        }
        for number in 0..<2 {
            for index in 0..<50 {
                #expect(try await stores[1 - number].variants(forKey: "s\(number)-\(index)").count == 1)
            }
        }
    }

    // MARK: The stored total

    @Test("The stored count and bytes are kept in the database as rows change; a database from before them is counted")
    func storedTotal() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let path = temporary.url.appendingPathComponent("cache.sqlite").path
        do {
            // A database of the first schema, with two rows in it.
            let older = try DatabaseQueue(path: path)
            var migrator = DatabaseMigrator()
            SQLiteCacheStore.registerMigrations(in: &migrator)
            try migrator.migrate(older, upTo: "cache-v1")
            try await older.write { db in
                for (key, size) in [("a", 70), ("b", 30)] {
                    try db.execute(sql: """
                        INSERT INTO cache_entry (key, variant, url, status, request_time, response_time, stored_at,
                                                 last_access, size, headers, body)
                        VALUES (?, '', ?, 200, 0, 0, 0, 0, ?, x'', zeroblob(?))
                        """, arguments: [key, "https://api.example.com/\(key)", size, size])
                }
            }
            try older.close()
        }
        let database = try cacheDatabase(in: temporary.url)
        defer { try? database.close() }
        /// What the database counts, and what is there.
        let totals = {
            try await database.read { db in
                [try Row.fetchOne(db, sql: "SELECT entries, bytes FROM cache_size").map { [$0[0], $0[1]] as [Int] },
                 try Row.fetchOne(db, sql: "SELECT count(*), coalesce(sum(size), 0) FROM cache_entry").map { [$0[0], $0[1]] as [Int] }]
            }
        }
        #expect(try await totals() == [[2, 100], [2, 100]])

        let store = SQLiteCacheStore(writer: database, maxBytes: 250)
        try await store.save(storeSample(key: "a", bodySize: 100))
        try await store.save(storeSample(key: "c", bodySize: 100))
        try await store.flush()
        #expect(try await totals() == [[3, 230], [3, 230]], "a replaced row counts once, with its new size")
        // A row replaced by hand as an older Freshet writes it, `INSERT OR REPLACE`: the same.
        try await database.write { db in
            try db.execute(sql: """
                INSERT OR REPLACE INTO cache_entry (key, variant, url, status, request_time, response_time, stored_at,
                                                    last_access, size, headers, body)
                SELECT key, variant, url, status, request_time, response_time, stored_at, last_access, 100, headers,
                       zeroblob(100)
                FROM cache_entry WHERE key = 'b'
                """)
        }
        #expect(try await totals() == [[3, 300], [3, 300]])
        // One trigger before an insert (`cache-v3`); an insert that fails undoes what it counted.
        let insertTriggers = try await database.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger' AND sql LIKE '%INSERT ON cache_entry%'")
        }
        #expect(insertTriggers == ["cache_size_insert"])
        await #expect(throws: DatabaseError.self) {
            try await database.write { db in
                try db.execute(sql: """
                    INSERT INTO cache_entry (key, variant, url, status, request_time, response_time, stored_at,
                                             last_access, size, headers, body)
                    VALUES ('b', '', 'https://api.example.com/b', 200, 0, 0, 0, 0, 5000, x'', x'')
                    """)
            }
        }
        #expect(try await totals() == [[3, 300], [3, 300]], "a failed insert counts nothing")
        try await database.write { db in try db.execute(sql: "UPDATE cache_entry SET size = 30 WHERE key = 'b'") }
        #expect(try await totals() == [[3, 230], [3, 230]], "a size changed in place")

        try await store.save(storeSample(key: "d", bodySize: 100))
        try await store.flush()
        #expect(try await totals() == [[2, 200], [2, 200]], "the least recently used went to fit 250 bytes")
        #expect(try await store.variants(forKey: "b").isEmpty)

        try await store.remove(key: "c")
        #expect(try await totals() == [[1, 100], [1, 100]])

        // Counted more than is stored (a change the triggers did not see): recounted before
        // choosing what goes, not everything evicted.
        try await database.write { db in try db.execute(sql: "UPDATE cache_size SET bytes = bytes + 10000") }
        try await store.save(storeSample(key: "e", bodySize: 100))
        try await store.save(storeSample(key: "f", bodySize: 100))
        try await store.flush()
        #expect(try await totals() == [[2, 200], [2, 200]])
        #expect(try await store.variants(forKey: "f").count == 1)

        try await store.removeAll()
        #expect(try await totals() == [[0, 0], [0, 0]])
    }

    // MARK: Stored header fields

    @Test func invalidStoredFieldNamesAreSkipped() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let database = try cacheDatabase(in: temporary.url)
        defer { try? database.close() }
        let store = SQLiteCacheStore(writer: database)
        try await store.save(storeSample(key: "k", variant: "good"))
        try await store.save(storeSample(key: "k", variant: "unreadable"))
        try await store.flush()
        try await database.write { db in
            try db.execute(sql: "UPDATE cache_entry SET headers = ? WHERE variant = 'good'", arguments: [
                Data(#"[["Bad Name","x"],["ETag","\"1\""],["lonely"],["",""],["x-Mixed-Case","v"]]"#.utf8),
            ])
            try db.execute(sql: "UPDATE cache_entry SET headers = X'00FF' WHERE variant = 'unreadable'")
        }
        let found = try await store.variants(forKey: "k")
        try #require(found.count == 1)
        #expect(found[0].headers.map { [$0.name.rawName, $0.value] } == [["ETag", "\"1\""], ["x-Mixed-Case", "v"]])
    }
}
