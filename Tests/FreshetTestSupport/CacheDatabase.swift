import Foundation
import FreshetCache
import GRDB

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
