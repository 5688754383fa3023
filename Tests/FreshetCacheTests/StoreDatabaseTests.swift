import Foundation
import Freshet
import FreshetCache
import GRDB
import HTTPTypes
import Synchronization
import Testing

/// Collects the warnings a ``FreshetDatabase`` gives.
private final class Warnings: Sendable {
    private let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    var sink: @Sendable (String) -> Void { { [self] line in lines.withLock { $0.append(line) } } }
}

private func permissions(_ url: URL) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
    return try #require(attributes[.posixPermissions] as? NSNumber).intValue
}

private func files(in directory: URL) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
}

/// Fills a database in `directory` with `count` responses of 2,000 bytes, then closes it.
private func makeFilledDatabase(in directory: URL, count: Int = 60) async throws {
    let database = try FreshetDatabase(directory: directory)
    let store = SQLiteCacheStore(database: database)
    for index in 0..<count {
        try await store.save(storeSample(key: "k\(index)", bodySize: 2000))
    }
    try await store.flush()
    try database.close()
}

@Suite("SQLite cache store and database")
struct StoreDatabaseTests {
    // MARK: Location

    @Test func defaultDirectoryPrefersFreshetHome() {
        let url = FreshetDatabase.defaultDirectory(environment: [
            "FRESHET_HOME": "/srv/freshet-home", "XDG_CACHE_HOME": "/var/cache/ann", "HOME": "/home/ann",
        ])
        #expect(url.path == "/srv/freshet-home")
    }

    @Test func defaultDirectoryUsesXDGCacheHomeNext() {
        let url = FreshetDatabase.defaultDirectory(environment: [
            "FRESHET_HOME": "", "XDG_CACHE_HOME": "/var/cache/ann", "HOME": "/home/ann",
        ])
        #expect(url.path == "/var/cache/ann/freshet")
    }

    @Test func defaultDirectoryFallsBackToHomeCache() {
        #expect(FreshetDatabase.defaultDirectory(environment: ["HOME": "/home/ann"]).path
                == "/home/ann/.cache/freshet")
        #expect(FreshetDatabase.defaultDirectory(environment: ["XDG_CACHE_HOME": "", "HOME": "/home/bob"]).path
                == "/home/bob/.cache/freshet")
        // The XDG spec says relative paths are to be ignored.
        #expect(FreshetDatabase.defaultDirectory(environment: ["XDG_CACHE_HOME": "cache", "HOME": "/home/cy"]).path
                == "/home/cy/.cache/freshet")
        #expect(FreshetDatabase.defaultDirectory(environment: [:]).path
                == URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent(".cache/freshet").path)
    }

    // MARK: Files

    @Test func createsTheDirectoryAndPrivateFiles() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let directory = temporary.url.appendingPathComponent("nested/freshet", isDirectory: true)

        let database = try FreshetDatabase(directory: directory)
        defer { try? database.close() }
        let store = SQLiteCacheStore(database: database)
        try await store.save(storeSample(key: "k"))
        try await store.flush()

        #expect(database.path.path == directory.appendingPathComponent("freshet.sqlite").path)
        #expect(try permissions(directory) == 0o700)
        for suffix in ["", "-wal", "-shm"] {
            let file = URL(fileURLWithPath: database.path.path + suffix)
            #expect(FileManager.default.fileExists(atPath: file.path), "\(file.lastPathComponent) missing")
            #expect(try permissions(file) == 0o600, "\(file.lastPathComponent)")
        }
    }

    @Test func tightensAnExistingDatabaseFile() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        try await makeFilledDatabase(in: temporary.url, count: 1)
        let file = temporary.url.appendingPathComponent("freshet.sqlite")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)

        let database = try FreshetDatabase(directory: temporary.url)
        defer { try? database.close() }
        let store = SQLiteCacheStore(database: database)
        try await store.save(storeSample(key: "k2"))
        try await store.flush()
        for suffix in ["", "-wal", "-shm"] {
            #expect(try permissions(URL(fileURLWithPath: file.path + suffix)) == 0o600, "freshet.sqlite\(suffix)")
        }
    }

    // MARK: Damaged files

    @Test func randomBytesAreMovedAsideAndTheStoreStartsEmpty() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        var generator = SystemRandomNumberGenerator()
        let garbage = Data((0..<4096).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        try garbage.write(to: temporary.url.appendingPathComponent("freshet.sqlite"))

        let warnings = Warnings()
        let database = try FreshetDatabase(directory: temporary.url, warn: warnings.sink)
        defer { try? database.close() }

        #expect(warnings.all.count == 1)
        #expect(warnings.all.first?.contains("moved aside") == true)
        #expect(warnings.all.first?.contains("starting with an empty store") == true)
        let aside = try files(in: temporary.url).filter { $0.hasPrefix("freshet.sqlite.corrupt-") }
        #expect(aside.count == 1)
        if let name = aside.first {
            #expect(try Data(contentsOf: temporary.url.appendingPathComponent(name)) == garbage)
        }

        let store = SQLiteCacheStore(database: database)
        #expect(try await store.stats() == CacheStats(entries: 0, bytes: 0, outcomes: [:]))
        try await store.save(storeSample(key: "k"))
        #expect(try await store.variants(forKey: "k").count == 1)
    }

    @Test(arguments: [50, 20_000])
    func truncatedFileNeverCrashes(keepBytes: Int) async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        try await makeFilledDatabase(in: temporary.url)
        let file = temporary.url.appendingPathComponent("freshet.sqlite")
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: UInt64(keepBytes))
        try handle.close()

        let warnings = Warnings()
        let database = try FreshetDatabase(directory: temporary.url, warn: warnings.sink)
        defer { try? database.close() }

        #expect(warnings.all.count == 1)
        #expect(warnings.all.first?.contains("moved aside") == true)
        #expect(try files(in: temporary.url).contains { $0.hasPrefix("freshet.sqlite.corrupt-") })
        let store = SQLiteCacheStore(database: database)
        try await store.save(storeSample(key: "fresh"))
        #expect(try await store.stats().entries == 1)
    }

    @Test func damagedPagesFailQuickCheckAndAreMovedAside() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        try await makeFilledDatabase(in: temporary.url)
        let file = temporary.url.appendingPathComponent("freshet.sqlite")
        // Keep the header page intact; scribble over the rest of the file.
        var contents = try Data(contentsOf: file)
        try #require(contents.count > 16_384)
        for offset in stride(from: 8192, to: contents.count, by: 7) {
            contents[offset] = 0xA5
        }
        try contents.write(to: file)

        let warnings = Warnings()
        let database = try FreshetDatabase(directory: temporary.url, warn: warnings.sink)
        defer { try? database.close() }

        #expect(warnings.all.count == 1)
        #expect(warnings.all.first?.contains("moved aside") == true)
        let store = SQLiteCacheStore(database: database)
        #expect(try await store.stats().entries == 0)
        try await store.save(storeSample(key: "fresh"))
        #expect(try await store.variants(forKey: "fresh").count == 1)
    }

    @Test func healthyDatabaseGivesNoWarning() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        try await makeFilledDatabase(in: temporary.url, count: 3)
        let warnings = Warnings()
        let database = try FreshetDatabase(directory: temporary.url, warn: warnings.sink)
        defer { try? database.close() }
        #expect(warnings.all.isEmpty)
        #expect(try await SQLiteCacheStore(database: database).stats().entries == 3)
        #expect(try !files(in: temporary.url).contains { $0.contains("corrupt") })
    }

    // MARK: Sharing

    @Test func dataPersistsAcrossReopening() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let original = storeSample(key: "k", variant: "v", status: 200, body: Data("kept".utf8))
        do {
            let database = try FreshetDatabase(directory: temporary.url)
            let store = SQLiteCacheStore(database: database)
            try await store.save(original)
            try await store.record(.revalidated)
            try await store.flush() // as every process does before it exits
            try database.close()
        }
        let database = try FreshetDatabase(directory: temporary.url)
        defer { try? database.close() }
        let store = SQLiteCacheStore(database: database)
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
            let database = try FreshetDatabase(directory: temporary.url)
            let writer = SQLiteCacheStore(database: database)
            try await writer.save(stored)
            try await writer.flush()
            try await database.pool.write { db in
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
        let database = try FreshetDatabase(directory: temporary.url)
        defer { try? database.close() }
        let store = SQLiteCacheStore(database: database)
        #expect(try await store.variants(forKey: "lines") == [stored])
        #expect(try await store.variants(forKey: "legacy") == [legacy])
        #expect(try await store.variants(forKey: "broken").isEmpty, "an unreadable header column is no answer")
    }

    @Test func twoDatabasesOnOneFileWriteConcurrently() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let first = try FreshetDatabase(directory: temporary.url)
        let second = try FreshetDatabase(directory: temporary.url)
        defer {
            try? first.close()
            try? second.close()
        }
        let stores = [SQLiteCacheStore(database: first), SQLiteCacheStore(database: second)]

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

    // MARK: Migrations

    @Test func extraMigrationsRunOnceAfterTheCacheTables() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let runs = Mutex<[Bool]>([])
        let feeds = FreshetDatabase.Migration(name: "feeds-v1") { db in
            let cacheExists = try db.tableExists("cache_entry")
            runs.withLock { $0.append(cacheExists) }
            try db.execute(sql: "CREATE TABLE feed (id INTEGER PRIMARY KEY, title TEXT NOT NULL)")
        }
        do {
            let database = try FreshetDatabase(directory: temporary.url, migrations: [feeds])
            try await database.pool.write { db in
                try db.execute(sql: "INSERT INTO feed (title) VALUES ('Hacker News')")
            }
            try database.close()
        }
        let database = try FreshetDatabase(directory: temporary.url, migrations: [feeds])
        defer { try? database.close() }
        #expect(runs.withLock { $0 } == [true])
        let titles = try await database.pool.read { db in try String.fetchAll(db, sql: "SELECT title FROM feed") }
        #expect(titles == ["Hacker News"])
    }

    @Test func duplicateMigrationNamesAreRejected() throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let noop: @Sendable (Database) throws -> Void = { _ in }
        #expect(throws: FreshetDatabaseError.duplicateMigration("cache-v1")) {
            _ = try FreshetDatabase(directory: temporary.url, migrations: [.init(name: "cache-v1", apply: noop)])
        }
        #expect(throws: FreshetDatabaseError.duplicateMigration("feeds-v1")) {
            _ = try FreshetDatabase(directory: temporary.url, migrations: [
                .init(name: "feeds-v1", apply: noop), .init(name: "feeds-v1", apply: noop),
            ])
        }
    }

    // MARK: Stored header fields

    @Test func invalidStoredFieldNamesAreSkipped() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let database = try FreshetDatabase(directory: temporary.url)
        defer { try? database.close() }
        let store = SQLiteCacheStore(database: database)
        try await store.save(storeSample(key: "k", variant: "good"))
        try await store.save(storeSample(key: "k", variant: "unreadable"))
        try await store.flush()
        try await database.pool.write { db in
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
