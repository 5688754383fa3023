import Dispatch
import Foundation
import Synchronization

/// Runs `work` until it ends, or until Ctrl-C (`SIGINT`) or `SIGTERM` cancels it: the watching
/// commands (`feed --watch`, `hn --live`) end cleanly then, exit 0. Returns whether a signal
/// ended it; `work`'s own errors are thrown (its cancellation is not, once a signal came).
func untilInterrupted(_ work: @escaping @Sendable () async throws -> Void) async throws -> Bool {
    let task = Task { try await work() }
    signal(SIGINT, SIG_IGN)
    signal(SIGTERM, SIG_IGN)
    let interrupted = Atomic(false)
    let sources = [SIGINT, SIGTERM].map { number in
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler {
            interrupted.store(true, ordering: .relaxed)
            task.cancel()
        }
        source.resume()
        return source
    }
    defer {
        sources.forEach { $0.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
    do {
        try await task.value
    } catch {
        guard interrupted.load(ordering: .relaxed) else { throw error }
    }
    return interrupted.load(ordering: .relaxed)
}
