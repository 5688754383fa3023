import Synchronization

/// One GitHub rate-limit window.
struct RateLimitBucket: Sendable {
    var limit: Int
    var remaining: Int
    var reset: Int

    var used: Int { limit - remaining }

    static func key(_ resource: RateLimitResource, _ authenticated: Bool) -> String {
        resource.rawValue + (authenticated ? ":token" : ":anonymous")
    }

    static func limit(_ resource: RateLimitResource, authenticated: Bool) -> Int {
        switch resource {
        case .core: return authenticated ? 5_000 : 60
        case .search: return authenticated ? 30 : 10
        }
    }

    static func window(_ resource: RateLimitResource) -> Int {
        resource == .core ? 3_600 : 60
    }
}

/// Everything mutable, behind one lock.
struct SimulatorState: Sendable {
    var log: [LoggedRequest] = []
    /// Id of `log[0]` (ids are never reused; entries before a reset are gone).
    var logBase = 1
    var nextLogID = 1
    var requests = 0
    var inFlight = 0
    var maxInFlight = 0
    var latencies: [String: Int] = [:]
    /// Route prefixes whose requests wait before their response (`POST /_sim/hold`).
    var holds: Set<String> = []
    var faults: [Fault] = []
    var faultModes: [FaultMode] = []
    var feeds: [String: RepoFeed] = [:]
    var nextAddedEventID = EventGenerator.firstAddedID
    var rateLimits: [String: RateLimitBucket] = [:]
    var shuttingDown = false
    var scripts: [String: Script] = [:]
    var clockOffset = 0
    /// `/files/{name}`: the version of each changed file (`POST /_sim/files/{name}/change`).
    var fileVersions: [String: Int] = [:]
    /// `/auth/me` accepts the access token of this generation (`POST /_sim/auth/expire` adds one).
    var authGeneration = 0
    /// Tokens handed out by `POST /oauth/token`.
    var authRefreshes = 0

    mutating func resetLog() {
        log.removeAll()
        logBase = nextLogID
        requests = 0
        maxInFlight = inFlight
    }

    func entry(_ id: Int) -> LoggedRequest? {
        let i = id - logBase
        return i >= 0 && i < log.count ? log[i] : nil
    }

    mutating func update(_ id: Int, _ change: (inout LoggedRequest) -> Void) {
        let i = id - logBase
        if i >= 0 && i < log.count { change(&log[i]) }
    }

    mutating func begin(method: String, path: String, headers: [String: String]) -> Int {
        let id = nextLogID
        nextLogID += 1
        log.append(LoggedRequest(id: id, method: method, path: path, headers: headers, status: 0, finished: false, aborted: false, bytesSent: 0, bytesReceived: 0))
        requests += 1
        inFlight += 1
        maxInFlight = max(maxInFlight, inFlight)
        return id
    }

    func isHeld(_ path: String) -> Bool {
        holds.contains { path.hasPrefix($0) }
    }

    func latency(for path: String) -> Int {
        var best: (length: Int, ms: Int)?
        for (route, ms) in latencies where path.hasPrefix(route) {
            if best == nil || route.count > best!.length { best = (route.count, ms) }
        }
        return best?.ms ?? 0
    }

    mutating func takeFault(for path: String) -> Fault? {
        guard let i = faults.firstIndex(where: { path.hasPrefix($0.route) }) else { return nil }
        let fault = faults[i]
        faults[i].times -= 1
        if faults[i].times <= 0 { faults.remove(at: i) }
        return fault
    }

    mutating func bucket(_ resource: RateLimitResource, authenticated: Bool, now: Int) -> RateLimitBucket {
        let key = RateLimitBucket.key(resource, authenticated)
        if let b = rateLimits[key], b.reset > now { return b }
        let limit = RateLimitBucket.limit(resource, authenticated: authenticated)
        let fresh = RateLimitBucket(limit: limit, remaining: limit, reset: now + RateLimitBucket.window(resource))
        rateLimits[key] = fresh
        return fresh
    }

    /// Takes one request from the budget; `nil` when it is exhausted.
    mutating func consume(_ resource: RateLimitResource, authenticated: Bool, now: Int) -> RateLimitBucket? {
        var b = bucket(resource, authenticated: authenticated, now: now)
        guard b.remaining > 0 else { return nil }
        b.remaining -= 1
        rateLimits[RateLimitBucket.key(resource, authenticated)] = b
        return b
    }

    /// Gives back a request taken by `consume` (a 304 does not count).
    mutating func refund(_ resource: RateLimitResource, authenticated: Bool) -> RateLimitBucket? {
        let key = RateLimitBucket.key(resource, authenticated)
        guard var b = rateLimits[key] else { return nil }
        b.remaining = min(b.limit, b.remaining + 1)
        rateLimits[key] = b
        return b
    }
}
