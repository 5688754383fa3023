#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import Foundation
import Freshet
import FreshetCombine
import FreshetTestSupport
import Testing

/// A Hacker News item, as little of it as the tests need.
private struct Item: Decodable, Sendable, Equatable {
    let id: Int
}

private func item(_ id: Int) -> Endpoint<Item> {
    Endpoint<Item>.get("v0", "item", "\(id).json")
}

/// An item's bytes, whatever they are (the literal `null` too).
private func rawItem(_ id: Int) -> Endpoint<Data> {
    Endpoint<Data>.raw("v0", "item", "\(id).json")
}

/// A 200 KB body the simulator drips for about 40 s; `n` makes each URL different.
private func drip(_ n: Int) -> Endpoint<Data> {
    Endpoint<Data>.raw("_sim", "drip", query: [
        QueryItem("bytes", "200000"), QueryItem("chunk", "100"), QueryItem("intervalMs", "20"), QueryItem("n", "\(n)"),
    ])
}

/// The ids the simulator's top list starts with.
private func topIDs(_ client: APIClient, count: Int) async throws -> [Int] {
    Array(try await client.value(Endpoint<[Int]>.get("v0", "topstories.json")).prefix(count))
}

/// A subscriber that asks for `initial` elements, then one more after each it receives, up to
/// `total`: what it got and when it completed.
private final class PacedSubscriber<Input: Sendable>: Subscriber, @unchecked Sendable {
    typealias Failure = APIError
    let combineIdentifier = CombineIdentifier()
    private let lock = NSLock()
    private var subscription: (any Subscription)?
    private(set) var received: [Input] = []
    private var completion: Subscribers.Completion<APIError>?

    func receive(subscription: any Subscription) {
        lock.withLock { self.subscription = subscription }
        subscription.request(.max(1))
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        lock.withLock { received.append(input) }
        return .none
    }

    func receive(completion: Subscribers.Completion<APIError>) {
        lock.withLock { self.completion = completion }
    }

    var count: Int { lock.withLock { received.count } }
    var isComplete: Bool { lock.withLock { completion != nil } }
    func requestOne() { lock.withLock { subscription }?.request(.max(1)) }
}

@Suite("FreshetCombine: merge and the bounded fan-out over loopback", .timeLimit(.minutes(3)))
struct MergeAndFanOutTests {
    @Test("MergeMany of one publisher per item delivers every item, then finishes (the News app's merge)")
    func mergeManyDeliversAll() async throws {
        try await withSimClient { _, client in
            let ids = try await topIDs(client, count: 10)
            let recorder = Recorder(Publishers.MergeMany(ids.map { client.publisher(for: item($0)) }).eraseToAnyPublisher())
            let completed = await recorder.waitForCompletion()
            #expect(completed, "the publisher completed")
            #expect(Set(recorder.values.map(\.id)) == Set(ids))
            #expect(recorder.values.count == ids.count)
            guard case .finished = recorder.completion else {
                Issue.record("expected .finished, got \(String(describing: recorder.completion))")
                return
            }
        }
    }

    @Test("merge(with:) chained as the News app does, then scan: the list grows one story at a time")
    func mergeWithAndScan() async throws {
        try await withSimClient { _, client in
            let ids = try await topIDs(client, count: 5)
            let first = client.publisher(for: item(ids[0]))
            let merged = ids.dropFirst().reduce(first) { combined, id in
                combined.merge(with: client.publisher(for: item(id))).eraseToAnyPublisher()
            }
            let recorder = Recorder(merged.scan([Item]()) { stories, story in stories + [story] }.eraseToAnyPublisher())
            let completed = await recorder.waitForCompletion()
            #expect(completed, "the publisher completed")
            #expect(recorder.values.map(\.count) == [1, 2, 3, 4, 5])
            #expect(Set(recorder.values.last?.map(\.id) ?? []) == Set(ids))
        }
    }

    @Test("A merge delivers only what is asked for, one element per unit of demand")
    func mergeHonoursDemand() async throws {
        try await withSimClient { sim, client in
            let ids = try await topIDs(client, count: 4)
            let subscriber = PacedSubscriber<Item>()
            Publishers.MergeMany(ids.map { client.publisher(for: item($0)) }).subscribe(subscriber)
            // Each `eventually` result goes into a `let` before `#expect` (see `eventually`'s note).
            let first = await eventually { subscriber.count == 1 }
            #expect(first)
            // All four responses are in (the merge asked each upstream at once), but only one was asked for.
            let answered = try await eventually { try await SimControl(sim).stats().requests == 5 }
            #expect(answered)
            #expect(subscriber.count == 1)
            for expected in 2...4 {
                subscriber.requestOne()
                let delivered = await eventually { subscriber.count == expected }
                #expect(delivered)
            }
            subscriber.requestOne()
            let finished = await eventually { subscriber.isComplete }
            #expect(finished, "the merge finished")
            #expect(Set(subscriber.received.map(\.id)) == Set(ids))
        }
    }

    @Test("The first failure ends a merge and cancels the requests still in flight")
    func mergeFailsFast() async throws {
        try await withSimClient { sim, client in
            let control = SimControl(sim)
            // A body dripped for 40 s (the server sees the client go when a write fails), and a
            // 404 held until the drip is under way.
            try await control.hold(route: "/users/no-such-user-x")
            let dripping = client.publisher(for: drip(0))
            let missing = client.publisher(for: Endpoint<Data>.get("users", "no-such-user-x"))
            let recorder = Recorder(dripping.merge(with: missing).eraseToAnyPublisher())
            let started = try await eventually { try await control.log().contains { $0.path.hasPrefix("/_sim/drip") } }
            #expect(started, "the drip is under way")
            try await control.release(route: "/users/no-such-user-x")
            let completed = await recorder.waitForCompletion()
            #expect(completed, "the publisher completed")
            guard case .failure(.httpStatus(404, _, _, _)) = recorder.completion else {
                Issue.record("expected the 404, got \(String(describing: recorder.completion))")
                return
            }
            let aborted = try await eventually {
                let log = try await control.log()
                return log.count == 2 && log.contains { $0.path.hasPrefix("/_sim/drip") && $0.aborted }
            }
            #expect(aborted, "the dripping request was cancelled")
        }
    }

    @Test("fanOutPublisher: every result, completion order, at most maxConcurrent in flight; one failure ends nothing")
    func fanOutBound() async throws {
        try await withSimClient { sim, client in
            let control = SimControl(sim)
            let ids = try await topIDs(client, count: 30)
            try await control.setLatency(route: "/v0/item", milliseconds: 5)
            try await control.fault(route: "/v0/item/\(ids[7]).json", status: 404, times: 1)
            try await control.resetLog()
            let recorder = Recorder(client.fanOutPublisher(ids.map(rawItem), maxConcurrent: 4)
                .setFailureType(to: APIError.self).eraseToAnyPublisher())
            let completed = await recorder.waitForCompletion()
            #expect(completed, "the publisher completed")
            #expect(recorder.values.map(\.offset).sorted() == Array(0..<30))
            let failed = recorder.values.filter { if case .failure = $0.result { true } else { false } }.map(\.offset)
            #expect(failed == [7])
            let stats = try await control.stats()
            #expect(stats.requests == 30)
            #expect(stats.maxInFlight <= 4, "bound 4, saw \(stats.maxInFlight)")
        }
    }

    @Test("Cancelling a fan-out mid-flight: the server sees the requests stop")
    func fanOutCancel() async throws {
        try await withSimClient { sim, client in
            let control = SimControl(sim)
            let recorder = Recorder(client.fanOutPublisher((0..<40).map(drip), maxConcurrent: 4)
                .setFailureType(to: APIError.self).eraseToAnyPublisher())
            let dripping = try await eventually { try await control.log().count == 4 }
            #expect(dripping, "four bodies dripping")
            recorder.cancellable?.cancel()
            let stopped = try await eventually {
                let log = try await control.log()
                return log.count == 4 && log.allSatisfy(\.aborted)
            }
            let paths = try await control.log().map(\.path)
            #expect(stopped, "the four in flight were aborted and no new one started: \(paths)")
            #expect(try await control.stats().requests == 4)
            #expect(recorder.values.isEmpty)
        }
    }
}
