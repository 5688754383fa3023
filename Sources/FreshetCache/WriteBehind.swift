import Freshet

/// What a SQL store keeps in memory to write behind its callers — the LRU stamps of hits and the
/// outcome counters — and how its writer runs: one run at a time, started by a timer or a change,
/// waited for by `flush()`.
///
/// A value kept in the store's own state, under the store's own lock, so a hit notes its stamp in
/// the lock it already takes for the memory tier. The running part is ``WriteBehindStore``'s.
///
/// **Runs.** A run writes what waits (the store says what: ``WriteBehindStore/writeBehind()``).
/// Runs never overlap. Each request for a run takes a ticket; a caller that waits
/// (``WriteBehindStore/runNow()``) is let go once a run that began after its request has
/// ended, so whatever it left waiting has been taken by a run.
package struct WriteBehind<Stamp: Comparable & Sendable>: Sendable {
    /// Keys used since their stamps were last taken, with the stamp of their last use.
    package var stamps: [String: Stamp] = [:]
    /// Answers counted since the counters were last taken.
    package var outcomes: [CacheOutcome: Int] = [:]
    /// A flush timer is armed.
    private var timerArmed = false
    /// Runs asked for so far.
    private var requested = 0
    /// A run is going (or about to start).
    package private(set) var isRunning = false
    /// A run asked for with ``requestRunSoon()`` waits to start.
    private var delayedStart = false
    /// Callers waiting for a run that begins after their ticket.
    private var waiters: [(ticket: Int, continuation: CheckedContinuation<Void, Never>)] = []

    /// Nothing noted.
    package init() {}

    /// Whether no stamp and no counter waits.
    package var isEmpty: Bool { stamps.isEmpty && outcomes.isEmpty }

    /// Notes a use of `key` at `stamp` (the last use counts).
    package mutating func touch(_ key: String, at stamp: Stamp) {
        stamps[key] = stamp
    }

    /// Counts one answer.
    package mutating func count(_ outcome: CacheOutcome) {
        outcomes[outcome, default: 0] += 1
    }

    /// The stamps waiting, which no longer wait.
    package mutating func takeStamps() -> [String: Stamp] {
        defer { stamps = [:] }
        return stamps
    }

    /// The counters waiting, which no longer wait.
    package mutating func takeOutcomes() -> [CacheOutcome: Int] {
        defer { outcomes = [:] }
        return outcomes
    }

    /// Puts back stamps whose write failed; a key used again since keeps the later stamp.
    package mutating func putBack(stamps taken: [String: Stamp]) {
        stamps.merge(taken) { max($0, $1) }
    }

    /// Puts back counters whose write failed, added to those counted since.
    package mutating func putBack(outcomes taken: [CacheOutcome: Int]) {
        for (outcome, count) in taken { outcomes[outcome, default: 0] += count }
    }

    /// Whether the caller must arm the flush timer (``WriteBehindStore/armFlushTimer()``): none is
    /// armed and the store `allows` it now.
    package mutating func armsTimer(allowed: Bool = true) -> Bool {
        guard !timerArmed, allowed else { return false }
        timerArmed = true
        return true
    }

    /// The armed timer has fired.
    mutating func timerFired() {
        timerArmed = false
    }

    /// Asks for a run, with `waiter` to resume once a run that began after this request has
    /// ended; whether the caller must start the runs (``WriteBehindStore/runWrites()``): none is
    /// going, or one asked for with ``requestRunSoon()`` has not started yet (it starts now).
    package mutating func requestRun(waiter: CheckedContinuation<Void, Never>? = nil) -> Bool {
        requested += 1
        if let waiter { waiters.append((requested, waiter)) }
        guard !isRunning else { return takeDelayedStart() }
        isRunning = true
        return true
    }

    /// Asks for a run that may wait a little before it starts, so that changes made close
    /// together are written by one run; whether the caller must start the runs once that wait is
    /// over (``WriteBehindStore/startDelayedRun(after:)``): none is going or about to start.
    package mutating func requestRunSoon() -> Bool {
        requested += 1
        guard !isRunning else { return false }
        isRunning = true
        delayedStart = true
        return true
    }

    /// Whether a run asked for with ``requestRunSoon()`` is still waiting to start; it no longer
    /// is (the caller starts the runs). Only the first caller gets `true`.
    package mutating func takeDelayedStart() -> Bool {
        defer { delayedStart = false }
        return delayedStart
    }

    /// A run begins: the ticket it serves (every request so far).
    mutating func beginRun() -> Int {
        requested
    }

    /// The run serving `ticket` has ended: the waiters it lets go, and whether no request came
    /// since it began (then no run is going any more).
    mutating func endRun(serving ticket: Int) -> (done: Bool, ready: [CheckedContinuation<Void, Never>]) {
        let ready = waiters.filter { $0.ticket <= ticket }.map(\.continuation)
        waiters.removeAll { $0.ticket <= ticket }
        let done = requested == ticket
        if done { isRunning = false }
        return (done, ready)
    }
}

/// A store that writes behind its callers with a ``WriteBehind`` in its state: what it writes in
/// a run and what its flush timer does are its own; the timer, the one-at-a-time runs and the
/// waiting are these.
package protocol WriteBehindStore: AnyObject, Sendable {
    /// The stamp of one use of a key (the store's order of use).
    associatedtype Stamp: Comparable & Sendable

    /// How long stamps and counters may wait before the flush timer writes them.
    var flushInterval: Duration { get }

    /// Runs `body` on the store's ``WriteBehind``, under the store's lock.
    func withWriteBehind<Result: Sendable>(_ body: (inout WriteBehind<Stamp>) -> Result) -> Result

    /// One run: writes what waits. Never two at once.
    func writeBehind() async

    /// What the flush timer does when it fires (write what waits, without failing anybody).
    func flushTimerFired() async
}

extension WriteBehindStore {
    /// After ``flushInterval``, disarms the timer and does ``flushTimerFired()``. Call it when
    /// ``WriteBehind/armsTimer(allowed:)`` says so.
    package func armFlushTimer() {
        let interval = flushInterval
        Task {
            try? await Task.sleep(for: interval)
            withWriteBehind { $0.timerFired() }
            await flushTimerFired()
        }
    }

    /// Asks for a run and returns at once (a run starts unless one is going, which then runs
    /// once more).
    package func startRun() {
        if withWriteBehind({ $0.requestRun() }) { startRuns() }
    }

    /// Starts the runs after `delay`, unless a caller started them sooner: the changes made during
    /// the delay are written by that run, in one transaction, instead of each change starting a
    /// run of its own. Call it when ``WriteBehind/requestRunSoon()`` (asked under the store's lock,
    /// with the change) says so.
    package func startDelayedRun(after delay: Duration) {
        Task {
            try? await Task.sleep(for: delay)
            if withWriteBehind({ $0.takeDelayedStart() }) { await runWrites() }
        }
    }

    /// Asks for a run and returns once a run that began after this call has ended.
    package func runNow() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            if withWriteBehind({ $0.requestRun(waiter: waiter) }) { startRuns() }
        }
    }

    /// Starts the runs in a task of their own. Call it when ``WriteBehind/requestRun(waiter:)``
    /// says so.
    package func startRuns() {
        Task { await runWrites() }
    }

    /// Runs ``writeBehind()`` one run at a time until every request has been served by a run that
    /// began after it; lets each waiter go as soon as its run has ended.
    package func runWrites() async {
        while true {
            let ticket = withWriteBehind { $0.beginRun() }
            await writeBehind()
            let (done, ready) = withWriteBehind { $0.endRun(serving: ticket) }
            for waiter in ready { waiter.resume() }
            if done { return }
        }
    }
}
