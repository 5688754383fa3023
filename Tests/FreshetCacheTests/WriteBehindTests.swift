import Freshet
import FreshetCache
import FreshetTestSupport
import Synchronization
import Testing

/// ``WriteBehind``'s rules, on a store that writes nothing: runs never overlap, a caller of
/// `runNow()` waits for a run that began after it asked, stamps put back keep the later use.
@Suite("Write-behind: one run at a time, flush waits for a run begun after it")
struct WriteBehindTests {
    /// A store whose every run waits for a `release()`; it counts runs and notes any overlap.
    final class HeldStore: WriteBehindStore {
        let flushInterval = Duration.milliseconds(10)
        let writes = Mutex(WriteBehind<Int>())
        let runs = Mutex<(started: Int, finished: Int, running: Int, overlapped: Bool)>((0, 0, 0, false))
        let timerFirings = Atomic<Int>(0)
        let gate = AsyncStream<Void>.makeStream()

        func withWriteBehind<Result: Sendable>(_ body: (inout WriteBehind<Int>) -> Result) -> Result {
            writes.withLock { body(&$0) }
        }

        func writeBehind() async {
            runs.withLock { runs in
                runs.started += 1
                runs.running += 1
                if runs.running > 1 { runs.overlapped = true }
            }
            for await _ in gate.stream { break }
            runs.withLock { runs in
                runs.running -= 1
                runs.finished += 1
            }
        }

        func flushTimerFired() async {
            timerFirings.add(1, ordering: .relaxed)
        }

        func release() { gate.continuation.yield() }
    }

    @Test("runNow() asked during a run returns only after a run that began after it, and runs never overlap")
    func runNowWaitsForALaterRun() async throws {
        let store = HeldStore()
        store.startRun()
        while store.runs.withLock({ $0.started }) == 0 { try await Task.sleep(for: .milliseconds(5)) }
        let waiting = Task {
            await store.runNow()
            return store.runs.withLock { $0.finished }
        }
        // More requests while the first run is held: they share the next run.
        store.startRun()
        try await Task.sleep(for: .milliseconds(100))
        // The first run ends; the waiter asked after it began, so it waits for the second.
        store.release()
        try await Task.sleep(for: .milliseconds(100))
        store.release()
        let finishedWhenLetGo = await waiting.value
        #expect(finishedWhenLetGo == 2)
        let runs = store.runs.withLock { $0 }
        #expect(runs.started == 2)
        #expect(!runs.overlapped)
        #expect(!store.withWriteBehind { $0.isRunning })
    }

    @Test("A run asked for soon starts once: when a caller asks for a run first, or when its wait is over")
    func runSoon() async throws {
        let store = HeldStore()
        // As the SQLite store asks: the request under the lock, the delayed start when it says so.
        #expect(store.withWriteBehind { $0.requestRunSoon() })
        store.startDelayedRun(after: .seconds(3600))
        // Asked for again while it waits: still one run to come, nothing more to start.
        #expect(!store.withWriteBehind { $0.requestRunSoon() })
        #expect(store.withWriteBehind { $0.isRunning })
        // A caller that waits starts it now instead of an hour from now.
        let waiting = Task { await store.runNow() }
        let startedNow = await eventually(within: 30) { store.runs.withLock { $0.started } == 1 }
        try #require(startedNow, "runNow() did not start the waiting run")
        store.release()
        await waiting.value
        #expect(!store.withWriteBehind { $0.takeDelayedStart() }, "the waiting start was taken by runNow()")
        #expect(!store.withWriteBehind { $0.isRunning })

        // Nobody asks sooner: the run starts when its wait is over.
        #expect(store.withWriteBehind { $0.requestRunSoon() })
        store.startDelayedRun(after: .milliseconds(20))
        let startedLater = await eventually(within: 30) { store.runs.withLock { $0.started } == 2 }
        try #require(startedLater, "the run did not start when its wait was over")
        store.release()
        let ended = await eventually(within: 30) { !store.withWriteBehind { $0.isRunning } }
        #expect(ended)
        let runs = store.runs.withLock { $0 }
        #expect(runs.finished == 2)
        #expect(!runs.overlapped)
    }

    @Test("The timer is armed once until it fires; stamps put back keep the later use")
    func timerAndStamps() async throws {
        let store = HeldStore()
        #expect(store.withWriteBehind { $0.armsTimer() })
        #expect(!store.withWriteBehind { $0.armsTimer() })
        #expect(!store.withWriteBehind { $0.armsTimer(allowed: false) })
        store.armFlushTimer()
        while store.timerFirings.load(ordering: .relaxed) == 0 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(store.withWriteBehind { $0.armsTimer() })

        var writes = WriteBehind<Int>()
        writes.touch("a", at: 1)
        writes.touch("b", at: 5)
        writes.count(.hit)
        let stamps = writes.takeStamps()
        let outcomes = writes.takeOutcomes()
        #expect(writes.isEmpty)
        writes.touch("a", at: 3)
        writes.putBack(stamps: stamps)
        writes.putBack(outcomes: outcomes)
        writes.count(.hit)
        #expect(writes.stamps == ["a": 3, "b": 5])
        #expect(writes.outcomes == [.hit: 2])
    }
}
