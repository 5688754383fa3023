import Foundation
import Freshet
import FreshetCache
import Logging
import CoreMetrics
import PostgresNIO
import Synchronization

/// A `CacheStore` (FreshetCache) in PostgreSQL, shared by every process that connects to the
/// same database — a fleet of `freshet proxy` instances behind one load balancer — with an
/// in-memory tier per process in front of it.
///
/// **Shared.** Responses (every variant of a key), least-recently-used stamps and the outcome
/// counters live in the database's `freshet_cache_entry` and `freshet_cache_outcome` tables,
/// created and migrated by ``connect(_:logger:metrics:)``. A response stored by one instance is
/// a hit on every other. Past ``PostgresStoreConfiguration/maxBytes`` the least recently used
/// responses are evicted.
///
/// **Coherent.** Every change — a response stored, a key or URL removed — is announced with
/// PostgreSQL's `NOTIFY` on the channel `freshet_cache`; each instance `LISTEN`s and drops its
/// memory tier's copy. An unsafe request answered through one instance thus invalidates the URL
/// everywhere, within the time a notification takes.
///
/// **One fill per key.** Concurrent misses for one key, in this process or any other, wait for
/// the first to store its answer (``withFillLock(forKey:_:)``: an in-process queue, then
/// PostgreSQL's advisory lock on the key), for at most ``PostgresStoreConfiguration/fillWait``.
///
/// **When PostgreSQL goes away.** Every query is bounded by
/// ``PostgresStoreConfiguration/queryTimeout``. A store that loses its server says so once in its
/// log and keeps answering from the memory tier; lookups it cannot answer are misses (the cache
/// goes to the origin), writes are kept in memory only, and nothing throws. It reconnects with
/// backoff, says so, and starts its memory tier afresh (notifications may have been missed).
public final class PostgresCacheStore: CacheStore, MemoryLookup, CacheFillCoordinating, WriteBehindStore, Sendable {
    /// Where the store lives and its limits.
    public let configuration: PostgresStoreConfiguration
    /// The connection pool in use and its generation. A pool that lost its server is replaced
    /// by a new one once the server answers again (postgres-nio's pool backs off for up to a
    /// minute after failed connection attempts).
    let pool: Mutex<Pool>
    /// The pool in use.
    var client: PostgresClient { pool.withLock { $0.client } }
    let logger: Logger
    /// Tells this instance's notifications from the others'.
    let instance = UUID().uuidString.prefix(8).lowercased()
    let state: Mutex<State>
    let runner = Mutex<Task<Void, Never>?>(nil)
    /// Fills in progress in this process, by key.
    let localFills = FillLocks()
    let storeErrors: Counter?

    /// The channel of the invalidation notifications.
    static let channel = "freshet_cache"

    struct State {
        var memory: MemoryTier
        /// Whether the last query reached the server. While false nothing is asked of it.
        var healthy = true
        var recovering = false
        /// Counts the invalidations received, and the evictions that removed rows: a lookup
        /// keeps what it read only when none came while it was reading.
        var invalidations: UInt64 = 0
        /// This instance's writes not yet committed: a lookup does not keep what it read when
        /// one of them may concern its key.
        var localWrites = LocalWrites()
        /// Keys used since the last flush, with when each was last used (each hit's own time, for
        /// LRU), and outcomes counted since; the eviction runs (one at a time: two at once could
        /// each delete on the other's stale stamps), which write the stamps first.
        var writes = WriteBehind<Double>()
        /// Advisory locks held or being taken now (each holds a connection).
        var advisoryLocks = 0
        var listening = false
        var closed = false
        /// Set once ``connect(_:logger:metrics:)`` is done: failures before are its to report.
        var started = false
    }

    init(configuration: PostgresStoreConfiguration, logger: Logger, metrics: (any MetricsFactory)?) {
        self.configuration = configuration
        self.logger = logger
        pool = Mutex(Pool(configuration: configuration.clientConfiguration, generation: 0))
        state = Mutex(State(memory: MemoryTier(capacity: min(configuration.memoryBytes, configuration.maxBytes))))
        storeErrors = metrics.map {
            Counter(label: "freshet_cache_store_errors_total", dimensions: [], factory: $0)
        }
    }

    /// Connects to PostgreSQL, creates or migrates the cache's tables, and starts listening for
    /// other instances' invalidations; returns once all of that is done.
    /// - Parameters:
    ///   - configuration: the server, the database and the store's limits.
    ///   - logger: where the store says that it lost or regained its server (never a password).
    ///   - metrics: counts store errors as `freshet_cache_store_errors_total`, when given.
    /// - Throws: ``PostgresStoreError`` when the server cannot be reached or refuses the
    ///   connection (wrong password, no such database) within a few query timeouts.
    public static func connect(_ configuration: PostgresStoreConfiguration,
                               logger: Logger = Logger(label: "freshet.postgres"),
                               metrics: (any MetricsFactory)? = nil) async throws -> PostgresCacheStore {
        // One connection first: it fails with the server's reason (refused, wrong password, no
        // such database), where the pool would only retry until the timeout.
        let store = PostgresCacheStore(configuration: configuration, logger: logger, metrics: metrics)
        do {
            try await store.probe()
        } catch {
            throw PostgresStoreError.wrapping(error, server: configuration.description)
        }
        store.start()
        do {
            let startTimeout = max(configuration.queryTimeout * 3, .seconds(5))
            try await withDeadline(startTimeout) { try await PostgresSchema.migrate(store.client, logger: Self.quiet) }
            try await withDeadline(startTimeout) { await store.waitUntilListening() }
        } catch {
            await store.shutdown()
            throw PostgresStoreError.wrapping(error, server: configuration.description)
        }
        store.state.withLock { $0.started = true }
        return store
    }

    /// Writes what waits in memory (stamps, counters), stops listening and closes the
    /// connections. The store answers from memory alone afterwards.
    public func shutdown() async {
        try? await flush()
        state.withLock { $0.closed = true; $0.healthy = false }
        let task = runner.withLock { $0 }
        task?.cancel()
        await task?.value
        let running = pool.withLock { $0.task }
        running?.cancel()
        await running?.value
    }

    /// What postgres-nio is given to log into: nothing (its messages may hold queries and values;
    /// the store says what matters through ``logger``). Made once.
    static let quiet = Logger(label: "freshet.postgres.driver") { _ in SwiftLogNoOpLogHandler() }

    // MARK: - CacheStore

    /// The variants the memory tier holds for `key`, marked as used; `nil` when it does not know it.
    public func variantsInMemory(forKey key: String) -> [CachedResponse]? {
        let known = state.withLock { state -> (variants: [CachedResponse]?, arm: Bool) in
            guard let variants = state.memory.variants(forKey: key) else { return (nil, false) }
            guard !variants.isEmpty else { return (variants, false) }
            state.writes.touch(key, at: Date().timeIntervalSince1970)
            return (variants, state.writes.armsTimer(allowed: state.healthy))
        }
        if known.arm { armFlushTimer() }
        return known.variants
    }

    /// Counts one answer of the cache (in memory; written with the next flush).
    public func count(_ outcome: CacheOutcome) {
        let arm = state.withLock { state -> Bool in
            state.writes.count(outcome)
            return state.writes.armsTimer(allowed: state.healthy)
        }
        if arm { armFlushTimer() }
    }

    /// The bytes this instance's memory tier holds.
    public var memoryTierBytes: Int { state.withLock { $0.memory.bytes } }

    /// Every stored variant for `key`, most recently stored first: from the memory tier, else
    /// from PostgreSQL. Without a server, what the memory holds, or nothing.
    public func variants(forKey key: String) async throws -> [CachedResponse] {
        if let variants = variantsInMemory(forKey: key) { return variants }
        guard let before = state.withLock({ state -> (invalidations: UInt64, write: UInt64?)? in
            guard state.healthy else {
                // Without the server, the memory tier alone: an absence it now knows lets the
                // response fetched next be kept (until the server is back).
                state.memory.put([], forKey: key)
                return nil
            }
            return (state.invalidations, state.localWrites.beginRead(of: key))
        }) else { return [] }
        let variants: [CachedResponse]
        do {
            variants = try await query { client, logger in
                var found: [CachedResponse] = []
                let rows = try await client.query("""
                    SELECT key, variant, url, status, request_time, response_time, headers, body
                    FROM freshet_cache_entry WHERE key = \(key) ORDER BY stored_at DESC
                    """, logger: logger)
                for try await (key, variant, url, status, requestTime, responseTime, headers, body)
                        in rows.decode((String, String, String, Int, Double, Double, Data, Data).self) {
                    guard let fields = HeaderCoding.decode(headers) else { continue }
                    found.append(CachedResponse(
                        key: key, variant: variant, url: url, status: status, headers: fields, body: body,
                        requestTime: Date(timeIntervalSince1970: requestTime),
                        responseTime: Date(timeIntervalSince1970: responseTime)))
                }
                return found
            }
        } catch {
            if let write = before.write { state.withLock { _ = $0.localWrites.endRead(of: key, began: write) } }
            return []
        }
        let arm = state.withLock { state -> Bool in
            // Kept when nothing that may concern the key changed while it was read: no other
            // instance's invalidation, and no write of this one (a save whose row had not
            // committed when the query ran would be missing until the key is written again).
            if let write = before.write, state.localWrites.endRead(of: key, began: write),
               state.invalidations == before.invalidations {
                state.memory.put(variants, forKey: key)
            }
            guard !variants.isEmpty else { return false }
            state.writes.touch(key, at: Date().timeIntervalSince1970)
            return state.writes.armsTimer(allowed: state.healthy)
        }
        if arm { armFlushTimer() }
        return variants
    }

    /// Stores `response` (replacing its variant) and tells the other instances; returns once it
    /// is committed. A response larger than ``PostgresStoreConfiguration/maxBytes`` is not
    /// stored, and the older copy of its variant is removed. Without a server, the memory tier
    /// alone keeps it.
    public func save(_ response: CachedResponse) async throws {
        guard keep(response) else { return }
        await persist(response)
    }

    /// ``save(_:)`` without suspending: the memory tier holds `response` at once, the server
    /// gets it in a task.
    public func saveWithoutWaiting(_ response: CachedResponse) {
        guard keep(response) else { return }
        Task { await persist(response) }
    }

    /// How long after this instance wrote a key a response of it freshened by a `304` stays in
    /// memory alone (``freshenWithoutWaiting(_:)``), as the SQLite store's default `stampInterval`.
    static let freshenInterval = 60.0

    /// ``saveWithoutWaiting(_:)``, but within `freshenInterval` (60 s) of this instance's last write of
    /// the key the freshened copy stays in this instance's memory: a revalidation per request
    /// (`freshet proxy --revalidate always`) would otherwise write and notify the fleet on each
    /// `304`. The server's copy, and other instances', are then at most that much older, until
    /// ``flush()`` writes it.
    public func freshenWithoutWaiting(_ response: CachedResponse) {
        let now = Date().timeIntervalSince1970
        let size = response.size
        let kept = state.withLock { $0.memory.freshen(with: response, now: now, interval: Self.freshenInterval, size: size) }
        if !kept { saveWithoutWaiting(response) }
    }

    /// Puts `response` in the memory tier (or drops its variant when it is too large); whether
    /// the server should be told (then ``persist(_:)`` must follow: the write has begun).
    private func keep(_ response: CachedResponse) -> Bool {
        let fits = response.size <= configuration.maxBytes
        let now = Date().timeIntervalSince1970
        return beginWrite(response.key) { memory in
            if fits {
                memory.update(with: response, savedAt: now)
            } else {
                memory.remove(key: response.key, variant: response.variant)
            }
        }
    }

    /// Writes `response` (or removes its variant, when too large) on the server and tells the
    /// other instances; the write ``keep(_:)`` began ends.
    private func persist(_ response: CachedResponse) async {
        defer { state.withLock { $0.localWrites.end(response.key) } }
        let fits = response.size <= configuration.maxBytes
        let instance = instance
        do {
            if fits {
                let headers = try HeaderCoding.encode(response.headers)
                let now = Date().timeIntervalSince1970
                try await query { client, logger in
                    _ = try await client.query("""
                        WITH saved AS (
                            INSERT INTO freshet_cache_entry
                                (key, variant, url, status, request_time, response_time, stored_at, last_access, size, headers, body)
                            VALUES (\(response.key), \(response.variant), \(response.url), \(response.status),
                                    \(response.requestTime.timeIntervalSince1970), \(response.responseTime.timeIntervalSince1970),
                                    \(now), \(now), \(response.size), \(headers), \(response.body))
                            ON CONFLICT (key, variant) DO UPDATE SET
                                url = excluded.url, status = excluded.status, request_time = excluded.request_time,
                                response_time = excluded.response_time, stored_at = excluded.stored_at,
                                last_access = excluded.last_access, size = excluded.size, headers = excluded.headers,
                                body = excluded.body
                            RETURNING key)
                        SELECT pg_notify('freshet_cache', \(instance) || ' k ' || key) FROM saved
                        """, logger: logger).collect()
                }
                evictSoon()
            } else {
                try await query { client, logger in
                    _ = try await client.query("""
                        WITH gone AS (DELETE FROM freshet_cache_entry
                                      WHERE key = \(response.key) AND variant = \(response.variant))
                        SELECT pg_notify('freshet_cache', \(instance) || ' k ' || \(response.key))
                        """, logger: logger).collect()
                }
            }
        } catch {
            // Counted and logged by `query`; the memory tier keeps what it has.
        }
    }

    /// Removes every variant of `key`, here and on every instance.
    public func remove(key: String) async throws {
        guard beginWrite(key, { $0.remove(key: key) }) else { return }
        defer { state.withLock { $0.localWrites.end(key) } }
        let instance = instance
        try? await query { client, logger in
            _ = try await client.query("""
                WITH gone AS (DELETE FROM freshet_cache_entry WHERE key = \(key))
                SELECT pg_notify('freshet_cache', \(instance) || ' k ' || \(key))
                """, logger: logger).collect()
        }
    }

    /// Removes every response whose display URL is `url`, here and on every instance.
    public func remove(url: String) async throws {
        guard beginWrite(nil, { $0.remove(url: url) }) else { return }
        defer { state.withLock { $0.localWrites.end(nil) } }
        let instance = instance
        // A notification carries at most 8000 bytes: a longer URL is announced by its keys.
        let payload = url.utf8.count <= 7_000 ? "\(instance) u \(url)" : nil
        try? await query { client, logger in
            if let payload {
                _ = try await client.query("""
                    WITH gone AS (DELETE FROM freshet_cache_entry WHERE url = \(url))
                    SELECT pg_notify('freshet_cache', \(payload))
                    """, logger: logger).collect()
            } else {
                _ = try await client.query("""
                    WITH gone AS (DELETE FROM freshet_cache_entry WHERE url = \(url) RETURNING key)
                    SELECT pg_notify('freshet_cache', \(instance) || ' k ' || key) FROM (SELECT DISTINCT key FROM gone) AS keys
                    """, logger: logger).collect()
            }
        }
    }

    /// Removes every stored response and the outcome counters, on every instance.
    public func removeAll() async throws {
        state.withLock { state in
            state.writes.outcomes = [:]
            state.writes.stamps = [:]
        }
        guard beginWrite(nil, { $0.removeAll() }) else { return }
        defer { state.withLock { $0.localWrites.end(nil) } }
        let instance = instance
        try await query { client, logger in
            _ = try await client.query("DELETE FROM freshet_cache_entry", logger: logger).collect()
            _ = try await client.query("DELETE FROM freshet_cache_outcome", logger: logger).collect()
            _ = try await client.query("SELECT pg_notify('freshet_cache', \(instance) || ' *')", logger: logger).collect()
        }
    }

    /// Counts one answer of the cache.
    public func record(_ outcome: CacheOutcome) async throws {
        count(outcome)
    }

    /// The responses stored by the whole fleet, their bytes, and the outcome counters of every
    /// instance (this one's are written first).
    /// - Throws: ``PostgresStoreError`` when the server cannot be asked.
    public func stats() async throws -> CacheStats {
        try await flush()
        return try await query { client, logger in
            var entries = 0
            var bytes = 0
            for try await (count, sum) in try await client.query(
                "SELECT count(*)::bigint, coalesce(sum(size), 0)::bigint FROM freshet_cache_entry", logger: logger
            ).decode((Int, Int).self) {
                (entries, bytes) = (count, sum)
            }
            var outcomes: [String: Int] = [:]
            for try await (outcome, count) in try await client.query(
                "SELECT outcome, count FROM freshet_cache_outcome", logger: logger
            ).decode((String, Int).self) {
                outcomes[outcome] = count
            }
            return CacheStats(entries: entries, bytes: bytes, outcomes: outcomes)
        }
    }

    /// Writes the responses freshened in memory alone (``freshenWithoutWaiting(_:)``; without a
    /// server they are dropped: its copies are at most 60 s older), the LRU stamps and outcome
    /// counters waiting in memory, and evicts what no longer fits; returns once that is committed.
    /// Without a server the stamps and counters wait for it.
    public func flush() async throws {
        for response in state.withLock({ $0.memory.takeUnsaved() }) where keep(response) {
            await persist(response)
        }
        let outcomes = state.withLock { state -> [CacheOutcome: Int] in
            state.healthy ? state.writes.takeOutcomes() : [:]
        }
        do {
            let counted = outcomes.filter { $0.value > 0 }
            if !counted.isEmpty {
                let names = counted.keys.map(\.rawValue)
                let counts = counted.keys.map { counted[$0] ?? 0 }
                try await query { client, logger in
                    _ = try await client.query("""
                        INSERT INTO freshet_cache_outcome (outcome, count)
                        SELECT * FROM unnest(\(names)::text[], \(counts)::bigint[])
                        ON CONFLICT (outcome) DO UPDATE SET count = freshet_cache_outcome.count + excluded.count
                        """, logger: logger).collect()
                }
            }
        } catch {
            // Put the counters back for the next flush: they are not lost with the server.
            state.withLock { $0.writes.putBack(outcomes: outcomes) }
            throw error
        }
        await evictNow()
    }

    // MARK: - Queries

    /// Runs `body` within the query timeout; a failure is counted, and a lost server noted.
    @discardableResult
    func query<T: Sendable>(_ body: @escaping @Sendable (PostgresClient, Logger) async throws -> T) async throws -> T {
        let (client, generation) = pool.withLock { ($0.client, $0.generation) }
        let logger = Self.quiet
        do {
            return try await withDeadline(configuration.queryTimeout) { try await body(client, logger) }
        } catch {
            let wrapped = PostgresStoreError.wrapping(error, server: configuration.description)
            failed(wrapped, generation: generation)
            throw wrapped
        }
    }

    /// Applies `change` to the memory tier and, when the server is there, begins a write of
    /// `key` (`nil`: of keys not known) on it, to be ended with ``LocalWrites/end(_:)``; whether
    /// the server is there.
    private func beginWrite(_ key: String?, _ change: (inout MemoryTier) -> Void) -> Bool {
        state.withLock { state in
            change(&state.memory)
            if state.healthy { state.localWrites.begin(key) }
            return state.healthy
        }
    }

    // MARK: - Eviction

    /// Evicts in the background, once stores have been made.
    func evictSoon() {
        startRun()
    }

    /// Evicts, and returns once a run that began after this call has ended (the runs are
    /// ``WriteBehindStore``'s: one at a time, two at once could each delete on the other's stale
    /// stamps).
    func evictNow() async {
        await runNow()
    }

    /// Writes the LRU stamps of this instance's hits that wait in memory (put back when the
    /// write fails).
    private func writeStamps() async throws {
        let touched = state.withLock { state -> [String: Double] in
            state.healthy ? state.writes.takeStamps() : [:]
        }
        guard !touched.isEmpty else { return }
        let keys = Array(touched.keys)
        let times = keys.map { touched[$0] ?? 0 }
        do {
            try await query { client, logger in
                _ = try await client.query("""
                    UPDATE freshet_cache_entry AS entry SET last_access = greatest(entry.last_access, used.at)
                    FROM unnest(\(keys)::text[], \(times)::float8[]) AS used(key, at)
                    WHERE entry.key = used.key
                    """, logger: logger).collect()
            }
        } catch {
            state.withLock { $0.writes.putBack(stamps: touched) }
            throw error
        }
    }

    /// Deletes the least recently used responses until the rest fit in `maxBytes`, after writing
    /// this instance's waiting LRU stamps, so its own recent hits are not what goes.
    func evictOnce() async throws {
        try await writeStamps()
        let maxBytes = configuration.maxBytes
        let evicted = try await query { client, logger in
            var evicted: [(String, String)] = []
            let rows = try await client.query("""
                WITH ranked AS (
                    SELECT key, variant, sum(size) OVER (ORDER BY last_access DESC, key, variant) AS running
                    FROM freshet_cache_entry),
                gone AS (
                    DELETE FROM freshet_cache_entry AS entry USING ranked
                    WHERE entry.key = ranked.key AND entry.variant = ranked.variant AND ranked.running > \(maxBytes)
                    RETURNING entry.key, entry.variant)
                SELECT key, variant FROM gone
                """, logger: logger)
            for try await (key, variant) in rows.decode((String, String).self) { evicted.append((key, variant)) }
            return evicted.map { Pair(key: $0.0, variant: $0.1) }
        }
        guard !evicted.isEmpty else { return }
        state.withLock { state in
            for pair in evicted { state.memory.remove(key: pair.key, variant: pair.variant) }
            // A lookup that read the rows before they went does not keep them.
            state.invalidations &+= 1
        }
    }

    /// A connection pool and the task running it.
    struct Pool {
        let client: PostgresClient
        let generation: Int
        var task: Task<Void, Never>?

        init(configuration: PostgresClient.Configuration, generation: Int) {
            client = PostgresClient(configuration: configuration,
                                    backgroundLogger: PostgresCacheStore.quiet)
            self.generation = generation
        }
    }

    struct Pair: Sendable {
        let key: String
        let variant: String
    }
}
