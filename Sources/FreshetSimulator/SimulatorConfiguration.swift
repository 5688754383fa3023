public import Foundation
public import Logging

/// How a ``Simulator`` generates its data and enforces the upstream rules.
///
/// Two simulators with the same configuration (including ``anchorDate``) serve
/// byte-identical bodies. Only ``anchorDate`` ties data to the wall clock: every
/// "recent" timestamp (events, Hacker News items, blog posts, `updated_at`) is a
/// deterministic offset back from it, so relative times such as "3m ago" look right.
public struct SimulatorConfiguration: Sendable {
    /// The seed for every generated value.
    public var seed: UInt64
    /// Repositories (`owner/name`) that are guaranteed to exist, with their owners and
    /// event feeds. The search pool contains them plus about 230 other repositories,
    /// every one of which also serves events.
    public var repos: [String]
    /// Events generated per repository (the API serves at most the newest 300).
    public var eventsPerRepo: Int
    /// Ordinary Hacker News link stories. Ask HN, Show HN and job postings are generated
    /// on top of these (up to 200 each, as upstream lists them).
    public var hnStoryCount: Int
    /// The only Kakao REST API key accepted in `Authorization: KakaoAK <key>`.
    public var kakaoAPIKey: String
    /// When `false`, GitHub budgets are never decremented and never exhausted
    /// (the `X-RateLimit-*` headers are still sent).
    public var enforceRateLimits: Bool
    /// The `X-Poll-Interval` (seconds) sent with repository events; GitHub sends 60.
    public var pollInterval: Int = 60
    /// How often an open Hacker News event stream sends Firebase's `keep-alive` event; Firebase
    /// sends one every 30 s.
    public var streamKeepAlive: Duration = .seconds(30)
    /// Whether the Hacker News paths stream when asked (`Accept: text/event-stream`); `false`
    /// answers plain JSON, as a mirror that does not stream would.
    public var hnStreams = true
    /// The instant generated timestamps count back from; `nil` means the moment the
    /// ``Simulator`` is created. Set it to get byte-identical output across runs.
    public var anchorDate: Date?
    /// Logger handed to the Hummingbird server. Silent by default.
    public var logger: Logger

    /// Well-known Swift repositories served by default.
    public static let defaultRepos: [String] = [
        "ReactiveX/RxSwift",
        "apple/swift",
        "Alamofire/Alamofire",
        "vapor/vapor",
        "pointfreeco/swift-composable-architecture",
        "kean/Get",
        "onevcat/Kingfisher",
        "Moya/Moya",
        "groue/GRDB.swift",
        "apple/swift-nio",
    ]

    /// Creates a configuration; every parameter has the documented default.
    public init(
        seed: UInt64 = 42,
        repos: [String] = SimulatorConfiguration.defaultRepos,
        eventsPerRepo: Int = 300,
        hnStoryCount: Int = 500,
        kakaoAPIKey: String = "sim-kakao-key",
        enforceRateLimits: Bool = true,
        anchorDate: Date? = nil,
        logger: Logger = Logger(label: "freshet-sim", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.seed = seed
        self.repos = repos
        self.eventsPerRepo = eventsPerRepo
        self.hnStoryCount = hnStoryCount
        self.kakaoAPIKey = kakaoAPIKey
        self.enforceRateLimits = enforceRateLimits
        self.anchorDate = anchorDate
        self.logger = logger
    }
}

/// One request the simulator received (control endpoints under `/_sim/` are not
/// recorded, except `/_sim/drip` and `/_sim/bytes`).
public struct LoggedRequest: Sendable, Codable, Equatable {
    /// Increasing number, in arrival order; never reused, not even after a reset.
    public var id: Int
    /// `GET`, `POST`, …
    public var method: String
    /// The request target as sent: path plus query, e.g. `/repos/a/b/events?per_page=30`.
    public var path: String
    /// Request headers with lowercased names (repeated fields joined with `, `);
    /// includes `host`.
    public var headers: [String: String]
    /// Response status; `0` until the response head is ready.
    public var status: Int
    /// `true` once the whole response body was handed to the connection.
    public var finished: Bool
    /// `true` when the response could not be completed (client went away, shutdown).
    public var aborted: Bool
    /// Response body bytes written so far.
    public var bytesSent: Int
    /// Request body bytes the route has read so far.
    public var bytesReceived: Int

    /// Memberwise initializer.
    public init(
        id: Int, method: String, path: String, headers: [String: String], status: Int,
        finished: Bool, aborted: Bool, bytesSent: Int, bytesReceived: Int = 0
    ) {
        self.id = id
        self.method = method
        self.path = path
        self.headers = headers
        self.status = status
        self.finished = finished
        self.aborted = aborted
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
    }

    /// `true` while the request is neither finished nor aborted.
    public var inFlight: Bool { !finished && !aborted }
}

/// Counters over the recorded requests since the last reset.
public struct SimulatorStats: Sendable, Codable, Equatable {
    /// Recorded requests since the last reset.
    public var requests: Int
    /// Recorded requests whose response has not finished or aborted yet.
    public var inFlight: Int
    /// The highest ``inFlight`` seen since the last reset.
    public var maxInFlight: Int

    /// Memberwise initializer.
    public init(requests: Int, inFlight: Int, maxInFlight: Int) {
        self.requests = requests
        self.inFlight = inFlight
        self.maxInFlight = maxInFlight
    }
}

/// A canned response served instead of the real one to the next ``times`` requests whose
/// path (without query) starts with ``route``.
public struct Fault: Sendable, Codable, Equatable {
    /// Path prefix, e.g. `/repos/a/b/events`; `""` matches every recorded request.
    public var route: String
    /// Status code of the canned response.
    public var status: Int
    /// How many matching requests get the fault.
    public var times: Int
    /// Extra response headers, e.g. `["Retry-After": "1"]`.
    public var headers: [String: String]
    /// Response body; sent as `application/json` when present.
    public var body: String?

    /// Creates a fault.
    public init(route: String, status: Int, times: Int = 1, headers: [String: String] = [:], body: String? = nil) {
        self.route = route
        self.status = status
        self.times = times
        self.headers = headers
        self.body = body
    }

    private enum CodingKeys: String, CodingKey { case route, status, times, headers, body }

    /// Decodes the `/_sim/faults` body; `route` defaults to `""`, `times` to `1`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.route = try c.decodeIfPresent(String.self, forKey: .route) ?? ""
        self.status = try c.decode(Int.self, forKey: .status)
        self.times = try c.decodeIfPresent(Int.self, forKey: .times) ?? 1
        self.headers = try c.decodeIfPresent([String: String].self, forKey: .headers) ?? [:]
        self.body = try c.decodeIfPresent(String.self, forKey: .body)
    }
}

/// A GitHub rate-limit budget.
public enum RateLimitResource: String, Sendable, Codable, CaseIterable {
    /// `/repos/…` and `/users/…`: 60 per hour unauthenticated, 5000 authenticated.
    case core
    /// `/search/…`: 10 per minute unauthenticated, 30 authenticated.
    case search
}

/// What one credential has spent of one GitHub budget in its current window
/// (``Simulator/rateLimits()``, `GET /_sim/ratelimits`).
///
/// ```json
/// {"credential": "9f86d081884c", "resource": "core", "limit": 5000, "used": 3, "remaining": 4997, "reset": 1767225600}
/// ```
public struct RateLimitUsage: Sendable, Codable, Equatable {
    /// `anonymous` (every request without a token: one budget, as if from one IP address), or the
    /// first 12 hex digits of the SHA-256 of the token. Never the token itself.
    public var credential: String
    /// The budget: `core` or `search`.
    public var resource: RateLimitResource
    /// The window's limit: 5000 (core) or 30 (search) per token, 60 or 10 anonymous.
    public var limit: Int
    /// Requests charged in this window (a `304` is free). Without enforced limits
    /// (``SimulatorConfiguration/enforceRateLimits`` off) it counts on past `limit`.
    public var used: Int
    /// `limit - used`, never below 0.
    public var remaining: Int
    /// Epoch seconds when the window resets.
    public var reset: Int

    /// Creates a usage record.
    public init(credential: String, resource: RateLimitResource, limit: Int, used: Int, remaining: Int, reset: Int) {
        self.credential = credential
        self.resource = resource
        self.limit = limit
        self.used = used
        self.remaining = remaining
        self.reset = reset
    }

    /// The name ``credential`` gives `token` (`nil`: `anonymous`): the first 12 hex digits of
    /// its SHA-256.
    public static func credentialName(forToken token: String?) -> String {
        RateLimitCredential(token: token).name
    }
}

/// Errors thrown by ``Simulator/run(host:port:onListening:)`` and ``withSimulator(_:port:_:)``.
public enum SimulatorError: Error, Sendable, Equatable {
    /// The simulator only listens on loopback (`127.0.0.1`, `::1`, `localhost`).
    case nonLoopbackHost(String)
    /// The server stopped before it reported a listening port.
    case failedToStart
}
