import Foundation
import FreshetCache
import Logging
import PostgresNIO
import Synchronization

/// Concurrent misses for one key make one origin request: in this process, later callers wait
/// for the first (FreshetCache's `FillLocks`, as the cache middleware's own); across processes,
/// the first caller of each takes PostgreSQL's advisory lock on the key.
extension PostgresCacheStore {
    /// Runs `fill` as the one filling `key`, or — after waiting for the one that is — with
    /// `true` (look the key up first: that one may have stored the answer), or `false` when the
    /// wait ran past ``PostgresStoreConfiguration/fillWait``: the caller then goes to the origin.
    ///
    /// Waiters in this process always look when the fill ends: whether the memory tier holds the
    /// key says nothing sure, because the notice of another instance's save of it can arrive late
    /// and drop the copy this fill just read from PostgreSQL (seen as a second origin request in 1
    /// of about 15 runs of the fleet's concurrent-miss test).
    public func withFillLock<T: Sendable>(forKey key: String, _ fill: (_ locked: Bool) async throws -> T) async throws -> T {
        let deadline = ContinuousClock.now + configuration.fillWait
        return try await localFills.run(key: key, maxWait: configuration.fillWait) { turn in
            switch turn {
            case .afterFill: return try await fill(true)
            case .gaveUp: return try await fill(false)
            case .first:
                // Across processes: the advisory lock, when the server is there and has connections to spare.
                let lock = await advisoryLock(on: key, until: deadline)
                defer { lock?.release() }
                if lock != nil {
                    // Whoever held it may have stored the answer: read it from PostgreSQL, not memory.
                    state.withLock { $0.memory.remove(key: key) }
                }
                return try await fill(lock != nil)
            }
        }
    }

    /// A held advisory lock: ``release()`` unlocks it and returns its connection to the pool.
    final class AdvisoryLock: Sendable {
        private let released: AsyncStream<Never>.Continuation
        init(released: AsyncStream<Never>.Continuation) { self.released = released }
        func release() { released.finish() }
    }

    /// Takes PostgreSQL's advisory lock on `key`, waiting for another instance's holder until
    /// `deadline`; `nil` when the server is away, too many locks are held already (each holds a
    /// connection), or the wait runs out.
    private func advisoryLock(on key: String, until deadline: ContinuousClock.Instant) async -> AdvisoryLock? {
        let limit = max(1, configuration.maximumConnections / 2)
        guard state.withLock({ state -> Bool in
            guard state.healthy, state.advisoryLocks < limit else { return false }
            state.advisoryLocks += 1
            return true
        }) else { return nil }
        let lockID = Int64(bitPattern: UInt64(key.prefix(16), radix: 16) ?? UInt64(truncatingIfNeeded: key.hashValue))
        let (released, release) = AsyncStream<Never>.makeStream()
        let handoff = LockHandoff()
        let (client, generation) = pool.withLock { ($0.client, $0.generation) }
        let logger = Self.quiet
        let holder = Task {
            defer { state.withLock { $0.advisoryLocks -= 1 } }
            do {
                try await client.withConnection { connection in
                    var locked = false
                    while !locked, ContinuousClock.now < deadline, !Task.isCancelled {
                        for try await granted in try await connection.query(
                            "SELECT pg_try_advisory_lock(\(lockID))", logger: logger).decode(Bool.self) {
                            locked = granted
                        }
                        if !locked { try await Task.sleep(for: .milliseconds(10)) }
                    }
                    guard locked else { return }
                    if handoff.offer(AdvisoryLock(released: release)) {
                        for await _ in released {}
                    }
                    _ = try await connection.query("SELECT pg_advisory_unlock(\(lockID))", logger: logger).collect()
                }
            } catch {
                if !Task.isCancelled { failed(PostgresStoreError.wrapping(error, server: configuration.description), generation: generation) }
            }
            _ = handoff.offer(nil)
        }
        let timer = Task {
            guard (try? await Task.sleep(until: deadline)) != nil else { return }
            if handoff.offer(nil) { holder.cancel() }
        }
        defer { timer.cancel() }
        return await handoff.value()
    }
}

/// Hands the advisory lock (or its absence) from the task holding the connection to the
/// caller, once: whichever offer comes first wins; a lock offered after the caller gave up is
/// refused, and the holder unlocks it at once.
private final class LockHandoff: Sendable {
    private enum Slot {
        case empty
        case waiting(CheckedContinuation<PostgresCacheStore.AdvisoryLock?, Never>)
        case decided(PostgresCacheStore.AdvisoryLock?)
        case done
    }
    private let slot = Mutex(Slot.empty)

    /// Offers `lock`; `true` when the caller takes it (or, for `nil`, when this decided).
    func offer(_ lock: PostgresCacheStore.AdvisoryLock?) -> Bool {
        let (continuation, taken) = slot.withLock { slot -> (CheckedContinuation<PostgresCacheStore.AdvisoryLock?, Never>?, Bool) in
            switch slot {
            case .empty:
                slot = .decided(lock)
                return (nil, true)
            case .waiting(let continuation):
                slot = .done
                return (continuation, true)
            case .decided, .done:
                return (nil, false)
            }
        }
        continuation?.resume(returning: lock)
        return taken
    }

    /// The lock, once offered.
    func value() async -> PostgresCacheStore.AdvisoryLock? {
        await withCheckedContinuation { continuation in
            let decided = slot.withLock { slot -> PostgresCacheStore.AdvisoryLock?? in
                switch slot {
                case .empty:
                    slot = .waiting(continuation)
                    return nil
                case .decided(let lock):
                    slot = .done
                    return .some(lock)
                case .waiting, .done:
                    return .some(nil)
                }
            }
            if let decided { continuation.resume(returning: decided) }
        }
    }
}
