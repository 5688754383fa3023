import Synchronization

/// Runs `operation` with a time limit that holds even when the operation does not notice
/// cancellation (a query waiting on the network): past `timeout` the caller gets
/// ``PostgresStoreError/timedOut(_:)`` at once, and the operation, cancelled, finishes on its
/// own with its result dropped. The operation runs in a task that inherits task-local values.
func withDeadline<T: Sendable>(_ timeout: Duration, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    let outcome = Mutex<CheckedContinuation<T, any Error>?>(nil)
    let work = Mutex<Task<Void, Never>?>(nil)
    let timer = Mutex<Task<Void, Never>?>(nil)
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            outcome.withLock { $0 = continuation }
            let finish: @Sendable (Result<T, any Error>) -> Void = { result in
                guard let continuation = outcome.withLock({ slot in defer { slot = nil }; return slot }) else { return }
                continuation.resume(with: result)
                work.withLock { $0?.cancel() }
                timer.withLock { $0?.cancel() }
            }
            work.withLock { slot in
                slot = Task {
                    do { finish(.success(try await operation())) } catch { finish(.failure(error)) }
                }
            }
            timer.withLock { slot in
                slot = Task {
                    guard (try? await Task.sleep(for: timeout)) != nil else { return }
                    finish(.failure(PostgresStoreError.timedOut(timeout)))
                }
            }
        }
    } onCancel: {
        work.withLock { $0?.cancel() }
        guard let continuation = outcome.withLock({ slot in defer { slot = nil }; return slot }) else { return }
        continuation.resume(throwing: CancellationError())
        timer.withLock { $0?.cancel() }
    }
}
