import Foundation
import Freshet
import FreshetCache
import FreshetPostgres
import FreshetTestSupport
import HTTPTypes
import Testing
import GRDB
import Logging

/// The three ``CacheStore`` implementations, for parameterised tests.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory
    case sqlite
    /// `PostgresCacheStore`, on a throwaway PostgreSQL server of its own.
    case postgres

    var testDescription: String { rawValue }
}

/// Runs `body` with a new, empty store of `kind`, then closes and deletes it.
func withStore<T: Sendable>(
    _ kind: StoreKind, maxBytes: Int = 1024 * 1024,
    _ body: (any CacheStore) async throws -> T
) async throws -> T {
    switch kind {
    case .memory:
        return try await body(MemoryCacheStore(maxBytes: maxBytes))
    case .sqlite:
        let directory = try StoreTemporaryDirectory()
        defer { directory.remove() }
        let database = try cacheDatabase(in: directory.url)
        defer { try? database.close() }
        // Every use stamped, as the other stores do: these tests check the exact order of use
        // (TieredStoreTests checks the stamp interval).
        return try await body(SQLiteCacheStore(writer: database, maxBytes: maxBytes, stampInterval: .zero))
    case .postgres:
        return try await withPostgres { cluster in
            var configuration = try PostgresStoreConfiguration(url: cluster.url, environment: cluster.environment)
            configuration.maxBytes = maxBytes
            // A loaded machine starts a cluster slowly; the first queries get time.
            configuration.queryTimeout = .seconds(10)
            let store = try await PostgresCacheStore.connect(
                configuration, logger: Logger(label: "freshet.store-tests") { _ in SwiftLogNoOpLogHandler() })
            do {
                let value = try await body(store)
                await store.shutdown()
                return value
            } catch {
                await store.shutdown()
                throw error
            }
        }
    }
}

/// Waits until `store` has evicted what no longer fits: at once for the memory and SQLite stores,
/// which evict as they save; `PostgresCacheStore` evicts in the background, and `flush()` returns
/// once that is done.
func evictionSettled(_ store: any CacheStore) async throws {
    try await (store as? PostgresCacheStore)?.flush()
}

/// A stored response with a body of `bodySize` bytes and no header fields (so `size == bodySize`)
/// unless `headers` or `body` are given.
func storeSample(
    key: String, variant: String = "", url: String? = nil, status: Int = 200,
    headers: HTTPFields = [:], body: Data? = nil, bodySize: Int = 10,
    requestTime: Date = Date(timeIntervalSince1970: 1_700_000_000),
    responseTime: Date = Date(timeIntervalSince1970: 1_700_000_000.5)
) -> CachedResponse {
    CachedResponse(
        key: key, variant: variant, url: url ?? "https://api.example.com/\(key)", status: status,
        headers: headers, body: body ?? Data(repeating: UInt8(ascii: "x"), count: bodySize),
        requestTime: requestTime, responseTime: responseTime)
}

@Suite("Cache stores: behaviour shared by memory, SQLite and PostgreSQL")
struct StoreTests {
    @Test(arguments: StoreKind.allCases)
    func roundTripKeepsEveryField(kind: StoreKind) async throws {
        var headers = HTTPFields()
        headers.append(HTTPField(name: .contentType, value: "application/json; charset=utf-8"))
        headers.append(HTTPField(name: HTTPField.Name("Link")!, value: "<https://api.example.com/a?page=2>; rel=\"next\""))
        headers.append(HTTPField(name: .eTag, value: "W/\"abc\""))
        headers.append(HTTPField(name: HTTPField.Name("Link")!, value: "<https://api.example.com/a?page=9>; rel=\"last\""))
        headers.append(HTTPField(name: HTTPField.Name("X-GitHub-Request-Id")!, value: "ABCD:1234"))
        let body = Data([0x00, 0xFF, 0x7B, 0x22, 0x0A, 0x00] + Array("{\"é\": \"ü\"}".utf8))
        let original = storeSample(
            key: "deadbeef", variant: "accept=application/json", url: "https://api.example.com/a?page=1",
            status: 203, headers: headers, body: body,
            requestTime: Date(timeIntervalSince1970: 1_712_345_678.25),
            responseTime: Date(timeIntervalSince1970: 1_712_345_679.75))

        try await withStore(kind) { store in
            try await store.save(original)
            let found = try await store.variants(forKey: "deadbeef")
            try #require(found.count == 1)
            let stored = found[0]
            #expect(stored == original)
            #expect(stored.headers.map(\.name.rawName) == ["Content-Type", "Link", "ETag", "Link", "X-GitHub-Request-Id"])
            #expect(stored.headers[values: HTTPField.Name("link")!] == [
                "<https://api.example.com/a?page=2>; rel=\"next\"",
                "<https://api.example.com/a?page=9>; rel=\"last\"",
            ])
            #expect(stored.body == body)
            #expect(stored.requestTime == Date(timeIntervalSince1970: 1_712_345_678.25))
            #expect(stored.responseTime == Date(timeIntervalSince1970: 1_712_345_679.75))
            #expect(try await store.variants(forKey: "other").isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func emptyBodyAndNoHeadersRoundTrip(kind: StoreKind) async throws {
        let original = storeSample(key: "empty", status: 204, body: Data())
        try await withStore(kind) { store in
            try await store.save(original)
            #expect(try await store.variants(forKey: "empty") == [original])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func savingTheSameVariantReplacesItAndKeepsTheOthers(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            try await store.save(storeSample(key: "k", variant: "lang=en", body: Data("one".utf8)))
            try await store.save(storeSample(key: "k", variant: "lang=fr", body: Data("deux".utf8)))
            try await store.save(storeSample(key: "k", variant: "lang=en", status: 201, body: Data("uno".utf8)))

            let found = try await store.variants(forKey: "k")
            #expect(found.map(\.variant) == ["lang=en", "lang=fr"])
            #expect(found.map(\.body) == [Data("uno".utf8), Data("deux".utf8)])
            #expect(found.first?.status == 201)
            let stats = try await store.stats()
            #expect(stats.entries == 2)
            #expect(stats.bytes == 3 + 4)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func variantsComeMostRecentlyStoredFirst(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            for variant in ["a", "b", "c", "d"] {
                try await store.save(storeSample(key: "k", variant: variant))
            }
            #expect(try await store.variants(forKey: "k").map(\.variant) == ["d", "c", "b", "a"])
            try await store.save(storeSample(key: "k", variant: "b"))
            #expect(try await store.variants(forKey: "k").map(\.variant) == ["b", "d", "c", "a"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func evictsLeastRecentlyUsedByBytes(kind: StoreKind) async throws {
        try await withStore(kind, maxBytes: 300) { store in
            try await store.save(storeSample(key: "old", bodySize: 100))
            try await store.save(storeSample(key: "newer", bodySize: 100))
            try await store.save(storeSample(key: "newest", bodySize: 100))
            try await evictionSettled(store)
            #expect(try await store.stats().bytes == 300)

            // Using the oldest entry makes "newer" the least recently used.
            #expect(try await store.variants(forKey: "old").count == 1)
            try await store.save(storeSample(key: "incoming", bodySize: 100))
            try await evictionSettled(store)

            let stats = try await store.stats()
            #expect(stats.entries == 3)
            #expect(stats.bytes == 300)
            #expect(try await store.variants(forKey: "newer").isEmpty)
            #expect(try await store.variants(forKey: "old").count == 1)
            #expect(try await store.variants(forKey: "newest").count == 1)
            #expect(try await store.variants(forKey: "incoming").count == 1)

            // A big entry evicts as many as needed, oldest use first.
            try await store.save(storeSample(key: "big", bodySize: 250))
            try await evictionSettled(store)
            #expect(try await store.variants(forKey: "big").count == 1)
            #expect(try await store.stats().entries == 1)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func entryLargerThanTheCapIsNotStored(kind: StoreKind) async throws {
        try await withStore(kind, maxBytes: 300) { store in
            try await store.save(storeSample(key: "small", bodySize: 200))
            try await store.save(storeSample(key: "huge", bodySize: 301))
            #expect(try await store.variants(forKey: "huge").isEmpty)
            #expect(try await store.variants(forKey: "small").count == 1)
            #expect(try await store.stats() == CacheStats(entries: 1, bytes: 200, outcomes: [:]))

            // Exactly the cap fits (and evicts the rest).
            try await store.save(storeSample(key: "exact", bodySize: 300))
            try await evictionSettled(store)
            #expect(try await store.variants(forKey: "exact").count == 1)
            #expect(try await store.stats() == CacheStats(entries: 1, bytes: 300, outcomes: [:]))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func removeKeyRemovesEveryVariantOfThatKeyOnly(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            try await store.save(storeSample(key: "k1", variant: "v1"))
            try await store.save(storeSample(key: "k1", variant: "v2"))
            try await store.save(storeSample(key: "k2"))
            try await store.remove(key: "k1")
            #expect(try await store.variants(forKey: "k1").isEmpty)
            #expect(try await store.variants(forKey: "k2").count == 1)
            #expect(try await store.stats().entries == 1)
            try await store.remove(key: "missing")
            #expect(try await store.stats().entries == 1)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func removeURLRemovesEveryEntryForThatURL(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let url = "https://api.example.com/repos/a/b"
            try await store.save(storeSample(key: "get", variant: "v1", url: url))
            try await store.save(storeSample(key: "get", variant: "v2", url: url))
            try await store.save(storeSample(key: "get-with-token", url: url))
            try await store.save(storeSample(key: "other", url: url + "/issues"))
            try await store.remove(url: url)
            #expect(try await store.variants(forKey: "get").isEmpty)
            #expect(try await store.variants(forKey: "get-with-token").isEmpty)
            #expect(try await store.variants(forKey: "other").count == 1)
            #expect(try await store.stats().entries == 1)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func removeAllClearsEntriesAndCounters(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            try await store.save(storeSample(key: "a"))
            try await store.save(storeSample(key: "b"))
            try await store.record(.hit)
            try await store.removeAll()
            #expect(try await store.stats() == CacheStats(entries: 0, bytes: 0, outcomes: [:]))
            #expect(try await store.variants(forKey: "a").isEmpty)
            // Still usable afterwards.
            try await store.save(storeSample(key: "c", bodySize: 7))
            #expect(try await store.stats() == CacheStats(entries: 1, bytes: 7, outcomes: [:]))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func recordCountsOutcomesAndStatsSumSizes(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            #expect(try await store.stats() == CacheStats(entries: 0, bytes: 0, outcomes: [:]))
            var headers = HTTPFields()
            headers[.eTag] = "\"v1\""
            let withHeaders = storeSample(key: "h", headers: headers, bodySize: 20)
            try await store.save(withHeaders)
            try await store.save(storeSample(key: "plain", bodySize: 5))
            try await store.record(.hit)
            try await store.record(.miss)
            try await store.record(.hit)
            try await store.record(.stale)
            let stats = try await store.stats()
            #expect(withHeaders.size == 20 + "ETag".utf8.count + "\"v1\"".utf8.count + 4)
            #expect(stats == CacheStats(entries: 2, bytes: withHeaders.size + 5,
                                        outcomes: ["hit": 2, "miss": 1, "stale": 1]))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func concurrentUseFromManyTasks(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        try await store.save(storeSample(key: "k\(index % 10)", variant: "v\(index)", bodySize: 1))
                        _ = try await store.variants(forKey: "k\(index % 10)")
                        try await store.record(.miss)
                    }
                }
                try await group.waitForAll()
            }
            let stats = try await store.stats()
            #expect(stats == CacheStats(entries: 40, bytes: 40, outcomes: ["miss": 40]))
            #expect(try await store.variants(forKey: "k3").count == 4)
        }
    }
}
