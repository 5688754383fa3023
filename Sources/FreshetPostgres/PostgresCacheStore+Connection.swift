import CoreMetrics
import Foundation
import FreshetCache
import Logging
import PostgresNIO
import Synchronization

/// The store's life beside the requests: the connection pool, the invalidation listener, the
/// flush timer, and losing and regaining the server.
extension PostgresCacheStore {
    /// Starts the pool and the listener, in tasks the store owns (ended by ``shutdown()``).
    func start() {
        runPool()
        runner.withLock { task in
            task = Task { await self.listen() }
        }
    }

    /// Starts the current pool's task.
    private func runPool() {
        pool.withLock { pool in
            let client = pool.client
            pool.task = Task { await client.run() }
        }
    }

    /// Replaces the pool with a new one (the old one's connections are closed).
    private func replacePool() {
        let old = pool.withLock { pool -> Task<Void, Never>? in
            let old = pool.task
            pool = Pool(configuration: configuration.clientConfiguration, generation: pool.generation + 1)
            return old
        }
        old?.cancel()
        runPool()
    }

    /// Returns once the listener has started listening.
    func waitUntilListening() async {
        while !state.withLock({ $0.listening }), !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Listens for the other instances' invalidations until the store shuts down; after losing
    /// the connection, listens again with backoff. Notifications sent meanwhile are lost, so the
    /// memory tier starts afresh each time listening resumes.
    func listen() async {
        var delay = Duration.milliseconds(100)
        var first = true
        while !Task.isCancelled, !state.withLock({ $0.closed }) {
            let (client, generation) = pool.withLock { ($0.client, $0.generation) }
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: Self.channel) { notifications in
                        delay = .milliseconds(100)
                        if !first { state.withLock { $0.memory.removeAll(); $0.invalidations &+= 1 } }
                        first = false
                        state.withLock { $0.listening = true }
                        for try await notification in notifications {
                            invalidate(notification.payload)
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                failed(PostgresStoreError.wrapping(error, server: configuration.description), generation: generation)
            }
            state.withLock { $0.listening = false }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(1))
        }
    }

    /// Applies one notification: `INSTANCE k KEY`, `INSTANCE u URL` or `INSTANCE *`. This
    /// instance's own are skipped (it changed its memory tier already).
    func invalidate(_ payload: String) {
        let parts = payload.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] != instance[...] else { return }
        state.withLock { state in
            state.invalidations &+= 1
            switch (parts[1], parts.count == 3 ? String(parts[2]) : nil) {
            case ("k", let key?): state.memory.remove(key: key)
            case ("u", let url?): state.memory.remove(url: url)
            default: state.memory.removeAll()
            }
        }
    }

    // MARK: - Losing and regaining the server

    /// Counts a failed query; when the server is out of reach, goes on without it (saying so
    /// once) and starts probing for it.
    func failed(_ error: PostgresStoreError, generation: Int? = nil) {
        // A pool already replaced fails its last users: not news.
        if let generation, generation != pool.withLock({ $0.generation }) { return }
        storeErrors?.increment()
        guard error.isConnectionLoss else {
            logger.debug("PostgreSQL query failed", metadata: ["reason": "\(error)"])
            return
        }
        let startProbing = state.withLock { state -> Bool in
            guard !state.closed, state.started else { return false }
            state.healthy = false
            guard !state.recovering else { return false }
            state.recovering = true
            return true
        }
        guard startProbing else { return }
        logger.warning("lost PostgreSQL at \(configuration.description) (\(error.reason)); answering from the memory tier and the origin until it is back")
        Task { await recover() }
    }

    /// Probes the server with backoff — a connection of its own, not the pool, whose own
    /// backoff after failed attempts can reach a minute — until it answers; then uses it again,
    /// through a new pool, with an empty memory tier (invalidations may have been missed).
    private func recover() async {
        var delay = Duration.milliseconds(200)
        while !state.withLock({ $0.closed }) {
            try? await Task.sleep(for: delay)
            if (try? await probe()) != nil {
                replacePool()
                state.withLock { state in
                    state.memory.removeAll()
                    state.invalidations &+= 1
                    state.healthy = true
                    state.recovering = false
                }
                logger.notice("PostgreSQL at \(configuration.description) is back; the memory tier starts afresh")
                return
            }
            delay = min(delay * 2, .seconds(5))
        }
    }

    /// Connects once and closes again; throws the reason when the server cannot be reached.
    func probe() async throws {
        let checkConfiguration = try configuration.connectionConfiguration()
        let connection = try await withDeadline(max(configuration.queryTimeout, .seconds(2))) {
            try await PostgresConnection.connect(configuration: checkConfiguration, id: 0,
                                                 logger: Self.quiet)
        }
        try? await connection.close()
    }

    // MARK: - Writing stamps and counters behind (WriteBehindStore)

    /// How long stamps and counters wait before they are written
    /// (``PostgresStoreConfiguration/flushInterval``).
    package var flushInterval: Duration { configuration.flushInterval }

    /// Runs `body` on the waiting stamps and counters and the eviction runs, under the store's lock.
    package func withWriteBehind<Result: Sendable>(_ body: (inout WriteBehind<Double>) -> Result) -> Result {
        state.withLock { body(&$0.writes) }
    }

    /// One eviction run: this instance's waiting stamps, then what no longer fits.
    package func writeBehind() async {
        try? await evictOnce()
    }

    /// The flush timer: writes what waits.
    package func flushTimerFired() async {
        try? await flush()
    }
}

/// The cache's tables and their migrations.
enum PostgresSchema {
    /// The migrations in order: a name and its statements.
    static let migrations: [(name: String, statements: [PostgresQuery])] = [
        ("cache-v1", [
            """
            CREATE TABLE freshet_cache_entry (
                key text NOT NULL,
                variant text NOT NULL,
                url text NOT NULL,
                status integer NOT NULL,
                request_time double precision NOT NULL,
                response_time double precision NOT NULL,
                stored_at double precision NOT NULL,
                last_access double precision NOT NULL,
                size bigint NOT NULL,
                headers bytea NOT NULL,
                body bytea NOT NULL,
                PRIMARY KEY (key, variant))
            """,
            "CREATE INDEX freshet_cache_entry_url ON freshet_cache_entry (url)",
            "CREATE INDEX freshet_cache_entry_last_access ON freshet_cache_entry (last_access)",
            "CREATE TABLE freshet_cache_outcome (outcome text PRIMARY KEY, count bigint NOT NULL)",
        ]),
    ]

    /// A number of the cache's own for the advisory lock that serializes migrations.
    static let migrationLock: Int64 = 0x6672_6573_6865_7401 // "freshet" + 1

    /// Applies the migrations not applied yet, in one transaction under an advisory lock, so
    /// that instances starting together migrate once.
    static func migrate(_ client: PostgresClient, logger: Logger) async throws {
        try await client.withTransaction(logger: logger) { connection in
            _ = try await connection.query("SELECT pg_advisory_xact_lock(\(migrationLock))", logger: logger).collect()
            _ = try await connection.query("""
                CREATE TABLE IF NOT EXISTS freshet_cache_migration (
                    name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())
                """, logger: logger).collect()
            var applied: Set<String> = []
            for try await name in try await connection.query(
                "SELECT name FROM freshet_cache_migration", logger: logger).decode(String.self) {
                applied.insert(name)
            }
            for migration in migrations where !applied.contains(migration.name) {
                for statement in migration.statements {
                    _ = try await connection.query(statement, logger: logger).collect()
                }
                _ = try await connection.query(
                    "INSERT INTO freshet_cache_migration (name) VALUES (\(migration.name))", logger: logger).collect()
            }
        }
    }
}
