import Foundation
import Freshet
import FreshetCache
import FreshetSimulator
import FreshetTestSupport
import FreshetTransports
import GitHubAPI
import HTTPTypes
import OpenAPIRuntime
import Testing

/// The route every fault is put on: the events of one repository (what `freshet feed` asks for).
private let eventsRoute = "/repos/ReactiveX/RxSwift/events"
private let eventsEndpoint = GitHub.repoEvents(owner: "ReactiveX", name: "RxSwift", perPage: 100)

/// How one call is allowed to end.
enum FaultOutcome: Sendable, CustomStringConvertible {
    /// The decoded value, after any retries.
    case success
    /// A typed error this predicate accepts.
    case failure(String, @Sendable (APIError) -> Bool)
    /// Success, or the failure given.
    indirect case successOr(FaultOutcome)

    var description: String {
        switch self {
        case .success: return "success"
        case .failure(let name, _): return name
        case .successOr(let failure): return "success or \(failure)"
        }
    }

    static let timedOut = FaultOutcome.failure("timedOut") { if case .timedOut = $0 { true } else { false } }
    static let transport = FaultOutcome.failure("transport") { if case .transport = $0 { true } else { false } }
    static let decoding = FaultOutcome.failure("decodingFailed") { if case .decodingFailed = $0 { true } else { false } }
    static let tooLarge = FaultOutcome.failure("bodyTooLarge") { if case .bodyTooLarge = $0 { true } else { false } }
    static let tooLargeOrTimedOut = FaultOutcome.failure("bodyTooLarge or timedOut") {
        switch $0 {
        case .bodyTooLarge, .timedOut: true
        default: false
        }
    }
    /// The typed error, or success when a first attempt that timed out was retried.
    static let tooLargeOrRetried = FaultOutcome.successOr(tooLargeOrTimedOut)
    static let rateLimited = FaultOutcome.failure("rateLimited") { if case .rateLimited = $0 { true } else { false } }
    static let retryLater = FaultOutcome.failure("retryLater") { if case .retryLater = $0 { true } else { false } }
    static let unreachable = FaultOutcome.failure("unreachable") { if case .unreachable = $0 { true } else { false } }
    static let loop = FaultOutcome.failure("redirectRefused(loop)") {
        if case .redirectRefused(let reason, _) = $0 { reason.contains("loop") } else { false }
    }
    static func status(_ code: Int) -> FaultOutcome {
        .failure("httpStatus(\(code))") { if case .httpStatus(code, _, _, _) = $0 { true } else { false } }
    }
}

/// What a refresh over a stored response ends in when the fault hits every attempt.
enum StoredOutcome: Sendable {
    /// The stored response is served, flagged stale, with the reason.
    case servedStale
    /// The call ends as ``WireFault/always`` says; the stored response is left as it was.
    case failsLeavingStored
    /// The server's redirect is a valid answer: it replaces the stored one and is followed.
    case followsRedirect
    /// A `200` with valid JSON of the wrong shape is a valid HTTP answer, so an HTTP cache keeps
    /// it; only the typed layer can tell. Checked by the typed error alone.
    case notChecked
}

/// One way the server misbehaves, and how a call through Freshet's standard chain must end.
struct WireFault: Sendable, CustomTestStringConvertible {
    /// A short name for the test report.
    var name: String
    /// Puts the fault on `route` for the next `times` requests.
    var inject: @Sendable (RunningSimulator, String, Int) async throws -> Void
    /// The outcome when the fault hits once, with nothing stored. Failures in the body are retried
    /// too: the coalescing middleware (inside the retry) reads the body before handing it on.
    var once: FaultOutcome
    /// The outcome when the fault hits every attempt, with nothing stored.
    var always: FaultOutcome
    /// The outcome of a refresh over a stored response when the fault hits every attempt.
    var stored: StoredOutcome

    var testDescription: String { name }

    static func status(_ code: Int, headers: [String: String] = [:], body: String? = nil) -> @Sendable (RunningSimulator, String, Int) async throws -> Void {
        { sim, route, times in
            await sim.simulator.injectFaults(Fault(route: route, status: code, times: times, headers: headers, body: body))
        }
    }

    static func mode(_ kind: FaultModeKind, bytes: Int? = nil, chunk: Int? = nil, intervalMs: Int? = nil,
                     delayMs: Int? = nil, size: Int? = nil, chunked: Bool? = nil)
        -> @Sendable (RunningSimulator, String, Int) async throws -> Void
    {
        { sim, route, times in
            await sim.simulator.injectFaultMode(FaultMode(
                route: route, mode: kind, times: times, bytes: bytes, chunk: chunk, intervalMs: intervalMs,
                delayMs: delayMs, size: size, chunked: chunked))
        }
    }

    /// Every fault of the matrix.
    static let all: [WireFault] = [
        WireFault(name: "delay before headers (longer than the client's deadline)",
                  inject: mode(.delay, delayMs: 30_000), once: .success, always: .timedOut, stored: .servedStale),
        WireFault(name: "slow drip body (longer than the client's deadline)",
                  inject: mode(.drip, chunk: 16, intervalMs: 250), once: .success, always: .timedOut, stored: .servedStale),
        WireFault(name: "connection reset mid-body",
                  inject: mode(.resetMidBody, bytes: 700), once: .success, always: .transport, stored: .servedStale),
        WireFault(name: "Content-Length longer than the body, then close",
                  inject: mode(.shortBody, bytes: 700), once: .success, always: .transport, stored: .servedStale),
        WireFault(name: "chunked stream cut short",
                  inject: mode(.chunkedCut, bytes: 700), once: .success, always: .transport, stored: .servedStale),
        WireFault(name: "5xx storm (502)", inject: status(502), once: .success, always: .status(502), stored: .servedStale),
        WireFault(name: "500 with an HTML body", inject: status(500, headers: ["Content-Type": "text/html"], body: "<h1>oops</h1>"),
                  once: .success, always: .status(500), stored: .servedStale),
        WireFault(name: "503 with Retry-After: 2", inject: status(503, headers: ["Retry-After": "2"]),
                  once: .success, always: .status(503), stored: .servedStale),
        WireFault(name: "503 with Retry-After past the cap", inject: status(503, headers: ["Retry-After": "86400"]),
                  once: .retryLater, always: .retryLater, stored: .servedStale),
        WireFault(name: "429 with Retry-After: 1", inject: status(429, headers: ["Retry-After": "1"]),
                  once: .success, always: .rateLimited, stored: .failsLeavingStored),
        WireFault(name: "429 with Retry-After past the cap", inject: status(429, headers: ["Retry-After": "86400"]),
                  once: .rateLimited, always: .rateLimited, stored: .failsLeavingStored),
        WireFault(name: "malformed JSON", inject: status(200, body: #"[{"id": "1", "type": ]"#),
                  once: .decoding, always: .decoding, stored: .servedStale),
        WireFault(name: "truncated JSON", inject: status(200, body: #"[{"id":"1","type":"WatchEvent","actor":{"id":1,"lo"#),
                  once: .decoding, always: .decoding, stored: .servedStale),
        WireFault(name: "JSON of the wrong shape", inject: status(200, body: #"{"message": "not a list"}"#),
                  once: .decoding, always: .decoding, stored: .notChecked),
        WireFault(name: "50 MiB body with Content-Length", inject: mode(.huge),
                  once: .tooLarge, always: .tooLarge, stored: .failsLeavingStored),
        // Reading 10 MiB on a loaded machine may outlast the deadline, which is retried as a timeout.
        WireFault(name: "50 MiB body, chunked", inject: mode(.huge, chunked: true),
                  once: .tooLargeOrRetried, always: .tooLargeOrTimedOut, stored: .failsLeavingStored),
        WireFault(name: "redirect loop", inject: { sim, route, times in
                      await sim.simulator.injectFaults(Fault(route: route, status: 302, times: times * 20,
                                                             headers: ["Location": route + "?loop=1"]))
                  }, once: .loop, always: .loop, stored: .failsLeavingStored),
        WireFault(name: "redirect to another host (same data there)", inject: { sim, route, times in
                      // `localhost` is another origin than `127.0.0.1`; the lowercased path is the same
                      // repository without matching the fault's route again.
                      let port = sim.port
                      await sim.simulator.injectFaults(Fault(route: route, status: 301, times: times,
                                                             headers: ["Location": "http://localhost:\(port)\(route.lowercased())?per_page=100"]))
                  }, once: .success, always: .success, stored: .followsRedirect),
        WireFault(name: "redirect to a host that refuses connections", inject: { sim, route, times in
                      let dead = try await closedLoopbackURL()
                      await sim.simulator.injectFaults(Fault(route: route, status: 307, times: times,
                                                             headers: ["Location": dead.absoluteString + route]))
                  }, once: .unreachable, always: .unreachable, stored: .failsLeavingStored),
    ]
}

/// A client with Freshet's standard chain (logging left out): redirects, retry (3 attempts,
/// waits recorded instead of slept), rate limit, coalescing, and optionally the SQLite HTTP cache
/// serving stored data on failure, as the apps configure it.
private struct MatrixClient {
    let client: APIClient
    let sleeps: SleepRecorder

    /// The deadline of one faulted request: short, so a stalled server costs seconds, not minutes.
    static let deadline: Duration = .seconds(8)

    init(sim: RunningSimulator, cacheDirectory: URL?) throws {
        sleeps = SleepRecorder()
        let transport = Transports.asyncHTTPClient(timeout: Self.deadline)
        var innermost: [any ClientMiddleware] = []
        if let cacheDirectory {
            let store = SQLiteCacheStore(writer: try cacheDatabase(in: cacheDirectory))
            innermost.append(CacheMiddleware(store: store, options: .init(serveStaleOnFailure: true)))
        }
        let middlewares = Middlewares.standard(
            retry: RetryMiddleware(sleep: sleeps.sleep, random: { 0.5 }), innermost: innermost)
        client = APIClient(baseURL: sim.baseURL, transport: transport, middlewares: middlewares)
    }

    func events(refresh: Bool = false) async -> Result<Response<[GitHubEvent]>, APIError> {
        var endpoint = eventsEndpoint
        if refresh { endpoint.headers[.cacheControl] = "max-age=0" }
        return await Result { () async throws(APIError) in try await client.send(endpoint) }
    }
}

/// `result` in a few words (a whole response would bury the failure message).
private func brief(_ result: Result<Response<[GitHubEvent]>, APIError>) -> String {
    switch result {
    case .success(let response): return "success (\(response.value.count) events, cache: \(response.cache.map { "\($0)" } ?? "none"))"
    case .failure(let error): return "\(error)"
    }
}

/// Checks `result` against `expected`; returns the events on success.
@discardableResult
private func check(_ result: Result<Response<[GitHubEvent]>, APIError>, _ expected: FaultOutcome, _ context: String)
    -> [GitHubEvent]?
{
    switch (result, expected) {
    case (.success, .successOr):
        return check(result, .success, context)
    case (.failure, .successOr(let failure)):
        return check(result, failure, context)
    case (.success(let response), .success):
        #expect(response.value.count == 100, "\(context)")
        return response.value
    case (.failure(let error), .failure(let name, let accepts)):
        #expect(accepts(error), "\(context): expected \(name), got \(error)")
        // The message a person sees names what happened; it never is empty.
        #expect(!error.description.isEmpty)
    default:
        Issue.record("\(context): expected \(expected), got \(brief(result))")
    }
    return nil
}

@Suite("Fault matrix: every wire fault × a library call", .serialized, .timeLimit(.minutes(2)))
struct FaultMatrixTests {
    @Test("The fault once: the retry recovers, or the documented typed error", arguments: WireFault.all)
    func once(fault: WireFault) async throws {
        try await withSimulator(.init()) { sim in
            let matrix = try MatrixClient(sim: sim, cacheDirectory: nil)
            try await fault.inject(sim, eventsRoute, 1)
            check(await matrix.events(), fault.once, fault.name)
            // The server is fine again: the next call succeeds (nothing was left broken).
            await sim.simulator.clearFaults()
            await sim.simulator.clearFaultModes()
            check(await matrix.events(), .success, "\(fault.name), afterwards")
            #expect(matrix.sleeps.sleeps.count <= 2, "at most two waits for three attempts")
        }
    }

    @Test("The fault on every attempt: the documented typed error, within the retry budget", arguments: WireFault.all)
    func always(fault: WireFault) async throws {
        try await withSimulator(.init()) { sim in
            let matrix = try MatrixClient(sim: sim, cacheDirectory: nil)
            try await fault.inject(sim, eventsRoute, 1000)
            check(await matrix.events(), fault.always, fault.name)
            let attempts = await sim.simulator.requestLog().filter { $0.path.hasPrefix(eventsRoute) }.count
            #expect(attempts <= 3 || fault.name.contains("redirect"), "\(fault.name): \(attempts) requests for 3 attempts")
        }
    }

    @Test("With a stored response: served stale or the typed error, and the stored response is intact", arguments: WireFault.all)
    func storedSurvives(fault: WireFault) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("freshet-matrix-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withSimulator(.init()) { sim in
            let matrix = try MatrixClient(sim: sim, cacheDirectory: directory)
            let stored = try #require(check(await matrix.events(), .success, "\(fault.name): first fetch"))

            try await fault.inject(sim, eventsRoute, 1000)
            let refreshed = await matrix.events(refresh: true)
            switch fault.stored {
            case .servedStale:
                let response = try #require(try? refreshed.get(), "\(fault.name): expected the stored response, got \(brief(refreshed))")
                #expect(response.cache == .stale, "\(fault.name)")
                #expect(response.staleReason?.description.isEmpty == false, "\(fault.name): the reason is given")
                #expect(response.value.map(\.id) == stored.map(\.id), "\(fault.name)")
            case .failsLeavingStored, .notChecked:
                check(refreshed, fault.always, fault.name)
            case .followsRedirect:
                check(refreshed, .success, fault.name)
            }
            guard fault.stored != .notChecked else { return }

            // Stored data is intact: with the server failing everything, the stored response is
            // served, decodable and unchanged (after a redirect: the redirect, then the target's).
            await sim.simulator.clearFaults()
            await sim.simulator.clearFaultModes()
            await sim.simulator.injectFaults(Fault(route: eventsRoute, status: 503, times: 1000))
            let after = await matrix.events(refresh: true)
            let response = try #require(try? after.get(), "\(fault.name): the stored response is gone or broken: \(brief(after))")
            if fault.stored != .followsRedirect { #expect(response.cache == .stale, "\(fault.name)") }
            #expect(response.value.map(\.id) == stored.map(\.id), "\(fault.name)")
        }
    }

    @Test("Fault modes are set over HTTP too, and break the wire as named: RST, early close, cut chunked stream")
    func faultModesOverHTTP() async throws {
        try await withSimulator(.init()) { sim in
            let control = SimControl(sim)
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport)
            let expected = [
                ("reset-mid-body", "connection reset by peer"),
                ("short-body", "the connection closed before the response was complete"),
                ("chunked-cut", "the connection closed before the response was complete"),
            ]
            for (mode, reason) in expected {
                try await control.post("fault-mode", ["route": eventsRoute, "mode": mode, "bytes": 1000])
                let result = await Result { () async throws(APIError) in try await client.send(eventsEndpoint) }
                guard case .failure(let error) = result, case .transport = error, let shown = error.reason else {
                    Issue.record("\(mode): expected a transport failure, got \(result)")
                    continue
                }
                #expect(shown == reason, "\(mode)")
            }
            let entries = await sim.simulator.requestLog()
            #expect(entries.count == 3)
            for entry in entries {
                let done = await sim.simulator.waitForCompletion(ofRequest: entry.id)
                #expect(done?.aborted == true && done?.bytesSent == 1000, "\(String(describing: done))")
            }
            // A bad command is refused, and DELETE clears what is queued.
            await #expect(throws: APIError.self) { try await control.post("fault-mode", ["mode": "melt"]) }
            try await control.post("fault-mode", ["route": eventsRoute, "mode": "short-body", "times": 5])
            _ = try await client.send(Endpoint<Data>(method: .delete, path: ["_sim", "fault-mode"]) { data, _ in data })
            #expect(try await client.send(eventsEndpoint).value.count == 100)
        }
    }

    @Test("A 50 MiB body is refused without being read whole, with and without Content-Length", arguments: [false, true])
    func hugeBodyIsNotReadWhole(chunked: Bool) async throws {
        try await withSimulator(.init()) { sim in
            // No retry here and a generous deadline: the limit alone must stop the read.
            let client = APIClient(baseURL: sim.baseURL, transport: Transports.asyncHTTPClient(timeout: .seconds(60)))
            try await WireFault.mode(.huge, chunked: chunked)(sim, eventsRoute, 1)
            let result = await Result { () async throws(APIError) in try await client.send(eventsEndpoint) }
            check(result, .tooLarge, "huge, chunked: \(chunked)")
            let entry = try #require(await sim.simulator.requestLog().first)
            let done = await sim.simulator.waitForCompletion(ofRequest: entry.id, timeout: .seconds(30))
            #expect(done?.aborted == true, "the client hung up instead of reading on")
            #expect((done?.bytesSent ?? .max) < FaultMode.defaultHugeSize)
        }
    }
}
