import Foundation
import Freshet
import FreshetCache
import FreshetSimulator
import FreshetTestSupport
import FreshetTransports
import HTTPTypes
import HackerNewsAPI
import OpenAPIRuntime
import Synchronization
import Testing

/// `APIClient.events(_:)` against the simulator's test stream (`/_sim/sse`), over the live
/// transport: parsing across chunk boundaries, reconnection with `Last-Event-ID` and `retry:`,
/// `204`, a refused credential refreshed once, the idle timeout, and cancellation as the server
/// sees it.
@Suite("Server-Sent Events", .timeLimit(.minutes(2)))
struct EventStreamTests {
    /// The test stream's data: `{"n": 1, "text": "event 1"}`.
    struct Tick: Decodable, Sendable, Equatable {
        var n: Int
        var text: String
    }

    static func ticks(_ query: [QueryItem]) -> Endpoint<Tick> {
        Endpoint<Tick>(path: ["_sim", "sse"], query: query)
    }

    /// The first `count` events of `stream` (the loop is left after them, closing the connection).
    static func first<Value>(_ count: Int, of stream: EventStream<Value>) async throws -> [StreamEvent<Value>] {
        var events: [StreamEvent<Value>] = []
        for try await event in stream {
            events.append(event)
            if events.count == count { break }
        }
        return events
    }

    /// The states a stream went through, recorded.
    final class States: Sendable {
        private let all = Mutex<[EventStreamState]>([])
        var values: [EventStreamState] { all.withLock { $0 } }
        var record: @Sendable (EventStreamState) -> Void { { [self] state in all.withLock { $0.append(state) } } }
        var reconnections: [(after: Duration, cause: APIError)] {
            values.compactMap { if case .reconnecting(let after, let cause) = $0 { (after, cause) } else { nil } }
        }
    }

    static func requests(_ sim: RunningSimulator) async -> [LoggedRequest] {
        await sim.simulator.requestLog().filter { $0.path.hasPrefix("/_sim/sse") }
    }

    /// The `Last-Event-ID` each connection should have sent: the last event that arrived before
    /// it (none for a connection after which no event had arrived — under load a first
    /// connection may time out before its first event).
    static func expectedResumption<Value>(for events: [StreamEvent<Value>]) -> [String?] {
        let connections = events.map(\.connection).max() ?? 1
        return (1...connections).map { connection in events.last { $0.connection < connection }?.id }
    }

    /// The `Last-Event-ID` the server saw on each of those connections (the log is in arrival order).
    static func resumption<Value>(of log: [LoggedRequest], for events: [StreamEvent<Value>]) -> [String?] {
        log.prefix(expectedResumption(for: events).count).map { $0.headers["last-event-id"] }
    }

    @Test("Events parse across any chunk boundary: type, id, multi-line data decoded as JSON", arguments: [1, 2, 3, 7, 64])
    func chunkBoundaries(chunk: Int) async throws {
        try await withSimClient { sim, client in
            let stream = client.events(Self.ticks([.init("count", "4"), .init("chunk", String(chunk)), .init("end", "keepalive")]))
            let events = try await Self.first(4, of: stream)
            #expect(events.map(\.type) == ["tick", "tick", "tick", "tick"])
            #expect(events.map(\.id) == ["1", "2", "3", "4"])
            #expect(events.map(\.connection) == [1, 1, 1, 1])
            #expect(events.first?.data == "{\"n\":1,\n\"text\":\"event 1\"}")
            #expect(try events.map { try $0.value() } == (1...4).map { Tick(n: $0, text: "event \($0)") })
            let request = try #require(await Self.requests(sim).first)
            #expect(request.headers["accept"] == "text/event-stream")
            #expect(request.headers["cache-control"] == "no-cache")
            #expect(request.headers["accept-encoding"] == "identity")
            #expect(request.headers["last-event-id"] == nil)
        }
    }

    @Test("Neither the client's body limit nor the transport's deadline for a whole exchange ends a stream")
    func noBodyLimitNoDeadline() async throws {
        try await withSimulator { sim in
            // 512 bytes of body at most and 2 s for a whole exchange: the ten events, 400 ms
            // apart, come to about 800 bytes of body and 3.6 s.
            let client = APIClient(baseURL: sim.baseURL, transport: Transports.asyncHTTPClient(timeout: .seconds(2)),
                                   maxResponseBytes: 512)
            let stream = client.events(Self.ticks([.init("count", "10"), .init("intervalMs", "400"), .init("end", "keepalive")]))
            let events = try await Self.first(10, of: stream)
            #expect(try events.map { try $0.value().n } == Array(1...10))
            #expect(events.allSatisfy { $0.connection == 1 }, "one connection carried them all")
        }
    }

    @Test("An event that never ends is cut off at the client's body limit: the stream ends, memory stays bounded")
    func endlessEventIsRefused() async throws {
        try await withSimClient(maxResponseBytes: 64 * 1024) { sim, client in
            var received: [Int] = []
            do {
                let options = EventStreamOptions(reconnectDelay: .milliseconds(1))
                for try await event in client.events(Self.ticks([.init("count", "1"), .init("end", "endless")]), options: options) {
                    received.append(try event.value().n)
                }
                Issue.record("the endless event should end the stream")
            } catch let error as APIError {
                guard case .bodyTooLarge(let limit, _) = error else {
                    Issue.record("expected bodyTooLarge, got \(error)")
                    return
                }
                #expect(limit == 64 * 1024)
            }
            #expect(received == [1], "the events before it were delivered")
            let closed = await eventually { await Self.requests(sim).first?.aborted == true }
            #expect(closed)
            #expect(await Self.requests(sim).count == 1, "no reconnection: the same event would come again")
        }
    }

    @Test("After the server ends the stream, the next connection comes after its retry: and sends Last-Event-ID")
    func reconnectsWithLastEventIDAfterRetry() async throws {
        try await withSimClient { sim, client in
            let states = States()
            // The client's own delay would be a minute: only the server's `retry:` makes this quick.
            let options = EventStreamOptions(reconnectDelay: .seconds(60), onState: states.record)
            let stream = client.events(Self.ticks([.init("count", "2"), .init("retryMs", "5")]), options: options)
            let events = try await Self.first(6, of: stream)
            #expect(try events.map { try $0.value().n } == [1, 2, 3, 4, 5, 6])
            #expect(events.map(\.connection) == [1, 1, 2, 2, 3, 3])
            let log = await Self.requests(sim)
            #expect(log.prefix(3).map { $0.headers["last-event-id"] } == [nil, "2", "4"])
            let waits = states.reconnections.map(\.after)
            #expect(waits.count >= 2)
            #expect(waits.allSatisfy { $0 >= .milliseconds(5) && $0 <= .microseconds(7500) }, "waits \(waits)")
            #expect(states.values.prefix(2) == [.connecting(connection: 1), .open(connection: 1)])
        }
    }

    @Test("A connection broken mid-stream is made again, resuming after the last event: no event lost or repeated")
    func brokenConnectionResumes() async throws {
        try await withSimClient { sim, client in
            let states = States()
            let options = EventStreamOptions(reconnectDelay: .milliseconds(10), onState: states.record)
            let stream = client.events(Self.ticks([.init("count", "3"), .init("end", "abort"), .init("chunk", "5")]), options: options)
            let events = try await Self.first(7, of: stream)
            // The server's last event before the break may be lost with the connection (its bytes
            // unsent): each connection resumes after the last event that did arrive.
            #expect(try events.map { try $0.value().n } == Array(1...7))
            let log = await Self.requests(sim)
            #expect(log.count >= 2)
            #expect(Self.resumption(of: log, for: events) == Self.expectedResumption(for: events))
            #expect(Self.expectedResumption(for: events).compactMap { $0 }.count >= 2, "at least two resumptions")
            let first = try #require(states.reconnections.first)
            #expect(first.after >= .milliseconds(10), "a broken connection waits the reconnection delay")
            guard case .transport = first.cause else {
                Issue.record("expected a transport failure, got \(first.cause)")
                return
            }
        }
    }

    @Test("204 No Content ends the stream: no further connection")
    func noContentStops() async throws {
        try await withSimClient { sim, client in
            var values: [Int] = []
            for try await event in client.events(Self.ticks([.init("count", "2"), .init("stopAt", "2"), .init("retryMs", "1")])) {
                values.append(try event.value().n)
            }
            #expect(values == [1, 2])
            let log = await Self.requests(sim)
            #expect(log.map(\.status) == [200, 204])
        }
    }

    @Test("A 401 on reconnection is refreshed once through the authentication middleware, then the stream resumes")
    func refusedCredentialRefreshedOnReconnect() async throws {
        try await withSimulator { sim in
            let auth = AuthenticationMiddleware.bearer(token: Simulator.accessToken(generation: 0),
                                                       refresh: AuthenticationTests.refresher(sim))
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport, middlewares: [auth])
            // Each connection's token stops working once its events are sent.
            let query: [QueryItem] = [.init("count", "1"), .init("auth", "1"), .init("expire", "1"), .init("retryMs", "1")]
            let events = try await Self.first(2, of: client.events(Self.ticks(query)))
            #expect(try events.map { try $0.value().n } == [1, 2])
            #expect(auth.refreshCount == 1)
            let log = await sim.simulator.requestLog().filter { $0.path.hasPrefix("/_sim/sse") || $0.path == "/oauth/token" }
            #expect(log.prefix(4).map(\.status) == [200, 401, 200, 200])
            let credentials: [String?] = log.prefix(4).map { $0.path.hasPrefix("/_sim/sse") ? $0.headers["authorization"] : "refresh" }
            #expect(credentials == [
                "Bearer " + Simulator.accessToken(generation: 0), "Bearer " + Simulator.accessToken(generation: 0), "refresh",
                "Bearer " + Simulator.accessToken(generation: 1),
            ])
            #expect(log.prefix(4).last?.headers["last-event-id"] == "1")
        }
    }

    @Test("A connection that goes silent is ended by the idle timeout and made again")
    func idleTimeoutEndsAStall() async throws {
        try await withSimClient { sim, client in
            let states = States()
            let options = EventStreamOptions(idleTimeout: .milliseconds(300), reconnectDelay: .milliseconds(10), onState: states.record)
            let stream = client.events(Self.ticks([.init("count", "1"), .init("end", "stall")]), options: options)
            let events = try await Self.first(2, of: stream)
            #expect(try events.map { try $0.value().n } == [1, 2])
            let cause = try #require(states.reconnections.first?.cause)
            guard case .timedOut = cause else {
                Issue.record("expected a timeout, got \(cause)")
                return
            }
            #expect(Self.resumption(of: await Self.requests(sim), for: events) == Self.expectedResumption(for: events))
            #expect(await Self.requests(sim).map { $0.headers["last-event-id"] }.contains("1"))
        }
    }

    @Test("Cancelling the reading task closes the connection, as the server sees it")
    func cancelClosesTheConnection() async throws {
        try await withSimClient { sim, client in
            let received = Mutex(0)
            // A reconnection, were there one, would follow at once.
            let options = EventStreamOptions(reconnectDelay: .milliseconds(1))
            let reader = Task {
                for try await _ in client.events(Self.ticks([.init("count", "1"), .init("end", "keepalive")]), options: options) {
                    received.withLock { $0 += 1 }
                }
            }
            let open = await eventually { received.withLock { $0 } == 1 }
            #expect(open)
            #expect(await Self.requests(sim).first?.aborted == false)
            reader.cancel()
            _ = try? await reader.value
            let closed = await eventually { await Self.requests(sim).first?.aborted == true }
            #expect(closed)
            #expect(await Self.requests(sim).count == 1, "no reconnection after cancel")
        }
    }

    @Test("Leaving the loop closes the connection too")
    func breakClosesTheConnection() async throws {
        try await withSimClient { sim, client in
            let events = try await Self.first(1, of: client.events(Self.ticks([.init("count", "1"), .init("end", "keepalive")])))
            #expect(events.count == 1)
            let closed = await eventually { await Self.requests(sim).first?.aborted == true }
            #expect(closed)
        }
    }

    @Test("An answer that is not an event stream, and a 404, end the stream with an error and no reconnection")
    func definitiveAnswersThrow() async throws {
        try await withSimClient { sim, client in
            let json = Endpoint<Data>.raw("repos", "ReactiveX", "RxSwift")
            await #expect(throws: APIError.notAnEventStream(contentType: "application/json; charset=utf-8",
                                                            url: sim.baseURL.absoluteString + "/repos/ReactiveX/RxSwift")) {
                for try await _ in client.events(json) {}
            }
            let missing = Endpoint<Data>.raw("repos", "nobody", "nothing")
            do {
                for try await _ in client.events(missing) {}
                Issue.record("a 404 should throw")
            } catch let error as APIError {
                #expect(error.response?.head.status.code == 404)
            }
            #expect(await sim.simulator.requestLog().count == 2)
        }
    }

    @Test("A 503 is reconnected after, with the backoff growing for failures in a row; the limit ends it")
    func serverErrorsReconnectThenGiveUp() async throws {
        try await withSimClient { sim, client in
            await sim.simulator.injectFaults(.init(route: "/_sim/sse", status: 503, times: 2))
            let states = States()
            let options = EventStreamOptions(reconnectDelay: .milliseconds(10), onState: states.record)
            let events = try await Self.first(1, of: client.events(Self.ticks([.init("count", "1")]), options: options))
            #expect(try events.map { try $0.value().n } == [1])
            let waits = states.reconnections.map(\.after)
            #expect(waits.count == 2)
            #expect(waits[1] >= .milliseconds(40), "the second failure in a row waits twice as long: \(waits)")

            await sim.simulator.injectFaults(.init(route: "/_sim/sse", status: 503, times: 5))
            let limited = EventStreamOptions(reconnectDelay: .milliseconds(1), maxConsecutiveFailures: 3)
            do {
                for try await _ in client.events(Self.ticks([.init("count", "1")]), options: limited) {}
                Issue.record("three failures in a row should end the stream")
            } catch let error as APIError {
                #expect(error.response?.head.status.code == 503)
            }
        }
    }

    @Test("The cache, coalescing and retries are left out; two streams are two connections, nothing is stored")
    func wholeResponseMiddlewaresAreSkipped() async throws {
        try await withSimulator { sim in
            let store = MemoryCacheStore()
            let cache = CacheMiddleware(store: store, options: .init(mode: .private))
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport,
                                   middlewares: Middlewares.standard(decompression: DecompressionMiddleware(), innermost: [cache]))
            // Answers a cache would store: the client's must not.
            let endpoint = Self.ticks([.init("count", "1"), .init("end", "keepalive"), .init("cache", "1")])
            async let one = Self.first(1, of: client.events(endpoint))
            async let two = Self.first(1, of: client.events(endpoint))
            let (a, b) = try await (one, two)
            #expect(a.count == 1 && b.count == 1)
            #expect(await Self.requests(sim).count == 2)
            #expect(try await store.stats().entries == 0)
        }
    }

    @Test("The reconnection delay: the base (the server's retry:), doubled per failure in a row up to the cap, plus up to half for jitter")
    func reconnectionDelay() {
        typealias Connection = ReconnectBackoff
        #expect(Connection.delay(base: .seconds(1), failures: 0, cap: .seconds(30), random: 0) == .seconds(1))
        #expect(Connection.delay(base: .seconds(1), failures: 0, cap: .seconds(30), random: 1) == .milliseconds(1500))
        #expect(Connection.delay(base: .seconds(1), failures: 3, cap: .seconds(30), random: 0) == .seconds(8))
        #expect(Connection.delay(base: .seconds(1), failures: 10, cap: .seconds(30), random: 0) == .seconds(30))
        #expect(Connection.delay(base: .seconds(60), failures: 2, cap: .seconds(30), random: 0) == .seconds(60),
                "a server's retry: longer than the cap is still honoured")
    }

    @Test("Firebase's stream, simulated: the 307 followed, the whole list put, keep-alives, a patch when the list moves on")
    func firebaseListStream() async throws {
        var configuration = SimulatorConfiguration()
        configuration.streamKeepAlive = .milliseconds(50)
        try await withSimulator(configuration) { sim in
            let client = APIClient(baseURL: sim.baseURL.appending(path: "v0"), transport: liveTransport,
                                   middlewares: [RedirectMiddleware()])
            let top = try await client.value(HackerNews.stories(.top))
            var list = HackerNews.LiveList()
            var types: [String] = []
            var advanced = false
            for try await event in client.events(HackerNews.listChanges(.top)) {
                types.append(event.type)
                if event.type == "put" || event.type == "patch" { list.apply(event.type, try event.value()) }
                if types == ["put"] { #expect(list.ids == top) }
                // One step only: under load several keep-alives can be read before the patch, and
                // a second step would land in the same patch.
                if event.type == "keep-alive", !advanced {
                    sim.simulator.advanceHackerNews()
                    advanced = true
                }
                if event.type == "patch" { break }
            }
            #expect(types.first == "put")
            #expect(types.contains("keep-alive"))
            let newcomer = try await client.value(HackerNews.stories(.new)).first { !top.contains($0) }
            #expect(list.ids == Array(([try #require(newcomer)] + top).prefix(500)), "the patch moved every rank down by one")
            let log = await sim.simulator.requestLog().filter { $0.path.hasPrefix("/v0/topstories.json") }
            #expect(log.map(\.status).prefix(3) == [200, 307, 200])
            #expect(log.dropFirst(2).first?.path == "/v0/topstories.json?ns=hacker-news")
        }
    }
}
