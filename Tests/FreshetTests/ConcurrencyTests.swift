import Foundation
import Freshet
import FreshetTestSupport
import Synchronization
import Testing

@Suite("Cancellation and fan-out over loopback")
struct ConcurrencyTests {
    @Test("Cancelling the task closes the connection before the response finishes")
    func cancellationReachesTheServer() async throws {
        try await withSimClient { sim, client in
            let control = SimControl(sim)
            let slow = Endpoint<Data>.raw("_sim", "drip", query: [
                QueryItem("bytes", "200000"), QueryItem("chunk", "100"), QueryItem("intervalMs", "20"),
            ])
            let task = Task { () async throws(APIError) -> Response<Data> in try await client.send(slow) }
            let started = try await eventually { try await control.log().contains { $0.path.hasPrefix("/_sim/drip") } }
            #expect(started)
            task.cancel()
            #expect(await task.result.apiError == .cancelled)
            let aborted = try await eventually {
                try await control.log().first { $0.path.hasPrefix("/_sim/drip") }?.aborted == true
            }
            #expect(aborted, "the server never saw the connection close")
            let entry = try #require(try await control.log().first { $0.path.hasPrefix("/_sim/drip") })
            #expect(!entry.finished)
        }
    }

    @Test("Fan-out runs exactly N requests at once, never more, and yields every result")
    func fanOutBound() async throws {
        let outcomes = RequestOutcomes()
        try await withSimClient(middlewares: [outcomes.middleware]) { sim, client in
            let control = SimControl(sim)
            let ids = try await client.value(Endpoint<[Int]>.get("v0", "topstories.json")).prefix(60)
            try await control.resetLog()
            outcomes.reset()
            // Every item is held at the server: the fan-out fills its four slots and waits there.
            try await control.hold(route: "/v0/item")
            let endpoints = ids.map { Endpoint<Data>.raw("v0", "item", "\($0).json") }
            let collected = Task { () -> (offsets: [Int], failures: Int) in
                var offsets: [Int] = []
                var failures = 0
                for await item in client.fanOut(endpoints, maxConcurrent: 4) {
                    if case .failure = item.result { failures += 1 }
                    offsets.append(item.offset)
                }
                return (offsets, failures)
            }
            let full = try await eventually { try await control.stats().inFlight == 4 }
            #expect(full, "four requests held at the server at once")
            #expect(outcomes.started == 4, "no fifth request started while four are in flight")
            try await control.release(route: "/v0/item")
            let (offsets, failures) = await collected.value
            #expect(failures == 0)
            #expect(offsets.sorted() == Array(0..<60))
            let stats = try await control.stats()
            #expect(stats.requests == 60)
            #expect(stats.maxInFlight == 4)
        }
    }

    @Test func orderedFanOutYieldsInInputOrder() async throws {
        try await withSimClient { sim, client in
            let ids = try await client.value(Endpoint<[Int]>.get("v0", "topstories.json")).prefix(40)
            try await SimControl(sim).setLatency(route: "/v0/item", milliseconds: 5)
            let endpoints = ids.map { Endpoint<Data>.raw("v0", "item", "\($0).json") }
            var offsets: [Int] = []
            for await item in client.fanOutOrdered(endpoints, maxConcurrent: 8) {
                offsets.append(item.offset)
            }
            #expect(offsets == Array(0..<40))
        }
    }

    @Test("One failing item does not end the fan-out")
    func fanOutKeepsGoingPastFailures() async throws {
        try await withSimClient { sim, client in
            try await SimControl(sim).fault(route: "/v0/item/2.json", status: 500, times: 1)
            let endpoints = (1...5).map { Endpoint<Data>.raw("v0", "item", "\($0).json") }
            var failures: [Int] = []
            var successes = 0
            for await item in client.fanOut(endpoints, maxConcurrent: 2) {
                switch item.result {
                case .success: successes += 1
                case .failure(.httpStatus(500, _, _, _)): failures.append(item.offset)
                case .failure(let error): Issue.record("unexpected \(error)")
                }
            }
            #expect(failures == [1])
            #expect(successes == 4)
        }
    }

    @Test("Stopping the iteration early cancels what is in flight and starts nothing more")
    func fanOutStopsEarly() async throws {
        let outcomes = RequestOutcomes()
        try await withSimClient(middlewares: [outcomes.middleware]) { sim, client in
            let control = SimControl(sim)
            // The first three answer; every later one is held at the server until released, so it
            // can only end by being cancelled.
            try await control.hold(route: "/v0/item/9")
            let endpoints = [1, 2, 3].map { Endpoint<Data>.raw("v0", "item", "\($0).json") }
                + (900..<1097).map { Endpoint<Data>.raw("v0", "item", "\($0).json") }
            var seen = 0
            for await _ in client.fanOut(endpoints, maxConcurrent: 4) {
                seen += 1
                if seen == 3 { break }
            }
            #expect(seen == 3)
            let settled = await eventually { outcomes.started > 0 && outcomes.ended == outcomes.started }
            #expect(settled, "every request ended: \(outcomes.started) started, \(outcomes.ended) ended")
            // Four slots: 900 started at once, then one more as each of the first three finished.
            #expect(outcomes.started == 7, "nothing started after the iteration stopped")
            #expect(outcomes.cancelled == 4, "the four held requests were cancelled")
            try await control.release(route: "/v0/item/9")
        }
    }
}

/// Counts the requests a client starts and how they end, from a middleware in its chain.
final class RequestOutcomes: Sendable {
    private struct Counts { var started = 0, ended = 0, cancelled = 0 }
    private let counts = Mutex(Counts())

    var started: Int { counts.withLock { $0.started } }
    var ended: Int { counts.withLock { $0.ended } }
    /// Requests that ended in error while their task was cancelled.
    var cancelled: Int { counts.withLock { $0.cancelled } }

    func reset() { counts.withLock { $0 = Counts() } }

    var middleware: ClosureMiddleware {
        ClosureMiddleware { [self] request, body, url, next in
            counts.withLock { $0.started += 1 }
            do {
                let answer = try await next(request, body, url)
                counts.withLock { $0.ended += 1 }
                return answer
            } catch {
                let cancelled = Task.isCancelled
                counts.withLock {
                    $0.ended += 1
                    if cancelled { $0.cancelled += 1 }
                }
                throw error
            }
        }
    }
}
