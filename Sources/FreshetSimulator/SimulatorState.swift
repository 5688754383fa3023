import Synchronization

/// One GitHub rate-limit window of one credential.
struct RateLimitBucket: Sendable {
    var limit: Int
    /// Requests charged in this window (more than `limit` only when limits are not enforced).
    var used: Int
    var reset: Int

    var remaining: Int { max(0, limit - used) }

    init(limit: Int, used: Int = 0, reset: Int) {
        self.limit = limit
        self.used = used
        self.reset = reset
    }

    init(limit: Int, remaining: Int, reset: Int) {
        self.init(limit: limit, used: limit - max(0, min(remaining, limit)), reset: reset)
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

/// Whose budget a GitHub request is charged to: each token has its own, and every anonymous
/// request shares one (as if they all came from one IP address).
struct RateLimitCredential: Hashable, Sendable {
    /// `anonymous`, or the first 12 hex digits of the SHA-256 of the token (never the token).
    let name: String

    /// Every request without a token.
    static let anonymous = RateLimitCredential(name: "anonymous")

    /// The credential of `token` (`nil`: anonymous).
    init(token: String?) {
        self = token.map { RateLimitCredential(name: Hashing.sha256Prefix($0)) } ?? .anonymous
    }

    private init(name: String) {
        self.name = name
    }

    var isAnonymous: Bool { self == .anonymous }
}

/// A budget: one resource of one credential.
struct RateLimitKey: Hashable, Sendable {
    let credential: RateLimitCredential
    let resource: RateLimitResource
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
    /// The budgets charged so far, per credential and resource.
    var rateLimits: [RateLimitKey: RateLimitBucket] = [:]
    /// The budgets in the order they were first charged (`GET /_sim/ratelimits`).
    var rateLimitOrder: [RateLimitKey] = []
    /// What a token's budget starts from when first charged in a window (`POST /_sim/ratelimit`
    /// with `authenticated` not `false`), until that window resets.
    var tokenRateLimits: [RateLimitResource: RateLimitBucket] = [:]
    var shuttingDown = false
    /// Hacker News lists changed through `POST /_sim/hn/lists/{list}`, in place of the world's.
    var hnLists: [String: [Int]] = [:]
    /// Counts list changes, so open event streams notice one.
    var hnListVersion = 0
    /// Counts `POST /_sim/hn/streams/drop`: an open stream whose count is older ends abruptly.
    var hnStreamDrops = 0
    /// While `true`, open event streams send nothing, keep-alives included (a dead connection).
    var hnStreamsStalled = false
    /// Event streams open now.
    var hnStreamsOpen = 0
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

    /// The current window of `key`'s budget: a fresh one (or the one set for every token) when
    /// none was charged yet or the last one reset.
    mutating func bucket(_ key: RateLimitKey, now: Int) -> RateLimitBucket {
        if let b = rateLimits[key], b.reset > now { return b }
        let fresh: RateLimitBucket
        if !key.credential.isAnonymous, let set = tokenRateLimits[key.resource], set.reset > now {
            fresh = set
        } else {
            let limit = RateLimitBucket.limit(key.resource, authenticated: !key.credential.isAnonymous)
            fresh = RateLimitBucket(limit: limit, reset: now + RateLimitBucket.window(key.resource))
        }
        store(fresh, for: key)
        return fresh
    }

    /// Charges one request to `key`'s budget; `nil` (nothing charged) when it is exhausted and
    /// `enforce` is set. Unenforced budgets keep counting past their limit.
    mutating func consume(_ key: RateLimitKey, now: Int, enforce: Bool) -> RateLimitBucket? {
        var b = bucket(key, now: now)
        guard b.remaining > 0 || !enforce else { return nil }
        b.used += 1
        store(b, for: key)
        return b
    }

    /// Gives back a request taken by `consume` (a 304 does not count).
    mutating func refund(_ key: RateLimitKey) -> RateLimitBucket? {
        guard var b = rateLimits[key] else { return nil }
        b.used = max(0, b.used - 1)
        store(b, for: key)
        return b
    }

    mutating func store(_ bucket: RateLimitBucket, for key: RateLimitKey) {
        if rateLimits.updateValue(bucket, forKey: key) == nil { rateLimitOrder.append(key) }
    }
}
