import Foundation
import Freshet
import FreshetTestSupport
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

    @Test("Fan-out never has more than N requests in flight, and yields every result")
    func fanOutBound() async throws {
        try await withSimClient { sim, client in
            let control = SimControl(sim)
            let ids = try await client.value(Endpoint<[Int]>.get("v0", "topstories.json")).prefix(60)
            try await control.resetLog()
            try await control.setLatency(route: "/v0/item", milliseconds: 30)
            let endpoints = ids.map { Endpoint<Data>.raw("v0", "item", "\($0).json") }
            var offsets: [Int] = []
            for await item in client.fanOut(endpoints, maxConcurrent: 4) {
                #expect(throws: Never.self) { try item.result.get() }
                offsets.append(item.offset)
            }
            #expect(offsets.sorted() == Array(0..<60))
            let stats = try await control.stats()
            #expect(stats.requests == 60)
            #expect(stats.maxInFlight <= 4)
            #expect(stats.maxInFlight >= 1)
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

    @Test("Stopping the iteration early cancels what is in flight")
    func fanOutStopsEarly() async throws {
        try await withSimClient { sim, client in
            let control = SimControl(sim)
            try await control.setLatency(route: "/v0/item", milliseconds: 50)
            let endpoints = (1...200).map { Endpoint<Data>.raw("v0", "item", "\($0).json") }
            var seen = 0
            for await _ in client.fanOut(endpoints, maxConcurrent: 4) {
                seen += 1
                if seen == 3 { break }
            }
            let settled = try await eventually { try await control.stats().inFlight == 0 }
            #expect(settled)
            #expect(try await control.stats().requests < 200)
        }
    }
}
