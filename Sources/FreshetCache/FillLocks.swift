import Synchronization

/// One origin request per key at a time, in this process: the first caller for a key goes on,
/// the callers that come while it runs wait for it to finish (bounded), then look in the store
/// — where the first one's answer now is — and go to the origin only when nothing usable is
/// there. Waiters are let go together, not one by one, so an answer that could not be stored
/// does not make them queue (nginx's `proxy_cache_lock` works the same way). Used by
/// ``CacheMiddleware`` and, within each process, by FreshetPostgres' store.
package final class FillLocks: Sendable {
    /// How a caller of ``run(key:maxWait:_:)`` comes to run its body.
    package enum Turn: Sendable, Equatable {
        /// No one else was running for the key: this caller fills it.
        case first
        /// It waited, and the one filling the key has finished: look the key up first.
        case afterFill
        /// It waited until `maxWait` passed (or it was cancelled) while the fill went on.
        case gaveUp
    }

    private struct Fill {
        var waiters: [UInt64: CheckedContinuation<Turn, Never>] = [:]
    }

    private let state = Mutex<(fills: [String: Fill], next: UInt64)>(([:], 0))

    /// No fills yet.
    package init() {}

    /// Runs `body` for `key`: at once with ``Turn/first`` when no one else is running for `key`,
    /// else after that one has finished (``Turn/afterFill``) or `maxWait` has passed or the
    /// caller was cancelled (``Turn/gaveUp``).
    package func run<T>(key: String, maxWait: Duration, _ body: (_ turn: Turn) async throws -> T) async throws -> T {
        let waiter = state.withLock { state -> UInt64? in
            guard state.fills[key] != nil else {
                state.fills[key] = Fill()
                return nil
            }
            defer { state.next &+= 1 }
            return state.next
        }
        guard let waiter else {
            defer { finish(key) }
            return try await body(.first)
        }
        return try await body(await wait(for: key, waiter: waiter, maxWait: maxWait))
    }

    private func wait(for key: String, waiter: UInt64, maxWait: Duration) async -> Turn {
        let giveUp: @Sendable () -> Void = { [self] in
            let continuation = self.state.withLock { $0.fills[key]?.waiters.removeValue(forKey: waiter) }
            continuation?.resume(returning: .gaveUp)
        }
        let timer = Task {
            guard (try? await Task.sleep(for: maxWait)) != nil else { return }
            giveUp()
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let registered = state.withLock { state -> Bool in
                    guard state.fills[key] != nil else { return false }
                    state.fills[key]?.waiters[waiter] = continuation
                    return true
                }
                // The fill ended between the first look and now.
                if !registered { continuation.resume(returning: .afterFill) }
            }
        } onCancel: {
            giveUp()
        }
    }

    /// Claims `key` for a fill that runs outside ``run(key:maxWait:_:)``, by a caller that cannot
    /// wait (a server's event loop): `true` when no one else was running for `key`; then the
    /// caller must ``finish(_:)`` it, once. Callers of ``run(key:maxWait:_:)`` wait for it meanwhile.
    package func claim(_ key: String) -> Bool {
        state.withLock { state in
            guard state.fills[key] == nil else { return false }
            state.fills[key] = Fill()
            return true
        }
    }

    /// Ends the fill of `key` (one run's, or a ``claim(_:)``): the callers waiting for it look in
    /// the store.
    package func finish(_ key: String) {
        let waiters = state.withLock { $0.fills.removeValue(forKey: key).map { Array($0.waiters.values) } ?? [] }
        for waiter in waiters { waiter.resume(returning: .afterFill) }
    }
}
