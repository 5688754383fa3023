import Foundation
import FreshetCache
import GRDB
import Synchronization

/// A SQLite database for the HTTP cache alone, as a library user would open one: a GRDB
/// `DatabasePool` (WAL) at `<directory>/cache.sqlite` (the directory created when missing) with a busy timeout, the cache's
/// migrations run.
public func cacheDatabase(in directory: URL) throws -> DatabasePool {
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    var configuration = Configuration()
    configuration.busyMode = .timeout(5)
    let pool = try DatabasePool(path: directory.appendingPathComponent("cache.sqlite").path, configuration: configuration)
    try SQLiteCacheStore.migrate(pool)
    return pool
}

/// A fresh, empty directory under the system's temporary directory.
public struct StoreTemporaryDirectory: Sendable {
    public let url: URL

    public init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("freshet-store-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}

/// Counts statements seen by a database trace.
public final class LookupCounter: Sendable {
    private let value = Mutex(0)
    public func count() { value.withLock { $0 += 1 } }
    public var total: Int { value.withLock { $0 } }
}

/// The cache database in `directory` (``cacheDatabase(in:)``'s) opened again, each connection
/// counting the lookups of stored responses it runs (`SELECT`s by key: not the writes).
public func countingLookups(in directory: URL) throws -> (DatabasePool, LookupCounter) {
    let lookups = LookupCounter()
    var configuration = Configuration()
    configuration.prepareDatabase { db in
        db.trace(options: .statement) { event in
            let sql = "\(event)"
            if sql.hasPrefix("SELECT"), sql.contains("FROM cache_entry WHERE key") { lookups.count() }
        }
    }
    let database = try DatabasePool(path: directory.appendingPathComponent("cache.sqlite").path, configuration: configuration)
    return (database, lookups)
}
