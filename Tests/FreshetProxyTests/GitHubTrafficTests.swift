import CompressNIO
import Foundation
import Freshet
import FreshetCache
import FreshetPostgres
import FreshetProxy
import FreshetSimulator
import FreshetTestSupport
import HTTPTypes
import NIOCore
import OpenAPIRuntime
import Synchronization
import Testing

/// Two tokens the simulator gives different `permissions` on a repository.
private let tokenA = "ghp_teamTokenAlpha0000000000000000000001"
private let tokenB = "ghp_teamTokenBravo0000000000000000000002"

private func bearer(_ token: String, _ more: HTTPFields = [:]) -> HTTPFields {
    var fields: HTTPFields = [.authorization: "Bearer \(token)"]
    fields.append(contentsOf: more)
    return fields
}

/// An answer with its body's bytes as received.
private struct RawAnswer {
    var status: Int
    var fields: HTTPFields
    var body: Data
    var cache: String? { fields[.xCache] }
    var cacheStatus: String? { fields[.cacheStatus] }
    var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] }
}

private func get(_ path: String, from base: URL, headers: HTTPFields = [:]) async throws -> RawAnswer {
    let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: path, headerFields: headers)
    let (response, body) = try await liveTransport.send(request, body: nil, baseURL: base, operationID: "test")
    var data = Data()
    if let body { data = try await Data(collecting: body, upTo: 8 << 20) }
    return RawAnswer(status: response.status.code, fields: response.headerFields, body: data)
}

private func gunzip(_ data: Data) throws -> Data {
    var buffer = ByteBuffer(bytes: data)
    return Data(try buffer.decompress(with: .gzip).readableBytesView)
}

/// The requests the origin received for `path` (control routes are never logged).
private func originRequests(_ sim: RunningSimulator, path: String) async throws -> [SimLogEntry] {
    try await SimControl(sim).log().filter { $0.path == path }
}

private func header(_ entry: SimLogEntry, _ name: String) -> String? {
    entry.headers.first { $0.key.lowercased() == name }?.value
}

/// Notices the proxy printed.
private final class Notices: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

@Suite("freshet proxy with real GitHub traffic: tokens, gzip, revalidation, stale answers, links", .timeLimit(.minutes(2)))
struct GitHubTrafficTests {
    @Test("Default (shared) mode: a token's private answer is never cached, and the proxy says once how to cache it")
    func sharedModeDoesNotStorePrivate() async throws {
        try await withSimulator { sim in
            try await withSQLiteStore { store, _ in
                let notices = Notices()
                try await withInProcessProxy(origin: sim.baseURL, store: store,
                                             options: .init(notice: { notices.append($0) })) { proxy in
                    var outcomes: [String?] = []
                    for _ in 0..<3 { outcomes.append(try await get("/repos/apple/swift", from: proxy.base, headers: bearer(tokenA)).cache) }
                    #expect(outcomes == ["MISS", "MISS", "MISS"])
                    #expect(try await originRequests(sim, path: "/repos/apple/swift").count == 3)
                    let said = notices.all
                    #expect(said.count == 1)
                    #expect(said.first?.contains("--partition credential") == true)
                    #expect(!said.joined().contains(tokenA))
                }
            }
        }
    }

    @Test("--partition credential: each token's private answer is cached for that token only; anonymous answers stay shared")
    func credentialPartitions() async throws {
        try await withSimulator { sim in
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: sim.baseURL, store: store, options: .init(partitioning: .credential)) { proxy in
                    let a1 = try await get("/repos/apple/swift", from: proxy.base, headers: bearer(tokenA))
                    let a2 = try await get("/repos/apple/swift", from: proxy.base, headers: bearer(tokenA))
                    let b1 = try await get("/repos/apple/swift", from: proxy.base, headers: bearer(tokenB))
                    let b2 = try await get("/repos/apple/swift", from: proxy.base, headers: bearer(tokenB))
                    let anonymous1 = try await get("/repos/apple/swift", from: proxy.base)
                    let anonymous2 = try await get("/repos/apple/swift", from: proxy.base)
                    #expect([a1, a2, b1, b2, anonymous1, anonymous2].map(\.cache)
                            == ["MISS", "HIT", "MISS", "HIT", "MISS", "HIT"])
                    // The bodies differ per token: each got its own, never the other's.
                    let permissionsA = try #require(a1.json?["permissions"] as? [String: Bool])
                    let permissionsB = try #require(b1.json?["permissions"] as? [String: Bool])
                    #expect(permissionsA != permissionsB)
                    #expect(a2.body == a1.body)
                    #expect(b2.body == b1.body)
                    #expect(anonymous1.json?["permissions"] == nil)
                    #expect(anonymous2.body == anonymous1.body)
                    #expect(try await originRequests(sim, path: "/repos/apple/swift").count == 3)
                    #expect(a2.cacheStatus == "freshet; hit")
                }
            }
        }
    }

    @Test("--partition credential keeps a private answer from every other credential and from anonymous requests, even without Vary")
    func partitionsWithoutVary() async throws {
        try await withSimulator { sim in
            try await withSQLiteStore { store, _ in
                let control = SimControl(sim)
                try await control.script("mine", headers: [("Cache-Control", "private, max-age=60")], body: #"{"owner":"A"}"#)
                try await withInProcessProxy(origin: sim.baseURL, store: store, options: .init(partitioning: .credential)) { proxy in
                    let a1 = try await get("/scripted/mine", from: proxy.base, headers: bearer(tokenA))
                    // The origin now answers everyone else differently.
                    try await control.script("mine", headers: [("Cache-Control", "private, max-age=60")], body: #"{"owner":"other"}"#)
                    let a2 = try await get("/scripted/mine", from: proxy.base, headers: bearer(tokenA))
                    let b = try await get("/scripted/mine", from: proxy.base, headers: bearer(tokenB))
                    let cookie = try await get("/scripted/mine", from: proxy.base, headers: [.cookie: "session=abc"])
                    let anonymous = try await get("/scripted/mine", from: proxy.base)
                    #expect([a1, a2, b, cookie, anonymous].map(\.cache) == ["MISS", "HIT", "MISS", "MISS", "MISS"])
                    #expect(String(decoding: a2.body, as: UTF8.self) == #"{"owner":"A"}"#)
                    for other in [b, cookie, anonymous] {
                        #expect(String(decoding: other.body, as: UTF8.self) == #"{"owner":"other"}"#)
                    }
                }
            }
        }
    }

    @Test("gzip: asked of the origin once, relayed to gzip clients, decoded for the others, all from one stored copy")
    func gzipStoredOnceServedToBoth() async throws {
        try await withSimulator { sim in
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: sim.baseURL, store: store, options: .init(partitioning: .credential)) { proxy in
                    let gzip: HTTPFields = [.acceptEncoding: "gzip, deflate, br"]
                    let first = try await get("/repos/apple/swift", from: proxy.base, headers: bearer(tokenA, gzip))
                    let second = try await get("/repos/apple/swift", from: proxy.base, headers: bearer(tokenA, gzip))
                    let plain = try await get("/repos/apple/swift", from: proxy.base, headers: bearer(tokenA))
                    #expect([first.cache, second.cache, plain.cache] == ["MISS", "HIT", "HIT"])
                    #expect(first.fields[.contentEncoding] == "gzip")
                    #expect(second.fields[.contentEncoding] == "gzip")
                    #expect(plain.fields[.contentEncoding] == nil)
                    let decoded = try gunzip(second.body)
                    #expect(decoded == plain.body)
                    #expect(plain.json?["full_name"] as? String == "apple/swift")
                    #expect(plain.fields[.contentLength] == String(plain.body.count))
                    let seen = try await originRequests(sim, path: "/repos/apple/swift")
                    #expect(seen.count == 1)
                    #expect(seen.first.flatMap { header($0, "accept-encoding") } == "gzip")
                    // An identity client first: the origin's gzip is decoded as it streams, and stored
                    // as gzip for the next client.
                    let streamed = try await get("/users/octocat", from: proxy.base)
                    let zipped = try await get("/users/octocat", from: proxy.base, headers: gzip)
                    #expect([streamed.cache, zipped.cache] == ["MISS", "HIT"])
                    #expect(streamed.fields[.contentEncoding] == nil)
                    #expect(streamed.json?["login"] as? String == "octocat")
                    #expect(try gunzip(zipped.body) == streamed.body)
                }
            }
        }
    }

    @Test("--revalidate always: every hit is a free 304 revalidation; the rate-limit budget does not move")
    func revalidateAlways() async throws {
        try await withSimulator { sim in
            try await withSQLiteStore { store, _ in
                let options = ProxyForwarder.Options(partitioning: .credential, revalidatesEveryHit: true)
                try await withInProcessProxy(origin: sim.baseURL, store: store, options: options) { proxy in
                    let first = try await get("/repos/apple/swift", from: proxy.base, headers: bearer(tokenA))
                    let second = try await get("/repos/apple/swift", from: proxy.base, headers: bearer(tokenA))
                    let third = try await get("/repos/apple/swift", from: proxy.base, headers: bearer(tokenA))
                    #expect([first.cache, second.cache, third.cache] == ["MISS", "REVALIDATED", "REVALIDATED"])
                    #expect(third.body == first.body)
                    let remaining = HTTPField.Name("X-RateLimit-Remaining")!
                    #expect(third.fields[remaining] == first.fields[remaining])
                    let seen = try await originRequests(sim, path: "/repos/apple/swift")
                    #expect(seen.map(\.status) == [200, 304, 304])
                    #expect(seen.dropFirst().allSatisfy { header($0, "if-none-match") != nil })
                }
            }
        }
    }

    @Test("20 concurrent misses for one key make one origin request, on the SQLite store")
    func concurrentMissesCollapse() async throws {
        try await withSimulator { sim in
            try await withSQLiteStore { store, _ in
                // The waiters' bound is far beyond the test's own wait, so no waiter gives up on a
                // loaded machine before the origin is let go.
                try await withInProcessProxy(origin: sim.baseURL, store: store, options: .init(fillWait: .seconds(120))) { proxy in
                    let answers = try await held(20, "/users/octocat", proxy: proxy, sim: sim)
                    #expect(answers.count == 20)
                    #expect(answers.allSatisfy { $0.status == 200 })
                    #expect(Set(answers.map(\.body)).count == 1)
                    #expect(try await originRequests(sim, path: "/users/octocat").count == 1)
                }
            }
        }
    }

    @Test("With --revalidate always, 10 concurrent hits make one conditional request, and all get the refreshed copy")
    func concurrentRevalidationsCollapse() async throws {
        try await withSimulator { sim in
            try await withSQLiteStore { store, _ in
                let options = ProxyForwarder.Options(partitioning: .credential, revalidatesEveryHit: true, fillWait: .seconds(120))
                try await withInProcessProxy(origin: sim.baseURL, store: store, options: options) { proxy in
                    let first = try await get("/users/octocat", from: proxy.base, headers: bearer(tokenA))
                    #expect(first.cache == "MISS")
                    let answers = try await held(10, "/users/octocat", headers: bearer(tokenA), proxy: proxy, sim: sim)
                    #expect(answers.map(\.cache) == Array(repeating: "REVALIDATED", count: 10))
                    #expect(answers.allSatisfy { $0.body == first.body })
                    #expect(try await originRequests(sim, path: "/users/octocat").map(\.status) == [200, 304])
                }
            }
        }
    }

    @Test("PostgreSQL fleet, --partition credential: a token's answer stored through one proxy is a hit on another, for that token only")
    func partitionsAcrossAFleet() async throws {
        try await withSimulator { sim in
            try await withPostgres { cluster in
                var configuration = try PostgresStoreConfiguration(url: cluster.url, environment: cluster.environment)
                // A loaded machine (two clusters start at once in this suite) gets 15 s to migrate.
                configuration.queryTimeout = .seconds(5)
                let storeA = try await PostgresCacheStore.connect(configuration, logger: quietLogger)
                let storeB = try await PostgresCacheStore.connect(configuration, logger: quietLogger)
                do {
                    let options = ProxyForwarder.Options(partitioning: .credential)
                    try await withInProcessProxy(origin: sim.baseURL, store: storeA, options: options) { one in
                        try await withInProcessProxy(origin: sim.baseURL, store: storeB, options: options) { two in
                            let stored = try await get("/repos/apple/swift", from: one.base, headers: bearer(tokenA))
                            let again = try await get("/repos/apple/swift", from: two.base, headers: bearer(tokenA))
                            let other = try await get("/repos/apple/swift", from: two.base, headers: bearer(tokenB))
                            #expect([stored.cache, again.cache, other.cache] == ["MISS", "HIT", "MISS"])
                            #expect(again.body == stored.body)
                            #expect(other.body != stored.body)
                            #expect(try await originRequests(sim, path: "/repos/apple/swift").count == 2)
                        }
                    }
                } catch {
                    await storeA.shutdown()
                    await storeB.shutdown()
                    throw error
                }
                await storeA.shutdown()
                await storeB.shutdown()
            }
        }
    }

    @Test("--serve-stale rate-limited: a 403 rate-limit answer is replaced by the stored copy, marked STALE, with the origin's limits")
    func serveStaleWhenRateLimited() async throws {
        try await withSimulator { sim in
            try await withSQLiteStore { store, _ in
                let control = SimControl(sim)
                try await control.script("limited", headers: [("Cache-Control", "private, max-age=60"), ("ETag", "\"v1\"")],
                                         body: #"{"v":1}"#)
                let options = ProxyForwarder.Options(partitioning: .credential, revalidatesEveryHit: true, serveStaleOn: [.rateLimited])
                try await withInProcessProxy(origin: sim.baseURL, store: store, options: options) { proxy in
                    let first = try await get("/scripted/limited", from: proxy.base, headers: bearer(tokenA))
                    #expect(first.cache == "MISS")
                    try await control.fault(route: "/scripted/limited", status: 403,
                                            headers: ["X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1900000000"],
                                            body: #"{"message":"API rate limit exceeded for user ID 1."}"#)
                    let limited = try await get("/scripted/limited", from: proxy.base, headers: bearer(tokenA))
                    #expect(limited.status == 200)
                    #expect(limited.cache == "STALE")
                    #expect(limited.body == first.body)
                    #expect(limited.fields[HTTPField.Name("X-RateLimit-Remaining")!] == "0")
                    #expect(limited.fields[HTTPField.Name("X-RateLimit-Reset")!] == "1900000000")
                    #expect(limited.cacheStatus == "freshet; hit; detail=stale")
                    // Without the option the 403 passes.
                    try await control.fault(route: "/scripted/limited", status: 403, headers: ["X-RateLimit-Remaining": "0"],
                                            body: #"{"message":"API rate limit exceeded"}"#)
                    let other = try await get("/scripted/limited", from: proxy.base, headers: bearer(tokenB))
                    #expect(other.status == 403)
                }
            }
        }
    }

    /// An origin failure, and the `--serve-stale` item that covers it.
    struct Failure: Sendable, CustomTestStringConvertible {
        var status: Int
        var headers: [String: String]
        var body: String
        var option: StaleStatuses
        var testDescription: String { "\(status) \(body.prefix(30))" }
    }

    @Test("--serve-stale 5xx, 429, rate-limited: each failure it names is answered from the stored copy, the others pass",
          arguments: [
              Failure(status: 503, headers: [:], body: "down", option: .serverError),
              Failure(status: 429, headers: ["Retry-After": "30"], body: "slow down", option: .tooManyRequests),
              Failure(status: 403, headers: [:], body: #"{"message":"You have exceeded a secondary rate limit."}"#,
                      option: .rateLimited),
          ])
    func serveStaleOnEachStatus(_ failure: Failure) async throws {
        try await withSimulator { sim in
            try await withSQLiteStore { store, _ in
                let control = SimControl(sim)
                try await control.script("flaky", headers: [("Cache-Control", "max-age=0"), ("ETag", "\"v1\"")], body: #"{"v":1}"#)
                for covered in [true, false] {
                    let all: StaleStatuses = [.serverError, .tooManyRequests, .rateLimited]
                    let options = ProxyForwarder.Options(serveStaleOn: covered ? failure.option : all.subtracting(failure.option))
                    try await withInProcessProxy(origin: sim.baseURL, store: store, options: options) { proxy in
                        _ = try await get("/scripted/flaky", from: proxy.base)
                        try await control.fault(route: "/scripted/flaky", status: failure.status, headers: failure.headers, body: failure.body)
                        let answer = try await get("/scripted/flaky", from: proxy.base)
                        if covered {
                            #expect(answer.status == 200)
                            #expect(answer.cache == "STALE")
                            #expect(String(decoding: answer.body, as: UTF8.self) == #"{"v":1}"#)
                        } else {
                            #expect(answer.status == failure.status)
                        }
                    }
                }
            }
        }
    }

    @Test("Link and Location: the origin's absolute URLs point at the proxy; a client following rel=next stays on it")
    func linksPointAtTheProxy() async throws {
        try await withSimulator { sim in
            try await withSQLiteStore { store, _ in
                try await withInProcessProxy(origin: sim.baseURL, store: store) { proxy in
                    let first = try await get("/repos/ReactiveX/RxSwift/events?per_page=10", from: proxy.base)
                    let link = try #require(first.fields[.link])
                    let proxyBase = proxy.base.absoluteString
                    #expect(link.contains("<\(proxyBase)/repos/ReactiveX/RxSwift/events?"))
                    #expect(!link.contains(sim.baseURL.absoluteString))
                    let next = try #require(link.split(separator: ",").first { $0.contains("rel=\"next\"") })
                    let target = try #require(next.split(separator: ">").first?.split(separator: "<").last)
                    let url = try #require(URL(string: String(target)))
                    #expect(url.port == proxy.base.port)
                    let page2 = try await get(url.path + "?" + (url.query ?? ""), from: proxy.base)
                    #expect(page2.status == 200)
                    #expect(page2.cache == "MISS")
                    // A hit is rewritten the same way.
                    let again = try await get("/repos/ReactiveX/RxSwift/events?per_page=10", from: proxy.base)
                    #expect(again.cache == "HIT")
                    #expect(again.fields[.link] == link)
                }
            }
        }
    }
}

/// Sends `count` concurrent `GET path` to the proxy while the origin holds its answers, and lets
/// the origin answer only once all of them are in the proxy.
private func held(_ count: Int, _ path: String, headers: HTTPFields = [:], proxy: InProcessProxy,
                  sim: RunningSimulator) async throws -> [RawAnswer] {
    let control = SimControl(sim)
    try await control.hold(route: path)
    return try await withThrowingTaskGroup(of: RawAnswer.self) { group in
        for _ in 0..<count { group.addTask { try await get(path, from: proxy.base, headers: headers) } }
        // All are in the proxy (its in-flight gauge) and one is held at the origin; bounded wait.
        try await eventually(proxy, inFlight: count, control: control)
        try await control.release(route: path)
        return try await group.reduce(into: []) { $0.append($1) }
    }
}

/// Waits (bounded) until the proxy has `inFlight` requests in flight and the origin holds one.
private func eventually(_ proxy: InProcessProxy, inFlight: Int, control: SimControl) async throws {
    for _ in 0..<1000 {
        let gauge = sample(try await proxy.metrics(), "freshet_proxy_requests_in_flight") ?? 0
        if Int(gauge) >= inFlight, try await control.stats().inFlight >= 1 { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("the proxy never had \(inFlight) requests in flight with one held at the origin")
}
