import Foundation
import Freshet
import FreshetCache
import FreshetSimulator
import GitHubOpenAPI
import OpenAPIRuntime
import Synchronization
import Testing

/// A clock the test moves.
final class TestClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)
    func now() -> Date { Date().addingTimeInterval(offset.withLock { $0 }) }
    func advance(_ seconds: TimeInterval) { offset.withLock { $0 += seconds } }
}

/// The generated client on `sim`, with an in-memory cache and `clock`.
func client(_ sim: RunningSimulator, token: String? = nil, clock: TestClock = TestClock()) -> Client {
    FreshetGitHub.client(serverURL: sim.baseURL, token: token, store: MemoryCacheStore(), now: { clock.now() })
}

/// The user's login and the cache's outcome for one `getUser` call.
func user(_ client: Client, _ login: String) async throws -> (login: String, cache: CacheOutcome?) {
    let (output, report) = try await ExchangeReport.collect { try await client.getUser(path: .init(username: login)) }
    return (try output.ok.body.json.login, report.cache)
}

@Suite("The generated GitHub client on Freshet's middlewares and cache, against the simulator")
struct GeneratedClientTests {
    @Test("A repeat within max-age is a hit with no request; once stale, a 304 revalidation")
    func cacheHitThenRevalidation() async throws {
        try await withSimulator { sim in
            let clock = TestClock()
            let client = client(sim, clock: clock)
            let first = try await user(client, "octocat")
            #expect(first.login == "octocat" && first.cache == .miss)
            let second = try await user(client, "octocat")
            #expect(second.cache == .hit)
            #expect(await sim.simulator.requestLog().count == 1, "the hit made no request")

            clock.advance(120)    // GitHub's max-age=60 has passed
            let third = try await user(client, "octocat")
            #expect(third.login == "octocat" && third.cache == .revalidated)
            let log = await sim.simulator.requestLog()
            #expect(log.count == 2)
            #expect(log.last?.status == 304 && log.last?.headers["if-none-match"] != nil, "a conditional request answered 304")
        }
    }

    @Test("Events through the generated operation, decoded into the generated types")
    func events() async throws {
        try await withSimulator { sim in
            let (output, report) = try await ExchangeReport.collect {
                try await client(sim).listRepositoryEvents(path: .init(owner: "ReactiveX", repo: "RxSwift"), query: .init(perPage: 100))
            }
            let events = try output.ok.body.json
            #expect(events.count == 100 && report.cache == .miss)
            #expect(events.allSatisfy { !$0._type.isEmpty && !$0.actor.login.isEmpty && $0.repo.name == "ReactiveX/RxSwift" })
        }
    }

    @Test("A 503 with Retry-After is retried, and the retry answers")
    func retryAfter() async throws {
        try await withSimulator { sim in
            await sim.simulator.injectFaults(Fault(route: "/users/octocat", status: 503, times: 1, headers: ["Retry-After": "1"]))
            let answer = try await user(client(sim), "octocat")
            #expect(answer.login == "octocat")
            #expect(await sim.simulator.requestLog().map(\.status) == [503, 200])
        }
    }

    @Test("A redirect to another host is followed without the Authorization header")
    func crossHostRedirect() async throws {
        try await withSimulator { sim in
            let port = try #require(sim.baseURL.port)
            await sim.simulator.injectFaults(Fault(
                route: "/users/octocat", status: 301, times: 1,
                headers: ["Location": "http://localhost:\(port)/users/octocat"]))
            let answer = try await user(client(sim, token: "tok-redirect-marker"), "octocat")
            #expect(answer.login == "octocat")
            let log = await sim.simulator.requestLog()
            #expect(log.map(\.status) == [301, 200])
            #expect(log.first?.headers["authorization"] == "Bearer tok-redirect-marker")
            #expect(log.last?.headers["host"] == "localhost:\(port)")
            #expect(log.last?.headers["authorization"] == nil, "the token stays with its host")
        }
    }

    @Test("A spent rate limit becomes Freshet's typed error, with the reset time")
    func rateLimit() async throws {
        try await withSimulator { sim in
            let reset = Int(Date().timeIntervalSince1970) + 600
            await sim.simulator.setRateLimit(resource: .core, remaining: 0, reset: reset)
            do {
                _ = try await user(client(sim), "octocat")
                Issue.record("expected the rate-limit error")
            } catch let error as ClientError {
                guard case .rateLimited(let resetAt?, _, _, _)? = error.underlyingError as? APIError else {
                    Issue.record("expected APIError.rateLimited, got \(error.underlyingError)")
                    return
                }
                #expect(Int(resetAt.timeIntervalSince1970) == reset)
            }
        }
    }
}
