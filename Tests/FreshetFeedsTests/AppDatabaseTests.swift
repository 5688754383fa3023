import Foundation
import FreshetCache
import FreshetFeeds
import FreshetTestSupport
import GRDB
import HTTPTypes
import Synchronization
import Testing

/// A stored response of `bodySize` bytes under `key`.
private func storeSample(key: String, bodySize: Int = 10) -> CachedResponse {
    CachedResponse(key: key, variant: "", url: "https://api.example.com/\(key)", status: 200, headers: [:],
                   body: Data(repeating: UInt8(ascii: "x"), count: bodySize),
                   requestTime: Date(timeIntervalSince1970: 1_700_000_000), responseTime: Date(timeIntervalSince1970: 1_700_000_000.5))
}

/// Collects the warnings an ``AppDatabase`` gives.
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
    let database = try AppDatabase(directory: directory)
    let store = SQLiteCacheStore(writer: database.writer)
    for index in 0..<count {
        try await store.save(storeSample(key: "k\(index)", bodySize: 2000))
    }
    try await store.flush()
    try database.close()
}

/// Whether `freshet.sqlite-checked` in `directory` describes `freshet.sqlite` as it is now (its
/// inode, size and modification time; the time to the microsecond, as far as `Date` carries it).
private func stampDescribesFile(in directory: URL) throws -> Bool {
    let stamp = try String(contentsOf: directory.appendingPathComponent("freshet.sqlite-checked"), encoding: .utf8)
    let fields = stamp.split(separator: " ").map { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    guard fields.count == 5, let inode = fields[1], let size = fields[2], let seconds = fields[3], let nanoseconds = fields[4]
    else { return false }
    let attributes = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("freshet.sqlite").path)
    guard let fileInode = attributes[.systemFileNumber] as? NSNumber, let fileSize = attributes[.size] as? NSNumber,
          let modified = attributes[.modificationDate] as? Date
    else { return false }
    let recorded = Double(seconds) + Double(nanoseconds) / 1e9
    return fileInode.intValue == inode && fileSize.intValue == size && abs(modified.timeIntervalSince1970 - recorded) < 1e-6
}

@Suite("The apps' database: where it lives, its files, damaged files, its schema")
struct AppDatabaseTests {
    // MARK: Location

    @Test("Any DatabaseWriter: an in-memory queue gets the apps' tables, and both stores work on it")
    func inMemoryWriter() async throws {
        let database = try AppDatabase(writer: try DatabaseQueue(), schema: .apps)
        defer { try? database.close() }
        #expect(database.path == nil)
        let tables = try await database.writer.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        }
        #expect(tables.contains("cache_entry"))
        #expect(tables.contains("feed_event"))
        let cache = SQLiteCacheStore(writer: database.writer)
        try await cache.save(storeSample(key: "k"))
        #expect(try await cache.stats().entries == 1)
        #expect(try await FeedStore(writer: database.writer).totalCount() == 0)
    }

    @Test func defaultDirectoryPrefersFreshetHome() {
        let url = AppDatabase.defaultDirectory(environment: [
            "FRESHET_HOME": "/srv/freshet-home", "XDG_CACHE_HOME": "/var/cache/ann", "HOME": "/home/ann",
        ])
        #expect(url.path == "/srv/freshet-home")
    }

    @Test func defaultDirectoryUsesXDGCacheHomeNext() {
        let url = AppDatabase.defaultDirectory(environment: [
            "FRESHET_HOME": "", "XDG_CACHE_HOME": "/var/cache/ann", "HOME": "/home/ann",
        ])
        #expect(url.path == "/var/cache/ann/freshet")
    }

    @Test func defaultDirectoryFallsBackToHomeCache() throws {
        #expect(AppDatabase.defaultDirectory(environment: ["HOME": "/home/ann"]).path
                == "/home/ann/.cache/freshet")
        #expect(AppDatabase.defaultDirectory(environment: ["XDG_CACHE_HOME": "", "HOME": "/home/bob"]).path
                == "/home/bob/.cache/freshet")
        // The XDG spec says relative paths are to be ignored.
        #expect(AppDatabase.defaultDirectory(environment: ["XDG_CACHE_HOME": "cache", "HOME": "/home/cy"]).path
                == "/home/cy/.cache/freshet")
        // No $HOME: the account's home directory, as the password database has it.
        let account = try #require(getpwuid(getuid())?.pointee.pw_dir.map { String(cString: $0) })
        #expect(AppDatabase.defaultDirectory(environment: [:]).path == account + "/.cache/freshet")
    }

    // MARK: Files

    @Test func createsTheDirectoryAndPrivateFiles() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let directory = temporary.url.appendingPathComponent("nested/freshet", isDirectory: true)

        let database = try AppDatabase(directory: directory)
        defer { try? database.close() }
        let store = SQLiteCacheStore(writer: database.writer)
        try await store.save(storeSample(key: "k"))
        try await store.flush()

        let path = try #require(database.path).path
        #expect(path == directory.appendingPathComponent("freshet.sqlite").path)
        #expect(try permissions(directory) == 0o700)
        for suffix in ["", "-wal", "-shm"] {
            let file = URL(fileURLWithPath: path + suffix)
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

        let database = try AppDatabase(directory: temporary.url)
        defer { try? database.close() }
        let store = SQLiteCacheStore(writer: database.writer)
        try await store.save(storeSample(key: "k2"))
        try await store.flush()
        for suffix in ["", "-wal", "-shm"] {
            #expect(try permissions(URL(fileURLWithPath: file.path + suffix)) == 0o600, "freshet.sqlite\(suffix)")
        }
    }

    // MARK: Damaged files

    @Test(arguments: [AppDatabase.Access.serial, .concurrent])
    func randomBytesAreMovedAsideAndTheStoreStartsEmpty(access: AppDatabase.Access) async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        var generator = SystemRandomNumberGenerator()
        let garbage = Data((0..<4096).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        try garbage.write(to: temporary.url.appendingPathComponent("freshet.sqlite"))

        let warnings = Warnings()
        let database = try AppDatabase(directory: temporary.url, access: access, warn: warnings.sink)
        defer { try? database.close() }

        #expect(warnings.all.count == 1)
        #expect(warnings.all.first?.contains("moved aside") == true)
        #expect(warnings.all.first?.contains("starting with an empty store") == true)
        let aside = try files(in: temporary.url).filter { $0.hasPrefix("freshet.sqlite.corrupt-") }
        #expect(aside.count == 1)
        if let name = aside.first {
            #expect(try Data(contentsOf: temporary.url.appendingPathComponent(name)) == garbage)
        }

        let store = SQLiteCacheStore(writer: database.writer)
        #expect(try await store.stats() == CacheStats(entries: 0, bytes: 0, outcomes: [:]))
        try await store.save(storeSample(key: "k"))
        #expect(try await store.variants(forKey: "k").count == 1)
    }

    @Test(arguments: [50, 20_000], [AppDatabase.Access.serial, .concurrent])
    func truncatedFileNeverCrashes(keepBytes: Int, access: AppDatabase.Access) async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        try await makeFilledDatabase(in: temporary.url)
        let file = temporary.url.appendingPathComponent("freshet.sqlite")
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: UInt64(keepBytes))
        try handle.close()

        let warnings = Warnings()
        let database = try AppDatabase(directory: temporary.url, access: access, warn: warnings.sink)
        defer { try? database.close() }

        #expect(warnings.all.count == 1)
        #expect(warnings.all.first?.contains("moved aside") == true)
        #expect(try files(in: temporary.url).contains { $0.hasPrefix("freshet.sqlite.corrupt-") })
        let store = SQLiteCacheStore(writer: database.writer)
        try await store.save(storeSample(key: "fresh"))
        #expect(try await store.stats().entries == 1)
    }

    @Test(arguments: [AppDatabase.Access.serial, .concurrent])
    func damagedPagesFailQuickCheckAndAreMovedAside(access: AppDatabase.Access) async throws {
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
        let database = try AppDatabase(directory: temporary.url, access: access, warn: warnings.sink)
        defer { try? database.close() }

        #expect(warnings.all.count == 1)
        #expect(warnings.all.first?.contains("moved aside") == true)
        let store = SQLiteCacheStore(writer: database.writer)
        #expect(try await store.stats().entries == 0)
        try await store.save(storeSample(key: "fresh"))
        #expect(try await store.variants(forKey: "fresh").count == 1)
    }

    @Test("A file that passed the check is not read whole again until it changes")
    func checkRunsOnlyWhenTheFileChanged() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        try await makeFilledDatabase(in: temporary.url)
        let file = temporary.url.appendingPathComponent("freshet.sqlite")
        // A modification time in whole seconds, which FileManager can put back exactly.
        let time = Date(timeIntervalSince1970: 1_700_000_000)
        try FileManager.default.setAttributes([.modificationDate: time], ofItemAtPath: file.path)
        // This open checks the file and records it as checked.
        try AppDatabase(directory: temporary.url).writer.close()
        #expect(try files(in: temporary.url).contains("freshet.sqlite-checked"))

        // Damage the last page in place, and put the modification time back.
        let size = try #require(FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber).intValue
        try #require(size > 16_384)
        let handle = try FileHandle(forWritingTo: file)
        try handle.seek(toOffset: UInt64(size - 4096))
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096))
        try handle.close()
        try FileManager.default.setAttributes([.modificationDate: time], ofItemAtPath: file.path)

        // The file looks as it did when it passed: it opens without being read whole.
        let unchanged = Warnings()
        try AppDatabase(directory: temporary.url, warn: unchanged.sink).writer.close()
        #expect(unchanged.all.isEmpty)

        // Once it has changed (here: its time), it is checked again and the damage is found.
        try FileManager.default.setAttributes([.modificationDate: time.addingTimeInterval(1)], ofItemAtPath: file.path)
        let changed = Warnings()
        let database = try AppDatabase(directory: temporary.url, warn: changed.sink)
        defer { try? database.close() }
        #expect(changed.all.count == 1)
        #expect(changed.all.first?.contains("moved aside") == true)
    }

    @Test("The log folded into the file by this process leaves the file recorded as checked")
    func ownCheckpointsKeepTheRecord() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let database = try AppDatabase(directory: temporary.url)
        #expect(try stampDescribesFile(in: temporary.url))
        let sizeAtOpen = try #require(FileManager.default.attributesOfItem(
            atPath: temporary.url.appendingPathComponent("freshet.sqlite").path)[.size] as? NSNumber).intValue

        // Some 1,300 pages of log: past 1,000 the log is folded into the file, which grows.
        let store = SQLiteCacheStore(writer: database.writer)
        for index in 0..<1_200 {
            try await store.save(storeSample(key: "k\(index)", bodySize: 4_000))
        }
        try await store.flush()
        let sizeAfter = try #require(FileManager.default.attributesOfItem(
            atPath: temporary.url.appendingPathComponent("freshet.sqlite").path)[.size] as? NSNumber).intValue
        #expect(sizeAfter > sizeAtOpen + 1_000 * 4_096, "the log was folded into the file")
        #expect(try stampDescribesFile(in: temporary.url))

        try database.close()
        #expect(try stampDescribesFile(in: temporary.url))
    }

    @Test("Closing leaves a small log as it is, and the next open writes nothing; a grown log is folded")
    func closingFoldsOnlyAGrownLog() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let file = temporary.url.appendingPathComponent("freshet.sqlite")
        func logBytes() throws -> Int {
            let log = file.path + "-wal"
            guard FileManager.default.fileExists(atPath: log) else { return 0 }
            return try #require(FileManager.default.attributesOfItem(atPath: log)[.size] as? NSNumber).intValue
        }

        // A few entries: the log stays, under the limit, and holds them for the next process.
        try await makeFilledDatabase(in: temporary.url, count: 5)
        let small = try logBytes()
        #expect(small > 0 && small <= AppDatabase.keptLogBytes)
        // An open that finds a log writes nothing, and neither does a close that leaves it, even
        // when the writer is the only connection (SQLite's own checkpoint at its close is off).
        try AppDatabase(directory: temporary.url).close()
        #expect(try logBytes() == small)
        let reopened = try AppDatabase(directory: temporary.url)
        #expect(try await SQLiteCacheStore(writer: reopened.writer).stats().entries == 5)
        try reopened.close()

        // Past the limit, closing folds the log into the file and empties it.
        try await makeFilledDatabase(in: temporary.url, count: 200)
        #expect(try logBytes() == 0)
        let again = try AppDatabase(directory: temporary.url)
        defer { try? again.close() }
        #expect(try await SQLiteCacheStore(writer: again.writer).stats().entries == 200)
    }

    @Test("A command's database folds its log as it goes; a server's waits for SQLite's 1,000 pages",
          arguments: [AppDatabase.Access.serial, .concurrent])
    func logFoldedAsItGoes(access: AppDatabase.Access) async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let database = try AppDatabase(directory: temporary.url, access: access)
        defer { try? database.close() }
        // Some 600 pages of log, in 150 transactions of four entries of a page each.
        let store = SQLiteCacheStore(writer: database.writer)
        for index in 0..<600 {
            try await store.save(storeSample(key: "k\(index)", bodySize: 3_000))
            if index % 4 == 3 { try await store.flush() }
        }
        let log = temporary.url.appendingPathComponent("freshet.sqlite-wal").path
        let pages = try #require(FileManager.default.attributesOfItem(atPath: log)[.size] as? NSNumber).intValue / 4_096
        if access == .serial {
            // Folded every 128 pages, the log restarts: it never grows much past that.
            #expect(pages < 2 * Int(AppDatabase.serialFoldPages), "\(pages) pages of log")
        } else {
            #expect(pages > 400, "\(pages) pages of log")
        }
        #expect(try await store.stats().entries == 600)
    }

    @Test("Serial access: one connection, a new file still in WAL mode, and a pool beside it sees its writes")
    func serialAccess() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let serial = try AppDatabase(directory: temporary.url, access: .serial)
        #expect(serial.writer is DatabaseQueue)
        #expect(try await serial.writer.read { try String.fetchOne($0, sql: "PRAGMA journal_mode") } == "wal")
        #expect(try await serial.writer.read { try Int.fetchOne($0, sql: "PRAGMA synchronous") } == 1) // NORMAL
        let concurrent = try AppDatabase(directory: temporary.url)
        #expect(concurrent.writer is DatabasePool)
        let store = SQLiteCacheStore(writer: serial.writer)
        try await store.save(storeSample(key: "k"))
        try await store.flush()
        #expect(try await SQLiteCacheStore(writer: concurrent.writer).variants(forKey: "k").count == 1)
        try serial.close()
        try concurrent.close()
    }

    @Test func healthyDatabaseGivesNoWarning() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        try await makeFilledDatabase(in: temporary.url, count: 3)
        let warnings = Warnings()
        let database = try AppDatabase(directory: temporary.url, warn: warnings.sink)
        defer { try? database.close() }
        #expect(warnings.all.isEmpty)
        #expect(try await SQLiteCacheStore(writer: database.writer).stats().entries == 3)
        #expect(try !files(in: temporary.url).contains { $0.contains("corrupt") })
    }

    // MARK: Schema

    @Test("The apps' schema builds the cache's tables and the feed store's, once; the proxy's builds the cache's alone")
    func schemas() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let tables = { (database: AppDatabase) in
            try await database.writer.read { db in
                try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
            }
        }
        let applied = { (database: AppDatabase) in
            try await database.writer.read { db in try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier") }
        }
        do {
            let proxy = try AppDatabase(directory: temporary.url, schema: .cache)
            #expect(try await tables(proxy) == ["cache_entry", "cache_outcome", "cache_size", "grdb_migrations"])
            let store = SQLiteCacheStore(writer: proxy.writer)
            try await store.save(storeSample(key: "kept"))
            try await store.flush()
            try proxy.close()
        }
        do {
            let apps = try AppDatabase(directory: temporary.url)
            #expect(try await tables(apps) == ["cache_entry", "cache_outcome", "cache_size", "feed_event", "feed_source", "grdb_migrations"])
            #expect(try await applied(apps) == ["cache-v1", "cache-v2", "cache-v3", "feeds-v1", "feeds-v2", "feeds-v3", "feeds-v4"])
            try await apps.writer.write { db in
                try db.execute(sql: "INSERT INTO feed_source (repo, fingerprint) VALUES ('a/b', 1)")
            }
            try apps.close()
        }
        // Reopened with either schema: nothing runs twice, nothing is lost.
        let again = try AppDatabase(directory: temporary.url, schema: .cache)
        defer { try? again.close() }
        #expect(try await applied(again) == ["cache-v1", "cache-v2", "cache-v3", "feeds-v1", "feeds-v2", "feeds-v3", "feeds-v4"])
        #expect(try await again.writer.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM feed_source") } == 1)
        #expect(try await SQLiteCacheStore(writer: again.writer).variants(forKey: "kept").count == 1)
    }
}
