public import Foundation
import Hummingbird
import Logging
import Synchronization

/// An in-process HTTP server that behaves like the GitHub REST API, the Hacker News
/// Firebase API and Kakao's Daum blog search, all on one origin, with deterministic
/// data and control endpoints under `/_sim/`.
///
/// ```swift
/// try await withSimulator { sim in
///     let url = sim.baseURL.appending(path: "repos/ReactiveX/RxSwift/events")
///     …
///     #expect(await sim.simulator.requestLog().count == 1)
/// }
/// ```
///
/// Each API is a controller on a Hummingbird `Router` (`GitHub/`, `HackerNews/`, `Kakao/`,
/// `Avatars/`, `Testing/`), behind middleware that records, delays and faults requests
/// (`Middleware/`); the `/_sim/` control endpoints (`Control/`) have a router of their own.
/// ``Simulator/routes`` lists the routes (also served as JSON by `GET /_sim/routes`).
public final class Simulator: Sendable {
    /// The configuration the data was generated from.
    public let configuration: SimulatorConfiguration
    /// Epoch seconds every generated timestamp counts back from.
    let anchor: Int
    let github: GitHubWorld
    let hackerNews: HackerNewsWorld
    let kakao: KakaoWorld
    let state: Mutex<SimulatorState>

    /// Generates all data for `configuration`. Nothing listens until ``run(host:port:onListening:)``.
    public init(configuration: SimulatorConfiguration = .init()) {
        self.configuration = configuration
        let anchor = Int((configuration.anchorDate ?? Date()).timeIntervalSince1970.rounded(.down))
        self.anchor = anchor
        self.github = GitHubWorld(seed: configuration.seed, anchor: anchor, configuredRepos: configuration.repos)
        self.hackerNews = HackerNewsWorld(seed: configuration.seed, anchor: anchor, storyCount: configuration.hnStoryCount)
        self.kakao = KakaoWorld(seed: configuration.seed, anchor: anchor)
        self.state = Mutex(SimulatorState())
    }

    /// Serves until the calling task is cancelled (or, when run inside a
    /// swift-service-lifecycle `ServiceGroup`, until graceful shutdown, which lets open
    /// responses finish; `/_sim/drip` responses are cut off after 120 s at the latest).
    ///
    /// - Parameters:
    ///   - host: Loopback address to bind: `127.0.0.1` (default), `::1` or `localhost`.
    ///     Any other host throws ``SimulatorError/nonLoopbackHost(_:)``.
    ///   - port: Port to bind; `0` picks a free one.
    ///   - onListening: Called once with the bound port when the server accepts connections.
    ///
    /// Cancellation is prompt: open responses (including `/_sim/drip`) are aborted and
    /// recorded as `aborted` in the request log.
    public func run(
        host: String = "127.0.0.1",
        port: Int = 0,
        onListening: @escaping @Sendable (Int) async -> Void
    ) async throws {
        guard Self.isLoopback(host) else { throw SimulatorError.nonLoopbackHost(host) }
        state.withLock { $0.shuttingDown = false }
        let app = Application(
            responder: makeResponder(),
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in
                await onListening(channel.localAddress?.port ?? port)
            },
            logger: configuration.logger
        )
        defer { state.withLock { $0.shuttingDown = true } }
        do {
            try await withTaskCancellationHandler {
                try await app.run()
            } onCancel: {
                self.state.withLock { $0.shuttingDown = true }
            }
        } catch {
            if Task.isCancelled { return }
            throw error
        }
    }

    static func isLoopback(_ host: String) -> Bool {
        ["127.0.0.1", "::1", "localhost"].contains(host.lowercased())
    }

    var isShuttingDown: Bool { state.withLock { $0.shuttingDown } }

    /// Current time in epoch seconds.
    static func now() -> Int { Int(Date().timeIntervalSince1970) }

    // MARK: - Swift accessors mirroring the control endpoints

    /// The recorded requests in arrival order (`GET /_sim/log`).
    public func requestLog() async -> [LoggedRequest] {
        state.withLock { $0.log }
    }

    /// Clears the request log and the statistics (`DELETE /_sim/log`). Requests still in
    /// flight keep counting in ``SimulatorStats/inFlight``.
    public func resetLog() async {
        state.withLock { $0.resetLog() }
    }

    /// Request counters (`GET /_sim/stats`).
    public func stats() async -> SimulatorStats {
        state.withLock { SimulatorStats(requests: $0.requests, inFlight: $0.inFlight, maxInFlight: $0.maxInFlight) }
    }

    /// Delays the response head of every recorded request whose path starts with `route`
    /// (`""` = all) by `milliseconds` (`POST /_sim/latency`); `0` removes the delay. When
    /// several routes match, the longest wins.
    public func setLatency(route: String, milliseconds: Int) async {
        state.withLock {
            if milliseconds <= 0 {
                $0.latencies[route] = nil
            } else {
                $0.latencies[route] = min(milliseconds, 120_000)
            }
        }
    }

    /// Holds every request whose path starts with `route` before its response, until
    /// ``release(route:)`` (`POST /_sim/hold`); a request waits 120 s at most.
    public func hold(route: String) async {
        _ = state.withLock { $0.holds.insert(route) }
    }

    /// Lets the requests held under `route` go on, or every held request when `route` is `nil`
    /// (`DELETE /_sim/hold`).
    public func release(route: String? = nil) async {
        state.withLock { state in
            if let route { state.holds.remove(route) } else { state.holds.removeAll() }
        }
    }

    /// Prepends `count` new deterministic events to the feed of `repo` (`owner/name`),
    /// which changes its ETag and Last-Modified (`POST /_sim/events`).
    /// - Returns: `false` when the repository does not exist.
    @discardableResult
    public func addEvents(repo: String, count: Int) async -> Bool {
        addEventsNow(repo: repo, count: count)
    }

    /// Queues a canned response for the next ``Fault/times`` matching requests
    /// (`POST /_sim/faults`). Faults are consumed in the order they were added.
    public func injectFaults(_ fault: Fault) async {
        guard fault.times > 0 else { return }
        state.withLock { $0.faults.append(fault) }
    }

    /// Removes every queued fault (`DELETE /_sim/faults`).
    public func clearFaults() async {
        state.withLock { $0.faults.removeAll() }
    }

    /// Sets GitHub rate-limit budgets (`POST /_sim/ratelimit`).
    /// - Parameters:
    ///   - resource: `core` or `search`.
    ///   - remaining: Requests left in the current window.
    ///   - reset: Epoch seconds when the window resets; default: one window from now.
    ///   - authenticated: Which budgets: `false` the anonymous one, `true` every token's (those
    ///     already charged, and those first charged before this window resets), `nil` both.
    public func setRateLimit(resource: RateLimitResource, remaining: Int, reset: Int? = nil, authenticated: Bool? = nil) async {
        let now = Self.now()
        let reset = reset ?? now + RateLimitBucket.window(resource)
        state.withLock { state in
            if authenticated != true {
                let bucket = RateLimitBucket(limit: RateLimitBucket.limit(resource, authenticated: false), remaining: remaining, reset: reset)
                state.store(bucket, for: RateLimitKey(credential: .anonymous, resource: resource))
            }
            if authenticated != false {
                let bucket = RateLimitBucket(limit: RateLimitBucket.limit(resource, authenticated: true), remaining: remaining, reset: reset)
                state.tokenRateLimits[resource] = bucket
                for key in state.rateLimitOrder where key.resource == resource && !key.credential.isAnonymous {
                    state.store(bucket, for: key)
                }
            }
        }
    }

    /// What each credential has spent of each GitHub budget in its current window, in the order
    /// the budgets were first charged (`GET /_sim/ratelimits`). Tokens appear by the first 12 hex
    /// digits of their SHA-256, never as themselves.
    public func rateLimits() async -> [RateLimitUsage] {
        let now = Self.now()
        return state.withLock { state in
            state.rateLimitOrder.map { key in
                let bucket = state.bucket(key, now: now)
                return RateLimitUsage(
                    credential: key.credential.name, resource: key.resource, limit: bucket.limit, used: bucket.used,
                    remaining: bucket.remaining, reset: bucket.reset)
            }
        }
    }

    /// Waits until the recorded request `id` finished or aborted, polling for at most
    /// `timeout`. Returns the final entry, or `nil` on timeout / unknown id.
    public func waitForCompletion(ofRequest id: Int, timeout: Duration = .seconds(10)) async -> LoggedRequest? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let entry = state.withLock { $0.entry(id) }
            guard let entry else { return nil }
            if !entry.inFlight { return entry }
            do { try await Task.sleep(for: .milliseconds(10)) } catch { return nil }
        }
        return nil
    }

    /// The ids of Hacker News items that are the JSON literal `null` (besides item 0
    /// and ids that were never allocated).
    public func hackerNewsNullItemIDs() -> [Int] {
        hackerNews.nullIDs.sorted()
    }

    func addEventsNow(repo fullName: String, count: Int) -> Bool {
        guard let repo = github.repo(fullName) else { return false }
        guard count > 0 else { return true }
        ensureFeed(repo)
        let now = Self.now()
        state.withLock { state in
            guard var feed = state.feeds[repo.fullName.lowercased()] else { return }
            var time = max(now, (feed.events.first?.createdAt ?? 0) + 1)
            var fresh: [EventRecord] = []
            for _ in 0..<min(count, 300) {
                let id = state.nextAddedEventID
                state.nextAddedEventID += 1
                let type = feed.generator.nextType()
                fresh.append(feed.generator.makeEvent(id: id, type: type, createdAt: time, world: github))
                time += 1
            }
            feed.events = Array((fresh.reversed() + feed.events).prefix(300))
            state.feeds[repo.fullName.lowercased()] = feed
        }
        return true
    }

    func ensureFeed(_ repo: GitHubWorld.Repo) {
        let key = repo.fullName.lowercased()
        if state.withLock({ $0.feeds[key] != nil }) { return }
        let feed = EventGenerator.initialFeed(repo: repo, world: github, seed: configuration.seed, count: configuration.eventsPerRepo)
        state.withLock { state in
            if state.feeds[key] == nil { state.feeds[key] = feed }
        }
    }

    func feedEvents(_ repo: GitHubWorld.Repo) -> [EventRecord] {
        ensureFeed(repo)
        return state.withLock { $0.feeds[repo.fullName.lowercased()]?.events ?? [] }
    }
}

/// Starts a ``Simulator`` on `127.0.0.1` with an ephemeral port (or `port`, when not 0), runs
/// `body`, then shuts the server down (cancelling any response still being written) and returns
/// `body`'s result.
public func withSimulator<T: Sendable>(
    _ configuration: SimulatorConfiguration = .init(), port: Int = 0,
    _ body: @Sendable (RunningSimulator) async throws -> T
) async throws -> T {
    let simulator = Simulator(configuration: configuration)
    return try await withThrowingTaskGroup(of: Void.self, returning: T.self) { group in
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        group.addTask {
            defer { continuation.finish() }
            try await simulator.run(host: "127.0.0.1", port: port) { port in
                continuation.yield(port)
            }
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            // The server stopped before listening: surface its error.
            try await group.next()
            throw SimulatorError.failedToStart
        }
        let running = RunningSimulator(baseURL: URL(string: "http://127.0.0.1:\(port)")!, simulator: simulator)
        do {
            let value = try await body(running)
            group.cancelAll()
            return value
        } catch {
            group.cancelAll()
            throw error
        }
    }
}

/// A simulator that is accepting connections.
public struct RunningSimulator: Sendable {
    /// `http://127.0.0.1:PORT` — the origin for all three APIs.
    public let baseURL: URL
    /// The simulator, for the Swift accessors (request log, faults, …).
    public let simulator: Simulator

    /// Creates a handle (normally done by ``withSimulator(_:port:_:)``).
    public init(baseURL: URL, simulator: Simulator) {
        self.baseURL = baseURL
        self.simulator = simulator
    }

    /// The bound port.
    public var port: Int { baseURL.port ?? 0 }
}
