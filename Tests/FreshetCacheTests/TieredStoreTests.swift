import Dispatch
import Foundation
import Freshet
import FreshetCache
import FreshetSimulator
import FreshetTestSupport
import GRDB
import HTTPTypes
import Synchronization
import Testing

/// Holds the database's writer inside a write transaction until released (or until `limit`
/// seconds pass, so a test that waits on the writer fails instead of hanging).
private final class WriterGate: Sendable {
    private let release = DispatchSemaphore(value: 0)
    private let timedOut = Mutex(false)

    /// Starts a write transaction on `database` that blocks; returns once it holds the writer.
    /// The transaction blocks a Dispatch thread, never one of Swift's cooperative threads (there
    /// are as many as cores: two tests holding writers at once would leave none to release them).
    func hold(_ database: DatabasePool, limit: Double = 30) async -> Task<Void, Never> {
        let (ended, finish) = AsyncStream.makeStream(of: Void.self)
        await withCheckedContinuation { (entered: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { [self] in
                database.writeWithoutTransaction { _ -> Void in
                    entered.resume()
                    if release.wait(timeout: .now() + limit) == .timedOut {
                        timedOut.withLock { $0 = true }
                    }
                }
                finish.finish()
            }
        }
        return Task { for await _ in ended {} }
    }

    /// Lets the writer go.
    func open() { release.signal() }

    /// Whether the hold ran out before ``open()``.
    var ranOut: Bool { timedOut.withLock { $0 } }
}

@Suite("SQLite cache store: memory tier and batched writes")
struct TieredStoreTests {
    @Test("Variants read back from disk come most recently stored first, by one key's read and by a batch read")
    func variantsFromDiskNewestFirst() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let database = try cacheDatabase(in: temporary.url)
        defer { try? database.close() }
        let writer = SQLiteCacheStore(writer: database)
        // Stored in an order that is neither the variants' nor the keys' (the table's own order).
        for (key, variant) in [("k", "a"), ("j", "y"), ("k", "b"), ("k", "c"), ("j", "x"), ("k", "d"), ("k", "b")] {
            try await writer.save(storeSample(key: key, variant: variant))
        }
        try await writer.flush()
        // New stores over the same file: an empty memory tier, so both read the disk.
        let single = SQLiteCacheStore(writer: database)
        #expect(try await single.variants(forKey: "k").map(\.variant) == ["b", "d", "c", "a"])
        let batch = SQLiteCacheStore(writer: database)
        try await batch.preload(keys: ["k", "j"])
        #expect(try await batch.variants(forKey: "k").map(\.variant) == ["b", "d", "c", "a"])
        #expect(try await batch.variants(forKey: "j").map(\.variant) == ["x", "y"])
    }

    @Test("A hit is answered, and a new response stored, while the database's writer is held busy")
    func hitWhileWriterIsBusy() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let database = try cacheDatabase(in: temporary.url)
        defer { try? database.close() }
        let store = SQLiteCacheStore(writer: database)
        try await withSimulator(.init()) { sim in
            let control = SimControl(sim)
            for name in ["held", "queued"] {
                try await control.script(name, headers: [("Cache-Control", "max-age=300")], body: #"{"n":"\#(name)"}"#)
            }
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport, middlewares: [CacheMiddleware(store: store)])
            #expect(try await client.send(Endpoint<Data>.raw("scripted", "held")).cache == .miss)
            try await store.flush()

            let gate = WriterGate()
            let holder = await gate.hold(database)
            let hit = try await client.send(Endpoint<Data>.raw("scripted", "held"))
            let miss = try await client.send(Endpoint<Data>.raw("scripted", "queued"))
            let again = try await client.send(Endpoint<Data>.raw("scripted", "queued"))
            #expect(!gate.ranOut, "an answer waited for the held writer")
            gate.open()
            await holder.value

            #expect(hit.cache == .hit)
            #expect(hit.value == Data(#"{"n":"held"}"#.utf8))
            #expect(miss.cache == .miss)
            #expect(again.cache == .hit, "a response waiting to be written is answered from memory")
            let stats = try await store.stats()
            #expect(stats.entries == 2)
            #expect(stats.outcomes == ["miss": 2, "hit": 2])
        }
    }

    @Test("APIClient.preload reads a page of stored answers into memory: the keys its lookups use, one read")
    func preloadAnswersFromMemory() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let names = (0..<20).map { "page-\($0)" }
        let endpoints = names.map { Endpoint<Data>.raw("scripted", $0) }
        try await withSimulator(.init()) { sim in
            let control = SimControl(sim)
            for name in names {
                try await control.script(name, headers: [("Cache-Control", "max-age=300")], body: #"{"n":"\#(name)"}"#)
            }
            do {
                let database = try cacheDatabase(in: temporary.url)
                defer { try? database.close() }
                let store = SQLiteCacheStore(writer: database)
                let client = APIClient(baseURL: sim.baseURL, transport: liveTransport, middlewares: [CacheMiddleware(store: store)])
                for endpoint in endpoints { #expect(try await client.send(endpoint).cache == .miss) }
                try await store.flush()
            }
            // A new process: its memory tier is empty, everything is on disk.
            let (database, lookups) = try countingLookups(in: temporary.url)
            defer { try? database.close() }
            let store = SQLiteCacheStore(writer: database)
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport, middlewares: [CacheMiddleware(store: store)])
            #expect(store.memoryTierBytes == 0)
            await client.preload(endpoints)
            #expect(store.memoryTierBytes > 0)
            #expect(lookups.total == 1, "20 keys took \(lookups.total) reads")
            // Gone from the disk: the answers below can only come from what the preload read.
            try await database.write { db in try db.execute(sql: "DELETE FROM cache_entry") }
            let before = try await control.stats().requests
            for (name, endpoint) in zip(names, endpoints) {
                let response = try await client.send(endpoint)
                #expect(response.cache == .hit)
                #expect(response.value == Data(#"{"n":"\#(name)"}"#.utf8))
            }
            #expect(try await control.stats().requests == before, "a lookup missed what the preload read")
            #expect(lookups.total == 1, "a lookup read the disk")
        }
    }

    @Test("A big preload is a few reads at once, and every key it asked for is answered from memory after")
    func bigPreloadInParallelReads() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let keys = (0..<300).map { "item-\($0)" }
        do {
            let database = try cacheDatabase(in: temporary.url)
            defer { try? database.close() }
            let store = SQLiteCacheStore(writer: database)
            for key in keys { try await store.save(storeSample(key: key, body: Data(key.utf8))) }
            try await store.flush()
        }
        let (database, lookups) = try countingLookups(in: temporary.url)
        defer { try? database.close() }
        let store = SQLiteCacheStore(writer: database)
        try await store.preload(keys: keys + ["absent"])
        let reads = min(SQLiteCacheStore.preloadReads, 301 / SQLiteCacheStore.preloadMinimumKeys)
        #expect(lookups.total == reads, "301 keys took \(lookups.total) reads")
        try await database.write { db in try db.execute(sql: "DELETE FROM cache_entry") }
        for key in keys {
            #expect(store.variantsInMemory(forKey: key)?.map(\.body) == [Data(key.utf8)], "\(key)")
        }
        #expect(store.variantsInMemory(forKey: "absent")?.isEmpty == true, "an absence is kept too")
        #expect(lookups.total == reads)
    }

    @Test("A preload keeps what is queued but not written: the disk's older copy never reaches memory")
    func preloadSeesQueuedWrites() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let database = try cacheDatabase(in: temporary.url)
        defer { try? database.close() }
        let older = storeSample(key: "k", body: Data("older".utf8))
        let newer = storeSample(key: "k", body: Data("newer".utf8))
        do {
            let writer = SQLiteCacheStore(writer: database)
            try await writer.save(older)
            try await writer.flush()
        }
        // A process that has not looked "k" up: its save waits behind the held writer.
        let store = SQLiteCacheStore(writer: database)
        let gate = WriterGate()
        let holder = await gate.hold(database)
        try await store.save(newer)
        try await store.preload(keys: ["k", "absent"])
        let held = store.variantsInMemory(forKey: "k")
        let absent = store.variantsInMemory(forKey: "absent")
        gate.open()
        await holder.value
        #expect(!gate.ranOut)
        #expect(held?.map(\.body) == [Data("newer".utf8)], "the disk's copy replaced the queued one")
        #expect(absent?.isEmpty == true, "an absence is kept too")
        try await store.flush()
        #expect(try await SQLiteCacheStore(writer: database).variants(forKey: "k").map(\.body) == [Data("newer".utf8)])
    }

    @Test("Counters and LRU stamps wait in memory and reach the disk in one batch, exactly, on flush")
    func countersAreWrittenInBatches() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let database = try cacheDatabase(in: temporary.url)
        defer { try? database.close() }
        let store = SQLiteCacheStore(writer: database, flushInterval: .seconds(3600), stampInterval: .zero)
        try await store.save(storeSample(key: "k", bodySize: 10))
        try await store.flush()
        let stampBefore = try await database.read { db in
            try Double.fetchOne(db, sql: "SELECT last_access FROM cache_entry WHERE key = 'k'")
        }
        for _ in 0..<200 {
            #expect(try await store.variants(forKey: "k").count == 1)
            try await store.record(.hit)
        }
        let onDisk = { try await database.read { db in
            (try Int.fetchOne(db, sql: "SELECT coalesce(sum(count), 0) FROM cache_outcome") ?? -1,
             try Double.fetchOne(db, sql: "SELECT last_access FROM cache_entry WHERE key = 'k'"))
        } }
        let waiting = try await onDisk()
        #expect(waiting.0 == 0, "no hit wrote to the database")
        #expect(waiting.1 == stampBefore)

        try await store.flush()
        let written = try await onDisk()
        #expect(written.0 == 200)
        #expect((written.1 ?? 0) > (stampBefore ?? 0), "the last use moved the LRU stamp")

        // A second process opening the file sees the same.
        let other = try cacheDatabase(in: temporary.url)
        defer { try? other.close() }
        #expect(try await SQLiteCacheStore(writer: other).stats().outcomes == ["hit": 200])
    }

    @Test("A use rewrites the LRU stamp only once the stamp on disk is older than the stamp interval")
    func stampsAtMostOncePerInterval() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let database = try cacheDatabase(in: temporary.url)
        defer { try? database.close() }
        let first = SQLiteCacheStore(writer: database, stampInterval: .seconds(600))
        try await first.save(storeSample(key: "recent", bodySize: 10))
        try await first.save(storeSample(key: "old", bodySize: 10))
        try await first.flush()
        let stamp = { (key: String) in
            try await database.read { db in try Double.fetchOne(db, sql: "SELECT last_access FROM cache_entry WHERE key = ?", arguments: [key]) }
        }
        let recentStamp = try await stamp("recent")
        // The same store: both were stamped when saved, moments ago.
        #expect(try await first.variants(forKey: "recent").count == 1)
        #expect(try await first.variants(forKey: "old").count == 1)
        try await first.flush()
        #expect(try await stamp("recent") == recentStamp, "a use within the interval wrote no stamp")

        // Another process, reading them from disk: one stamp made old, one as it was.
        let hourAgo = Date().timeIntervalSince1970 - 3600
        try await database.write { db in
            try db.execute(sql: "UPDATE cache_entry SET last_access = ? WHERE key = 'old'", arguments: [hourAgo])
        }
        let second = SQLiteCacheStore(writer: database, stampInterval: .seconds(600))
        #expect(try await second.variants(forKey: "recent").count == 1)
        #expect(try await second.variants(forKey: "old").count == 1)
        try await second.flush()
        #expect(try await stamp("recent") == recentStamp, "read from disk with a recent stamp: not rewritten")
        let moved = try #require(try await stamp("old"))
        #expect(moved > hourAgo + 3000, "a stamp older than the interval is rewritten by the use")
        #expect(moved > (recentStamp ?? .infinity), "and the use makes it the most recently used")

        // Used again: the stamp just written is recent now.
        #expect(try await second.variants(forKey: "old").count == 1)
        try await second.flush()
        #expect(try await stamp("old") == moved)
    }

    @Test("A response freshened by a 304 within the stamp interval of its write stays in memory until flush; past it, it is written")
    func freshenedWithinTheIntervalStaysInMemory() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let database = try cacheDatabase(in: temporary.url)
        defer { try? database.close() }
        for (interval, written) in [(Duration.seconds(600), false), (.zero, true)] {
            let store = SQLiteCacheStore(writer: database, stampInterval: interval)
            let key = "k\(interval.components.seconds)"
            let stored = storeSample(key: key)
            // Looked up first, as a miss is: the memory tier then holds the key.
            #expect(try await store.variants(forKey: key).isEmpty)
            store.saveWithoutWaiting(stored)
            var freshened = stored
            freshened.responseTime = stored.responseTime.addingTimeInterval(30)
            freshened.headers[.date] = "Tue, 14 Nov 2023 22:14:00 GMT"
            freshened.headers[HTTPField.Name("X-Freshened")!] = "by a 304"
            let before = store.memoryTierBytes
            store.freshenWithoutWaiting(freshened)
            await store.runNow()
            #expect(store.variantsInMemory(forKey: key) == [freshened], "memory answers with the freshened copy")
            #expect(store.memoryTierBytes == before - stored.size + freshened.size, "the tier counts the freshened copy's bytes")
            #expect(try await Self.responseTime(database, key: key) == (written ? freshened : stored).responseTime.timeIntervalSince1970,
                    written ? "past the interval the writer's run writes the freshened copy" : "within the interval the writer's runs leave the saved copy")
            try await store.flush()
            #expect(try await Self.responseTime(database, key: key) == freshened.responseTime.timeIntervalSince1970,
                    "flush writes the freshened copy, for the next process")
        }
    }

    @Test("A variant freshened in memory stays to be flushed when another variant of its key is saved")
    func freshenedVariantSurvivesASaveOfAnother() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let database = try cacheDatabase(in: temporary.url)
        defer { try? database.close() }
        let store = SQLiteCacheStore(writer: database, stampInterval: .seconds(600))
        #expect(try await store.variants(forKey: "k").isEmpty)
        let gzip = storeSample(key: "k", variant: "gzip"), identity = storeSample(key: "k", variant: "identity")
        store.saveWithoutWaiting(gzip)
        store.saveWithoutWaiting(identity)
        var freshened = gzip
        freshened.responseTime = gzip.responseTime.addingTimeInterval(30)
        store.freshenWithoutWaiting(freshened)
        store.saveWithoutWaiting(identity)
        await store.runNow()
        let responseTime = {
            try await database.read { db in
                try Double.fetchOne(db, sql: "SELECT response_time FROM cache_entry WHERE key = 'k' AND variant = 'gzip'")
            }
        }
        #expect(try await responseTime() == gzip.responseTime.timeIntervalSince1970)
        try await store.flush()
        #expect(try await responseTime() == freshened.responseTime.timeIntervalSince1970)
    }

    @Test("A 304 through the chain freshens the stored copy in memory, as the proxy's event loop does; flush writes it")
    func chainRevalidationFreshensInMemory() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let database = try cacheDatabase(in: temporary.url)
        defer { try? database.close() }
        let store = SQLiteCacheStore(writer: database, stampInterval: .seconds(600))
        try await withSimulator(.init()) { sim in
            try await SimControl(sim).script("tagged", headers: [("Cache-Control", "max-age=0"), ("ETag", #""v1""#)], body: #"{"n":1}"#)
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport, middlewares: [CacheMiddleware(store: store)])
            #expect(try await client.send(Endpoint<Data>.raw("scripted", "tagged")).cache == .miss)
            await store.runNow()
            let key = try #require(try await database.read { db in try String.fetchOne(db, sql: "SELECT key FROM cache_entry") })
            let saved = try #require(try await Self.responseTime(database, key: key))

            // Stale at once (max-age=0): the next request revalidates through the chain.
            #expect(try await client.send(Endpoint<Data>.raw("scripted", "tagged")).cache == .revalidated)
            await store.runNow()
            #expect(try await Self.responseTime(database, key: key) == saved, "the writer's run does not rewrite the row for a 304")
            try await store.flush()
            let flushed = try #require(try await Self.responseTime(database, key: key))
            #expect(flushed > saved, "flush writes the freshened copy")
        }
    }

    /// The response time of `key`'s row on disk.
    static func responseTime(_ database: DatabasePool, key: String) async throws -> Double? {
        try await database.read { db in
            try Double.fetchOne(db, sql: "SELECT response_time FROM cache_entry WHERE key = ?", arguments: [key])
        }
    }

    @Test("A batch of many responses is one transaction, and what was queued survives reopening after flush")
    func groupCommit() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        do {
            let database = try cacheDatabase(in: temporary.url)
            let store = SQLiteCacheStore(writer: database)
            let counter = CommitCounter()
            database.add(transactionObserver: counter, extent: .observerLifetime)
            let gate = WriterGate()
            let holder = await gate.hold(database)
            // Queued behind the held writer: they go in together once it is free.
            for index in 0..<300 {
                try await store.save(storeSample(key: "k\(index)", bodySize: 10))
            }
            gate.open()
            await holder.value
            try await store.flush()
            #expect(!gate.ranOut)
            #expect(counter.commits <= 2, "300 queued responses took \(counter.commits) transactions")
            try database.close()
        }
        let database = try cacheDatabase(in: temporary.url)
        defer { try? database.close() }
        let stats = try await SQLiteCacheStore(writer: database).stats()
        #expect(stats.entries == 300)
    }

    @Test("Responses saved one at a time while the writer is idle share one transaction; flush does not wait for the gather delay")
    func gatheredWrites() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let database = try cacheDatabase(in: temporary.url)
        defer { try? database.close() }
        // An hour: nothing but flush() can start this writer within the test.
        let store = SQLiteCacheStore(writer: database, gatherDelay: .seconds(3600))
        let counter = CommitCounter()
        database.add(transactionObserver: counter, extent: .observerLifetime)
        for index in 0..<5 {
            try await store.save(storeSample(key: "k\(index)", bodySize: 10))
            // A trip through another connection between saves: a writer started by the save
            // would have written it alone by now.
            _ = try await database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM cache_entry") }
        }
        try await store.flush()
        #expect(counter.commits == 1, "5 responses saved one at a time took \(counter.commits) transactions")
        let stored = try await database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM cache_entry") }
        #expect(stored == 5)
    }

    @Test("A saved response reaches the disk by itself once the gather delay is over, with nothing flushed")
    func gatheredWriteStartsAlone() async throws {
        let temporary = try StoreTemporaryDirectory()
        defer { temporary.remove() }
        let database = try cacheDatabase(in: temporary.url)
        defer { try? database.close() }
        // No flush timer within the test: only the gather delay's own start can write the row.
        let store = SQLiteCacheStore(writer: database, flushInterval: .seconds(3600), gatherDelay: .milliseconds(10))
        try await store.save(storeSample(key: "alone", bodySize: 10))
        let written = try await eventually(within: 30) {
            try await database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM cache_entry") } == 1
        }
        #expect(written, "the row was not written within 30 s")
    }
}

/// Counts committed transactions.
private final class CommitCounter: TransactionObserver, Sendable {
    private let count = Mutex(0)
    var commits: Int { count.withLock { $0 } }
    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { true }
    func databaseDidChange(with event: DatabaseEvent) {}
    func databaseDidCommit(_ db: Database) { count.withLock { $0 += 1 } }
    func databaseDidRollback(_ db: Database) {}
}
