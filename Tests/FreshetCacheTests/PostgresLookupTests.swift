import Foundation
import FreshetCache
import FreshetPostgres
import FreshetTestSupport
import Logging
import PostgresNIO
import Testing

/// `PostgresCacheStore`'s lookups beside its own writes: a lookup that misses the memory tier
/// reads PostgreSQL, and what it reads while a write of the key has not committed must not be
/// kept in the memory tier, or later lookups answer without that write.
///
/// The overlap is made with PostgreSQL's own lock: a second connection holds the cache table in
/// `EXCLUSIVE` mode, under which reads go on and writes wait, until the write is seen waiting.
@Suite("PostgreSQL store: lookups during this instance's writes")
struct PostgresLookupTests {
    /// A write of the store, and what the key's list is once it has committed.
    enum Write: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case save
        case removeKey
        case removeURL

        var testDescription: String { rawValue }

        /// What the statement the write waits in holds.
        var statement: String {
            switch self {
            case .save: "INSERT INTO freshet_cache_entry"
            case .removeKey, .removeURL: "DELETE FROM freshet_cache_entry"
            }
        }

        func run(on store: PostgresCacheStore) async throws {
            switch self {
            case .save: try await store.save(storeSample(key: "k", variant: "v2", bodySize: 1))
            case .removeKey: try await store.remove(key: "k")
            case .removeURL: try await store.remove(url: "https://api.example.com/k")
            }
        }

        var variantsAfter: [String] { self == .save ? ["v2", "v1"] : [] }
    }

    @Test(arguments: Write.allCases)
    func lookupDuringWriteIsNotKept(write: Write) async throws {
        let logger = Logger(label: "freshet.lookup-tests") { _ in SwiftLogNoOpLogHandler() }
        try await withPostgres { cluster in
            var configuration = try PostgresStoreConfiguration(url: cluster.url, environment: cluster.environment)
            configuration.queryTimeout = .seconds(10)
            let store = try await PostgresCacheStore.connect(configuration, logger: logger)
            let blocker = try await PostgresConnection.connect(
                configuration: configuration.connectionConfiguration(), id: 1, logger: logger)
            do {
                // On the server; the memory tier does not know the key (a save does not teach it
                // a key), and the eviction run the save started is over.
                try await store.save(storeSample(key: "k", variant: "v1", bodySize: 1))
                try await store.flush()
                _ = try await blocker.query("BEGIN", logger: logger).collect()
                _ = try await blocker.query("LOCK TABLE freshet_cache_entry IN EXCLUSIVE MODE", logger: logger).collect()
                let writing = Task { try await write.run(on: store) }
                let pattern = "%" + write.statement + "%"
                let waiting = try await eventually {
                    // Within a transaction PostgreSQL answers from one snapshot of the activity
                    // unless told to take a new one.
                    _ = try await blocker.query("SELECT pg_stat_clear_snapshot()", logger: logger).collect()
                    let rows = try await blocker.query("""
                        SELECT count(*)::int FROM pg_stat_activity
                        WHERE wait_event_type = 'Lock' AND query LIKE \(pattern)
                        """, logger: logger)
                    for try await count in rows.decode(Int.self) where count == 1 { return true }
                    return false
                }
                #expect(waiting, "the \(write) never waited for the table lock")
                // Read before the write commits: the list as it was.
                #expect(try await store.variants(forKey: "k").map(\.variant) == ["v1"])
                _ = try await blocker.query("COMMIT", logger: logger).collect()
                try await writing.value
                #expect(try await store.variants(forKey: "k").map(\.variant) == write.variantsAfter)
            } catch {
                try? await blocker.close()
                await store.shutdown()
                throw error
            }
            try await blocker.close()
            await store.shutdown()
        }
    }
}
