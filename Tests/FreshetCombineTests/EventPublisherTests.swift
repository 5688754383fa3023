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

/// `eventPublisher(for:)` over the simulator's test stream: events one per unit of demand, and
/// cancelling closes the connection at the server.
@Suite("Combine: event streams", .timeLimit(.minutes(2)))
struct EventPublisherTests {
    struct Tick: Decodable, Sendable, Equatable { var n: Int }

    static let ticks = Endpoint<Tick>(path: ["_sim", "sse"], query: [QueryItem("count", "3"), QueryItem("end", "keepalive")])

    /// A subscriber that asks for one event at a time, when told to.
    final class OneAtATime: Subscriber, @unchecked Sendable {
        typealias Input = StreamEvent<Tick>
        typealias Failure = APIError
        private let lock = NSLock()
        private var subscription: (any Subscription)?
        private var received: [Int] = []

        var values: [Int] { lock.withLock { received } }

        func receive(subscription: any Subscription) {
            lock.withLock { self.subscription = subscription }
            subscription.request(.max(1))
        }

        func receive(_ input: StreamEvent<Tick>) -> Subscribers.Demand {
            lock.withLock { received.append((try? input.value().n) ?? -1) }
            return .none
        }

        func receive(completion: Subscribers.Completion<APIError>) {}

        func askForOneMore() { lock.withLock { subscription }?.request(.max(1)) }
        func cancel() { lock.withLock { subscription }?.cancel() }
    }

    @Test("Events arrive one per unit of demand; cancelling closes the connection")
    func demandAndCancel() async throws {
        try await withSimClient { sim, client in
            let subscriber = OneAtATime()
            client.eventPublisher(for: Self.ticks).subscribe(subscriber)
            let first = await eventually { subscriber.values == [1] }
            #expect(first)
            // The server has sent all three by now; only one was asked for.
            let sent = await eventually { (try? await SimControl(sim).log().first?.bytesSent ?? 0) ?? 0 > 200 }
            #expect(sent)
            #expect(subscriber.values == [1], "no event without demand")
            subscriber.askForOneMore()
            let second = await eventually { subscriber.values == [1, 2] }
            #expect(second)
            subscriber.cancel()
            let closed = await eventually { (try? await SimControl(sim).log().first?.aborted) == true }
            #expect(closed, "cancelling the subscription closed the connection")
        }
    }

    @Test("prefix(3) takes three events and finishes")
    func prefixFinishes() async throws {
        try await withSimClient { _, client in
            // Five events: OpenCombine's prefix finishes when the one after the third arrives.
            let five = Endpoint<Tick>(path: ["_sim", "sse"], query: [QueryItem("count", "5"), QueryItem("end", "keepalive")])
            let recorder = Recorder(client.eventPublisher(for: five).tryMap { try $0.value().n }
                .mapError { ($0 as? APIError) ?? .cancelled }.prefix(3).eraseToAnyPublisher())
            let completed = await recorder.waitForCompletion()
            #expect(completed, "\(recorder.values) \(String(describing: recorder.completion))")
            #expect(recorder.values == [1, 2, 3])
        }
    }
}
