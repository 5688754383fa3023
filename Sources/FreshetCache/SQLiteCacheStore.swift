import Foundation
import Freshet
import GRDB
import HTTPTypes
import Synchronization

/// A ``CacheStore`` kept in a SQLite database — any GRDB `DatabaseWriter` — shared by every
/// process that opens the file, with a bounded memory tier in front.
///
/// **Your database, its tables.** The store does not decide where the database lives or how it
/// is opened: the app owns its database and hands the store a writer, as in GRDB's app pattern.
/// The cache's tables come from its own migrations: register them in the app's migrator with
/// ``registerMigrations(in:)`` (next to the app's own), or run them alone with ``migrate(_:)``.
/// Open the writer in WAL mode (a `DatabasePool`) so that reads never wait for writes.
///
/// **Two tiers.** Lookups are answered from memory (a ``memoryBytes`` LRU of whole variant lists,
/// absences included) and go to SQLite only for a key the tier does not know. A hit never waits
/// on a write and never writes: its LRU stamp and the outcome counters are kept in memory and
/// written in batches — with the next stored responses, after ``flushInterval``, and by
/// ``flush()``. A use rewrites an entry's stamp at most once per ``stampInterval``. Stored
/// responses are written behind the caller with group commit: the writer starts
/// ``gatherDelay`` after the first change that finds it idle (at once on ``flush()``), and one
/// transaction takes every response queued by then, or while the previous one was being
/// written, and evicts once. Removals wait for their write.
///
/// **Durability.** What was stored is on disk once ``flush()`` returns; the apps and the proxy
/// flush when they exit, so the next run finds it and ``stats()`` (which flushes first) is exact.
/// A process killed mid-write loses at most its last unwritten batch; SQLite's write-ahead log
/// keeps the file whole. Several processes may share the file; each one's memory tier sees the
/// others' writes for keys it has not looked up yet.
///
/// On disk, responses live in the `cache_entry` table (one row per key and variant; header fields
/// as their HTTP/1 field lines, order, duplicates and spelling kept) and the outcome
/// counters in `cache_outcome`. Once a batch is written, the least recently used rows are evicted
/// until the stored bytes (``CachedResponse/size``) fit in ``maxBytes``. Times are stored as Unix
/// seconds (`REAL`), so they come back to within a microsecond.
public final class SQLiteCacheStore: CacheStore, MemoryLookup, WriteBehindStore {
    /// The database holding the tables.
    public let writer: any DatabaseWriter
    /// The size cap in bytes (sum of ``CachedResponse/size``). A response larger than this is
    /// never stored.
    public let maxBytes: Int
    /// The most the memory tier holds, in bytes.
    public let memoryBytes: Int
    /// How long LRU stamps and outcome counters may wait in memory before they are written.
    public let flushInterval: Duration
    /// How stale an entry's LRU stamp on disk may grow before a use rewrites it (60 s by default):
    /// a use within this interval of the stamp writes nothing, so eviction follows the order of
    /// use to within the interval (as Varnish's `lru_interval` does for its LRU lists). A page of
    /// 500 answers used again within the minute costs no write; `.zero` stamps every use.
    public let stampInterval: Duration
    /// How long a change that finds the writer idle waits for others before the writer starts
    /// (10 ms by default; ``flush()`` does not wait for it): a fan-out's answers arrive a few at
    /// a time, and a transaction each wrote every b-tree page they touch again (a cold
    /// `freshet hn --limit 500`: 4,300–4,900 `pwrite`s and 290–330 ms of CPU without it,
    /// 1,800–2,000 and 240–300 ms with it).
    public let gatherDelay: Duration
    private let stampSeconds: Double

    private let state: Mutex<State>

    /// Creates a store on `writer`, whose database has the cache's tables (see
    /// ``registerMigrations(in:)``), keeping at most `maxBytes` (100 MiB by default) on disk and
    /// `memoryBytes` (16 MiB by default, never more than `maxBytes`) in memory.
    public init(writer: any DatabaseWriter, maxBytes: Int = 100 * 1024 * 1024, memoryBytes: Int = 16 * 1024 * 1024,
                flushInterval: Duration = .seconds(2), stampInterval: Duration = .seconds(60),
                gatherDelay: Duration = .milliseconds(10)) {
        self.writer = writer
        self.gatherDelay = max(.zero, gatherDelay)
        self.maxBytes = maxBytes
        self.memoryBytes = min(memoryBytes, maxBytes)
        self.flushInterval = flushInterval
        self.stampInterval = max(.zero, stampInterval)
        let (seconds, attoseconds) = self.stampInterval.components
        stampSeconds = Double(seconds) + Double(attoseconds) * 1e-18
        state = Mutex(State(memory: MemoryTier(capacity: min(memoryBytes, maxBytes))))
    }

    // MARK: - CacheStore

    /// The variants the memory tier holds for `key`, marked as used; `nil` when it does not
    /// know the key. Never suspends, never touches the disk.
    public func variantsInMemory(forKey key: String) -> [CachedResponse]? {
        let now = Date().timeIntervalSince1970
        let known = state.withLock { state -> (variants: [CachedResponse]?, arm: Bool) in
            guard let variants = state.memory.variants(forKey: key) else { return (nil, false) }
            return (variants, variants.isEmpty ? false : state.touch(key, now: now, interval: stampSeconds))
        }
        if known.arm { armFlushTimer() }
        return known.variants
    }

    /// The bytes the memory tier holds now.
    public var memoryTierBytes: Int { state.withLock { $0.memory.bytes } }

    /// Counts one answer of the cache (in memory; written with the next batch). Never suspends.
    public func count(_ outcome: CacheOutcome) {
        let arm = state.withLock { state -> Bool in
            state.writes.count(outcome)
            return state.writes.armsTimer()
        }
        if arm { armFlushTimer() }
    }

    /// Every stored variant for `key`, most recently stored first; marks them as used.
    public func variants(forKey key: String) async throws -> [CachedResponse] {
        if let variants = variantsInMemory(forKey: key) { return variants }
        let variants = try await read([key])[key] ?? []
        let now = Date().timeIntervalSince1970
        let arm = state.withLock { state in variants.isEmpty ? false : state.touch(key, now: now, interval: stampSeconds) }
        if arm { armFlushTimer() }
        return variants
    }

    /// Reads the keys the memory tier does not know in a few database reads, so that their
    /// lookups are answered from memory: a page of 500 stories costs one read per core, not 500.
    /// The reads run at once on a `DatabasePool`'s readers; on one connection only their SQL
    /// waits its turn, each read's rows being made responses on its own task. Marks nothing as used.
    public func preload(keys: [String]) async throws {
        let unknown = state.withLock { state in Array(Set(keys.filter { !state.memory.knows($0) })) }
        guard !unknown.isEmpty else { return }
        let reads = min(Self.preloadReads, max(1, unknown.count / Self.preloadMinimumKeys))
        let size = min(Self.preloadBatch, (unknown.count + reads - 1) / reads)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for start in stride(from: 0, to: unknown.count, by: size) {
                let batch = Array(unknown[start..<min(start + size, unknown.count)])
                group.addTask { _ = try await self.read(batch) }
            }
            try await group.waitForAll()
        }
    }

    /// The most keys one preload read asks for (SQLite's default limit of bound parameters is 32,766).
    static let preloadBatch = 500
    /// How many reads a big preload is split into: one per core, at most four (GRDB's pool has
    /// five readers by default).
    package static let preloadReads = max(1, min(4, ProcessInfo.processInfo.activeProcessorCount))
    /// The fewest keys worth a read of their own.
    package static let preloadMinimumKeys = 64

    /// Reads `keys` from disk, replays the writes not yet committed over them, and keeps the
    /// result in the memory tier when nothing changed meanwhile.
    private func read(_ keys: [String]) async throws -> [String: [CachedResponse]] {
        guard !keys.isEmpty else { return [:] }
        // Read the queue before the disk, so no change can be missed; replaying a committed one
        // again changes nothing.
        let (unwritten, sequence, evictions) = state.withLock { ($0.writing + $0.queued, $0.sequence, $0.evictions) }
        let read = try await writer.read { db -> [StoredRow] in
            let columns = "SELECT \(StoredColumn.list) FROM cache_entry"
            // One key's statement is kept prepared; a batch's depends on its size. (Its question
            // marks are not GRDB's `databaseQuestionMarks(count:)`, unspecialized generic code
            // that took ~4,000 instructions a key.)
            let statement = keys.count == 1
                ? try db.cachedStatement(sql: "\(columns) WHERE key = ?")
                : try db.makeStatement(sql: "\(columns) WHERE key IN (\(String(repeating: "?,", count: keys.count - 1))?)")
            var rows: [StoredRow] = []
            // Arguments made from existentials: GRDB's initializer for a sequence of one type
            // applies a key path to each (~800 instructions a key).
            let arguments = StatementArguments(keys.map { $0 as (any DatabaseValueConvertible)? })
            // A cursor's row reads each column from the statement: no copy of the row first.
            let cursor = try Row.fetchCursor(statement, arguments: arguments)
            while let row = try cursor.next() { rows.append(StoredRow(row)) }
            return rows
        }
        // Rows made responses here, not on the database's queue: the reads of a preload's parts
        // wait for one another on one connection (a command's `DatabaseQueue`), and decoding the
        // header fields is about half of a row's time there (~17,000 of a Hacker News item's
        // ~35,000 instructions), which the parts now do side by side.
        // With each key's oldest LRU stamp, so that a use within `stampInterval` of it writes nothing.
        var stamps: [String: Double] = [:]
        var rows: [(response: CachedResponse, storedAt: Double)] = []
        rows.reserveCapacity(read.count)
        for row in read {
            guard let response = row.response() else { continue }
            // One lookup of the key for its first row (the usual one), two for a later variant.
            if let earlier = stamps.updateValue(row.lastAccess, forKey: response.key), earlier < row.lastAccess {
                stamps[response.key] = earlier
            }
            rows.append((response, row.storedAt))
        }
        // A key's variants newest first. Sorted here, only when a key has several: SQLite's
        // `ORDER BY stored_at` sorted every row read, blobs and all (~5,000 instructions a row).
        if stamps.count < rows.count { rows.sort { $0.storedAt > $1.storedAt } }
        // Closures, not key paths: a key path as a function is applied through the runtime.
        var found = Dictionary(grouping: rows.map { $0.response }, by: { $0.key })
        // With nothing unwritten, what was read is the answer (a missing key reads as none): no
        // lookup and store of every key (~3,000 instructions a key of a page of 500).
        if !unwritten.isEmpty {
            for key in keys {
                var variants = found[key] ?? []
                for item in unwritten { item.operation.apply(to: &variants, key: key) }
                found[key] = variants
            }
        }
        state.withLock { state in
            // Kept only when no change made since the disk was read can concern the key, and no
            // eviction removed rows meanwhile (they may be among those just read).
            guard state.committed <= sequence, state.evictions == evictions else { return }
            let later = (state.writing + state.queued).filter { $0.sequence > sequence }
            for key in keys where !later.contains(where: { $0.operation.concerns(key) }) {
                state.memory.put(found[key] ?? [], forKey: key, stamped: stamps[key] ?? -.infinity)
            }
        }
        return found
    }

    /// Stores `response`, replacing the row with the same key and variant, then evicts least
    /// recently used rows until the store fits in ``maxBytes``. A response larger than
    /// ``maxBytes`` is not stored, and the older copy of its variant is removed.
    ///
    /// Returns once the response is queued (and served from memory); it is written with the next
    /// batch.
    public func save(_ response: CachedResponse) async throws {
        saveWithoutWaiting(response)
    }

    /// A response freshened by a `304` within ``stampInterval`` of the key's last write is kept
    /// in memory alone (a revalidation per request, `freshet proxy --revalidate always`, would
    /// otherwise rewrite the row each time); its copy on disk is then at most that much older,
    /// until ``flush()`` writes it.
    public func freshenWithoutWaiting(_ response: CachedResponse) {
        let now = Date().timeIntervalSince1970
        let size = response.size
        let kept = state.withLock { $0.memory.freshen(with: response, now: now, interval: stampSeconds, size: size) }
        if !kept { saveWithoutWaiting(response) }
    }

    /// ``save(_:)`` without suspending (it never waits for the disk).
    public func saveWithoutWaiting(_ response: CachedResponse) {
        if response.size <= maxBytes {
            let now = Date().timeIntervalSince1970
            enqueue(.save(response)) { $0.update(with: response, stampedAt: now) }
        } else {
            enqueue(.removeVariant(key: response.key, variant: response.variant)) {
                $0.remove(key: response.key, variant: response.variant)
            }
        }
    }

    /// Removes every variant of `key`.
    public func remove(key: String) async throws {
        enqueue(.removeKey(key)) { $0.remove(key: key) }
        try await flush()
    }

    /// Removes every entry whose display URL equals `url`.
    public func remove(url: String) async throws {
        enqueue(.removeURL(url)) { $0.remove(url: url) }
        try await flush()
    }

    /// Removes every stored response and resets the outcome counters.
    public func removeAll() async throws {
        state.withLock { $0.writes.outcomes = [:] }
        enqueue(.removeAll) { $0.removeAll() }
        try await flush()
    }

    /// Adds one to the counter of `outcome` (in memory; written with the next batch).
    public func record(_ outcome: CacheOutcome) async throws {
        count(outcome)
    }

    /// The number of stored responses, their bytes and the outcome counters, exact: what is
    /// waiting in memory is written first.
    public func stats() async throws -> CacheStats {
        try await flush()
        return try await writer.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT count(*), coalesce(sum(size), 0) FROM cache_entry")
            var outcomes: [String: Int] = [:]
            for counter in try Row.fetchAll(db, sql: "SELECT outcome, count FROM cache_outcome") {
                outcomes[counter[0]] = counter[1]
            }
            return CacheStats(entries: row?[0] ?? 0, bytes: row?[1] ?? 0, outcomes: outcomes)
        }
    }

    /// Writes everything waiting in memory — queued responses and removals, responses freshened
    /// in memory alone (``freshenWithoutWaiting(_:)``), LRU stamps, outcome counters — and
    /// returns once it is committed. Call it before the process exits.
    /// - Throws: the database's error when the last batch could not be written.
    public func flush() async throws {
        for response in state.withLock({ $0.memory.takeUnsaved() }) { saveWithoutWaiting(response) }
        if !state.withLock({ !$0.writes.isRunning && $0.isIdle }) { await runNow() }
        if let failure = state.withLock({ state -> String? in defer { state.lastFailure = nil }; return state.lastFailure }) {
            throw SQLiteCacheStoreError(reason: failure)
        }
    }

    // MARK: - Writing behind

    /// One queued change, in the order it was made.
    struct Queued {
        var sequence: UInt64
        var tick: UInt64
        var operation: Operation
    }

    enum Operation {
        case save(CachedResponse)
        case removeVariant(key: String, variant: String)
        case removeKey(String)
        case removeURL(String)
        case removeAll

        /// Whether it may change what is stored for `key`.
        func concerns(_ key: String) -> Bool {
            switch self {
            case .save(let response): response.key == key
            case .removeVariant(let other, _), .removeKey(let other): other == key
            case .removeURL, .removeAll: true
            }
        }

        /// Applies the change to `variants`, the list stored for `key`.
        func apply(to variants: inout [CachedResponse], key: String) {
            switch self {
            case .save(let response) where response.key == key:
                variants.removeAll { $0.variant == response.variant }
                variants.insert(response, at: 0)
            case .removeVariant(key, let variant):
                variants.removeAll { $0.variant == variant }
            case .removeKey(key), .removeAll:
                variants = []
            case .removeURL(let url):
                variants.removeAll { $0.url == url }
            default:
                break
            }
        }
    }

    struct State {
        var memory: MemoryTier
        /// Changes not yet taken by the writer, and those it is writing now.
        var queued: [Queued] = []
        var writing: [Queued] = []
        var sequence: UInt64 = 0
        /// The sequence number of the last change written (or given up).
        var committed: UInt64 = 0
        /// How many written batches evicted rows: a read that saw rows an eviction removed since
        /// must not keep them in memory.
        var evictions: UInt64 = 0
        /// Keys used since the last batch, with the tick of their last use; outcome counters;
        /// the writer's runs.
        var writes = WriteBehind<UInt64>()
        var lastFailure: String?

        var isIdle: Bool { queued.isEmpty && writes.isEmpty }

        /// Notes a use of `key` at `now` (Unix seconds) — unless its stamp on disk is less than
        /// `interval` seconds old; returns whether the caller must arm the flush timer.
        mutating func touch(_ key: String, now: Double, interval: Double) -> Bool {
            if let stamped = memory.stamped(key), now - stamped < interval { return false }
            writes.touch(key, at: memory.clock)
            return writes.armsTimer()
        }
    }

    /// Queues `operation`, applies `memory` to the memory tier, and makes sure a writer runs
    /// within ``gatherDelay`` (at once when a caller flushes).
    private func enqueue(_ operation: Operation, memory change: (inout MemoryTier) -> Void) {
        let start = state.withLock { state -> Bool in
            state.sequence += 1
            state.queued.append(Queued(sequence: state.sequence, tick: state.memory.tick(), operation: operation))
            change(&state.memory)
            return state.writes.requestRunSoon()
        }
        if start { startDelayedRun(after: gatherDelay) }
    }

    // MARK: - WriteBehindStore

    /// Runs `body` on the stamps, counters and runs of the writer, under the store's lock.
    package func withWriteBehind<Result: Sendable>(_ body: (inout WriteBehind<UInt64>) -> Result) -> Result {
        state.withLock { body(&$0.writes) }
    }

    /// The flush timer: writes what waits (stamps and counters of hits), unless nothing does.
    package func flushTimerFired() async {
        if !state.withLock({ $0.isIdle }) { startRun() }
    }

    /// One run of the writer: takes everything waiting, writes it in one transaction, and repeats
    /// until nothing waits. (A change made after the last look asks for another run.)
    package func writeBehind() async {
        while true {
            let next = state.withLock { state -> Batch? in
                guard !state.isIdle else { return nil }
                state.writing = state.queued
                state.queued = []
                return Batch(changes: state.writing, touched: state.writes.takeStamps(),
                             outcomes: state.writes.takeOutcomes())
            }
            guard let batch = next else { return }
            let maxBytes = maxBytes
            // The batch stamps its rows at this time or later.
            let writtenAt = Date().timeIntervalSince1970
            do {
                let evicted = try await writer.write { db in try batch.write(db, maxBytes: maxBytes) }
                state.withLock { state in
                    state.committed = batch.changes.last?.sequence ?? state.committed
                    state.writing = []
                    state.memory.noteStamped(batch.touched.keys, at: writtenAt)
                    for (key, variant) in evicted { state.memory.remove(key: key, variant: variant) }
                    if !evicted.isEmpty { state.evictions &+= 1 }
                }
            } catch {
                // The disk refused (full, read-only, damaged): the batch is lost, the memory tier
                // keeps answering, and the next flush() reports it.
                state.withLock { state in
                    state.committed = batch.changes.last?.sequence ?? state.committed
                    state.writing = []
                    state.lastFailure = "\(error)"
                }
            }
        }
    }

    /// What one transaction writes.
    struct Batch {
        var changes: [Queued]
        var touched: [String: UInt64]
        var outcomes: [CacheOutcome: Int]

        /// Writes the batch; returns the (key, variant) pairs evicted to fit `maxBytes`.
        func write(_ db: Database, maxBytes: Int) throws -> [(String, String)] {
            // Stamps follow the order of use in memory, after everything already on disk.
            let latest = try Double.fetchOne(db, sql: "SELECT max(last_access) FROM cache_entry") ?? 0
            var stamp = max(Date().timeIntervalSince1970, latest.nextUp)
            var stamps: [UInt64: Double] = [:]
            for tick in (changes.map(\.tick) + touched.values).sorted() {
                stamps[tick] = stamp
                stamp = stamp.nextUp
            }
            var saved = false
            for change in changes {
                switch change.operation {
                case .save(let response):
                    let at = stamps[change.tick] ?? stamp
                    try db.cachedStatement(sql: """
                        INSERT OR REPLACE INTO cache_entry
                            (key, variant, url, status, request_time, response_time, stored_at, last_access,
                             size, headers, body)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """).execute(arguments: [
                            response.key, response.variant, response.url, response.status,
                            response.requestTime.timeIntervalSince1970, response.responseTime.timeIntervalSince1970,
                            at, at, response.size, try HeaderCoding.encode(response.headers), response.body,
                        ])
                    saved = true
                case .removeVariant(let key, let variant):
                    try db.execute(sql: "DELETE FROM cache_entry WHERE key = ? AND variant = ?", arguments: [key, variant])
                case .removeKey(let key):
                    try db.execute(sql: "DELETE FROM cache_entry WHERE key = ?", arguments: [key])
                case .removeURL(let url):
                    try db.execute(sql: "DELETE FROM cache_entry WHERE url = ?", arguments: [url])
                case .removeAll:
                    try db.execute(sql: "DELETE FROM cache_entry")
                    try db.execute(sql: "DELETE FROM cache_outcome")
                }
            }
            let touch = try db.cachedStatement(sql: "UPDATE cache_entry SET last_access = max(last_access, ?) WHERE key = ?")
            for (key, tick) in touched {
                try touch.execute(arguments: [stamps[tick] ?? stamp, key])
            }
            let count = try db.cachedStatement(sql: """
                INSERT INTO cache_outcome (outcome, count) VALUES (?, ?)
                ON CONFLICT (outcome) DO UPDATE SET count = count + excluded.count
                """)
            for (outcome, added) in outcomes where added > 0 {
                try count.execute(arguments: [outcome.rawValue, added])
            }
            return saved ? try SQLiteCacheStore.evict(db, maxBytes: maxBytes) : []
        }
    }

    // MARK: - Helpers

    /// Deletes least recently used rows until the total size is at most `maxBytes`; returns them.
    ///
    /// The total is `cache_size`'s, kept by triggers in the transaction of each change (the
    /// `cache-v2` migration), so a batch does not sum the whole table: that scan took 2.7 ms
    /// with 40,000 rows, in every batch that saved.
    static func evict(_ db: Database, maxBytes: Int, recounted: Bool = false) throws -> [(String, String)] {
        guard var total = try Int.fetchOne(db, sql: "SELECT bytes FROM cache_size"), total >= 0 || recounted else {
            guard !recounted else { return [] }
            try CacheSchema.recount(db)
            return try evict(db, maxBytes: maxBytes, recounted: true)
        }
        guard total > maxBytes else { return [] }
        var victims: [(rowid: Int64, key: String, variant: String)] = []
        let cursor = try Row.fetchCursor(db, sql: "SELECT rowid, size, key, variant FROM cache_entry ORDER BY last_access, rowid")
        while total > maxBytes, let row = try cursor.next() {
            victims.append((row[0], row[2], row[3]))
            total -= row[1] as Int
        }
        if total > maxBytes, !recounted {
            // More counted than is stored: a change the triggers did not see (a connection with
            // `recursive_triggers` on, a hand edit). Count again before choosing what goes.
            try CacheSchema.recount(db)
            return try evict(db, maxBytes: maxBytes, recounted: true)
        }
        let delete = try db.cachedStatement(sql: "DELETE FROM cache_entry WHERE rowid = ?")
        for victim in victims {
            try delete.execute(arguments: [victim.rowid])
        }
        return victims.map { ($0.key, $0.variant) }
    }

    /// A row as read, its header fields not yet decoded.
    private struct StoredRow {
        var key: String, variant: String, url: String, status: Int
        var requestTime: Double, responseTime: Double, lastAccess: Double, storedAt: Double
        var headers: Data?, body: Data?

        init(_ row: Row) {
            key = row[StoredColumn.key.rawValue]
            variant = row[StoredColumn.variant.rawValue]
            url = row[StoredColumn.url.rawValue]
            status = row[StoredColumn.status.rawValue]
            requestTime = row[StoredColumn.requestTime.rawValue]
            responseTime = row[StoredColumn.responseTime.rawValue]
            lastAccess = row[StoredColumn.lastAccess.rawValue]
            storedAt = row[StoredColumn.storedAt.rawValue]
            headers = row[StoredColumn.headers.rawValue]
            body = row[StoredColumn.body.rawValue]
        }

        /// The response, or nil when its header column cannot be read.
        func response() -> CachedResponse? {
            guard let fields = HeaderCoding.decode(headers) else { return nil }
            return CachedResponse(key: key, variant: variant, url: url, status: status, headers: fields,
                                  body: body ?? Data(), requestTime: Date(timeIntervalSince1970: requestTime),
                                  responseTime: Date(timeIntervalSince1970: responseTime))
        }
    }

    /// The columns a read selects, in this order; rows are read by position (GRDB's lookup by
    /// name lowercases every column's name for each value it finds: 27,000 times in a page of 500
    /// stories).
    private enum StoredColumn: Int {
        case key, variant, url, status, requestTime, responseTime, headers, body, lastAccess, storedAt

        static let list = "key, variant, url, status, request_time, response_time, headers, body, last_access, stored_at"
    }
}

/// The database refused a batch of the HTTP cache's writes.
public struct SQLiteCacheStoreError: Error, CustomStringConvertible {
    /// SQLite's reason.
    public var reason: String
    /// One line.
    public var description: String { "the HTTP cache could not write to its database: \(reason)" }
}

extension SQLiteCacheStore {
    /// The identifiers of the cache's migrations, in order. An app's own migrations may not
    /// reuse them.
    public static let migrationNames = ["cache-v1", "cache-v2", "cache-v3"]

    /// Registers the migrations that build the cache's tables in an app's migrator (GRDB's
    /// pattern for a library that keeps tables in its user's database). They are independent of
    /// the app's own migrations, which may come before or after them.
    public static func registerMigrations(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("cache-v1") { db in
            try CacheSchema.createVersion1(db)
        }
        migrator.registerMigration("cache-v2") { db in
            try CacheSchema.createVersion2(db)
        }
        migrator.registerMigration("cache-v3") { db in
            try CacheSchema.mergeInsertTriggers(db)
        }
    }

    /// Runs the cache's migrations alone on `writer`: for a database that only the cache uses,
    /// or whose app runs its own migrator separately. Applied migrations are skipped, and the
    /// app's migrations, unknown to this migrator, are left alone. Two processes must not
    /// migrate one new file at the same moment (an app opening its database under a file lock
    /// does it for both).
    public static func migrate(_ writer: any DatabaseWriter) throws {
        var migrator = DatabaseMigrator()
        registerMigrations(in: &migrator)
        try migrator.migrate(writer)
    }
}

/// The tables of the HTTP cache, created by the `cache-v1`, `cache-v2` and `cache-v3` migrations.
enum CacheSchema {
    /// `cache_size`: one row, the stored responses' count and bytes, kept by triggers in the
    /// transaction of every change to `cache_entry`, so that several processes sharing the file
    /// agree on it and eviction reads it instead of summing the table. An `INSERT OR REPLACE`
    /// (this store's, or an older Freshet's on the same file) deletes the row it replaces without
    /// firing a delete trigger (unless `recursive_triggers` is on), so what it replaces is taken
    /// off before the insert.
    static func createVersion2(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE cache_size (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                entries INTEGER NOT NULL,
                bytes INTEGER NOT NULL
            );
            CREATE TRIGGER cache_size_replace BEFORE INSERT ON cache_entry BEGIN
                UPDATE cache_size SET
                    entries = entries - (SELECT count(*) FROM cache_entry WHERE key = NEW.key AND variant = NEW.variant),
                    bytes = bytes - coalesce((SELECT size FROM cache_entry WHERE key = NEW.key AND variant = NEW.variant), 0);
            END;
            CREATE TRIGGER cache_size_insert AFTER INSERT ON cache_entry BEGIN
                UPDATE cache_size SET entries = entries + 1, bytes = bytes + NEW.size;
            END;
            CREATE TRIGGER cache_size_delete AFTER DELETE ON cache_entry BEGIN
                UPDATE cache_size SET entries = entries - 1, bytes = bytes - OLD.size;
            END;
            CREATE TRIGGER cache_size_update AFTER UPDATE OF size ON cache_entry BEGIN
                UPDATE cache_size SET bytes = bytes - OLD.size + NEW.size;
            END;
            """)
        try recount(db)
    }

    /// `cache-v3`: the two triggers of an insert (the replaced row's count and size taken off
    /// before, the new row's added after) made one that looks the replaced row up once and
    /// updates `cache_size` once: 36k instructions of triggers a stored response instead of 62k
    /// (SQLite's own count, 2,000 prepared inserts). If the insert fails, SQLite undoes the trigger's
    /// update with the statement's other changes.
    static func mergeInsertTriggers(_ db: Database) throws {
        try db.execute(sql: """
            DROP TRIGGER cache_size_replace;
            DROP TRIGGER cache_size_insert;
            CREATE TRIGGER cache_size_insert BEFORE INSERT ON cache_entry BEGIN
                UPDATE cache_size SET (entries, bytes) = (
                    SELECT cache_size.entries + 1 - count(*), cache_size.bytes + NEW.size - coalesce(sum(size), 0)
                    FROM cache_entry WHERE key = NEW.key AND variant = NEW.variant);
            END;
            """)
    }

    /// Sets `cache_size` from the table itself.
    static func recount(_ db: Database) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO cache_size (id, entries, bytes) SELECT 1, count(*), coalesce(sum(size), 0) FROM cache_entry")
    }

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
