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

/// A minimal GitHub user shape.
struct Login: Decodable, Sendable, Equatable {
    let login: String
}

/// Collects what a publisher delivers, for assertions.
final class Recorder<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var _values: [Value] = []
    private var _completion: Subscribers.Completion<APIError>?
    var cancellable: AnyCancellable?

    var values: [Value] { lock.withLock { _values } }
    var completion: Subscribers.Completion<APIError>? { lock.withLock { _completion } }

    init(_ publisher: AnyPublisher<Value, APIError>) {
        cancellable = publisher.sink(
            receiveCompletion: { [self] completion in
                lock.withLock { _completion = completion }
            },
            receiveValue: { [self] value in lock.withLock { _values.append(value) } })
    }

    /// Waits until the publisher completes, for at most `seconds`; whether it did.
    func waitForCompletion(within seconds: Double = 30) async -> Bool {
        await eventually(within: seconds) { self.completion != nil }
    }
}

@Suite("Combine publishers over loopback", .timeLimit(.minutes(2)))
struct PublisherTests {
    @Test func deliversOneValueThenFinishes() async throws {
        try await withSimClient { _, client in
            let recorder = Recorder(client.publisher(for: Endpoint<Login>.get("users", "octocat")))
            let completed = await recorder.waitForCompletion()
            #expect(completed, "the publisher completed")
            #expect(recorder.values == [Login(login: "octocat")])
            guard case .finished = recorder.completion else {
                Issue.record("expected .finished, got \(String(describing: recorder.completion))")
                return
            }
        }
    }

    @Test func deliversTypedFailures() async throws {
        try await withSimClient { _, client in
            let recorder = Recorder(client.publisher(for: Endpoint<Login>.get("users", "no-such-user-x")))
            let completed = await recorder.waitForCompletion()
            #expect(completed, "the publisher completed")
            #expect(recorder.values.isEmpty)
            guard case .failure(.httpStatus(404, _, _, _)) = recorder.completion else {
                Issue.record("expected a 404 failure, got \(String(describing: recorder.completion))")
                return
            }
        }
    }

    @Test("Cancelling the subscription cancels the HTTP exchange")
    func cancellingReachesTheServer() async throws {
        try await withSimClient { sim, client in
            let control = SimControl(sim)
            let slow = Endpoint<Data>.raw("_sim", "drip", query: [
                QueryItem("bytes", "200000"), QueryItem("chunk", "100"), QueryItem("intervalMs", "20"),
            ])
            let recorder = Recorder(client.publisher(for: slow))
            let started = try await eventually { try await control.log().contains { $0.path.hasPrefix("/_sim/drip") } }
            #expect(started)
            recorder.cancellable?.cancel()
            let aborted = try await eventually {
                try await control.log().first { $0.path.hasPrefix("/_sim/drip") }?.aborted == true
            }
            #expect(aborted, "the server never saw the connection close")
            #expect(recorder.values.isEmpty)
            #expect(recorder.completion == nil)
        }
    }
}
