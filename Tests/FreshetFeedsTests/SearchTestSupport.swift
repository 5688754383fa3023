import Foundation
import FreshetTestSupport
import Synchronization

/// A clock that only moves when the test says so. Sleepers wake when ``advance(by:)`` passes
/// their deadline; a deadline already reached returns at once.
final class ManualClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration

        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [UInt64: Sleeper] = [:]
        var cancelled: Set<UInt64> = []
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    var now: Instant { state.withLock { $0.now } }
    var minimumResolution: Duration { .zero }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resume: (any Error)?? = state.withLock { state in
                    if state.cancelled.remove(id) != nil { return .some(CancellationError()) }
                    if deadline <= state.now { return .some(nil) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return .none
                }
                switch resume {
                case .none: break
                case .some(.none): continuation.resume()
                case .some(.some(let error)): continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                if let sleeper = state.sleepers.removeValue(forKey: id) { return sleeper }
                state.cancelled.insert(id)
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock forward and wakes every sleeper whose deadline has come.
    func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { state.sleepers[id] = nil }
            return Array(due.values)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}

/// The text of a search field, typed by the test. ``type(_:)`` returns only once the pipeline
/// has taken the text in and asked for the next one, so every keystroke is stamped with the
/// clock's time before the test moves the clock on.
final class ScriptedField: AsyncSequence, Sendable {
    typealias Element = String

    private struct State {
        var buffer: [String] = []
        var finished = false
        var consumer: CheckedContinuation<String?, Never>?
        var pulls = 0
        var sent = 0
        var pullWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    struct Iterator: AsyncIteratorProtocol {
        let field: ScriptedField
        mutating func next() async -> String? { await field.pull() }
    }

    func makeAsyncIterator() -> Iterator { Iterator(field: self) }

    private func pull() async -> String? {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.pulls += 1
            let pulls = state.pulls
            let ready = state.pullWaiters.filter { $0.count <= pulls }.map(\.continuation)
            state.pullWaiters.removeAll { $0.count <= pulls }
            return ready
        }
        ready.forEach { $0.resume() }
        return await withCheckedContinuation { continuation in
            let value: String?? = state.withLock { state in
                if !state.buffer.isEmpty { return .some(state.buffer.removeFirst()) }
                if state.finished { return .some(nil) }
                state.consumer = continuation
                return .none
            }
            if let value { continuation.resume(returning: value) }
        }
    }

    /// Sets the field's text and waits until the pipeline took it in.
    func type(_ text: String) async {
        let (consumer, target) = state.withLock { state -> (CheckedContinuation<String?, Never>?, Int) in
            state.sent += 1
            let consumer = state.consumer
            state.consumer = nil
            if consumer == nil { state.buffer.append(text) }
            return (consumer, state.sent + 1)
        }
        consumer?.resume(returning: text)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.pulls >= target { return true }
                state.pullWaiters.append((target, continuation))
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// Types each prefix of `word`, moving the clock by `gap` after each keystroke.
    func type(_ word: String, keystrokesApart gap: Duration, on clock: ManualClock) async {
        var text = ""
        for character in word {
            text.append(character)
            await type(text)
            clock.advance(by: gap)
        }
    }

    /// Ends the input (the user left the field).
    func finish() {
        let consumer = state.withLock { state -> CheckedContinuation<String?, Never>? in
            state.finished = true
            let consumer = state.consumer
            state.consumer = nil
            return consumer
        }
        consumer?.resume(returning: nil)
    }
}

/// The `q` / `query` values of the search requests the simulator logged, in order.
func searchQueries(_ log: [SimLogEntry], path: String) -> [String] {
    log.filter { $0.path.hasPrefix(path + "?") }.compactMap { entry in
        URLComponents(string: "http://x" + entry.path)?.queryItems?.first { $0.name == "q" || $0.name == "query" }?.value
    }
}
