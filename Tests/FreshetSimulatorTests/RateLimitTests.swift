import Foundation
@testable import FreshetSimulator
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// GitHub's budgets per credential (each token its own, every anonymous request one shared),
/// `GET /_sim/ratelimits`, and the `permissions` a token gets on a repository.
@Suite("FreshetSimulator: rate limits and permissions per token")
struct RateLimitTests {
    // The first 12 hex digits of SHA-256("tokenA") and SHA-256("tokenB") (`printf tokenA | sha256sum`).
    static let tokenAName = "60e831fc1abf"
    static let tokenBName = "a9b6ea7e9127"

    static func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }

    func withRouter<T: Sendable>(
        _ configuration: SimulatorConfiguration = SimulatorConfiguration(hnStoryCount: 1),
        _ body: @escaping @Sendable (Simulator, any TestClientProtocol) async throws -> T
    ) async throws -> T {
        let simulator = Simulator(configuration: configuration)
        let app = Application(responder: simulator.makeResponder())
        return try await app.test(.router) { client in try await body(simulator, client) }
    }

    static func remaining(_ response: TestResponse) -> Int? {
        response.headers[HTTPField.Name("X-RateLimit-Remaining")!].flatMap { Int($0) }
    }

    /// `GET /_sim/ratelimits`, decoded, and its text.
    static func rateLimits(_ client: any TestClientProtocol) async throws -> ([RateLimitUsage], String) {
        let response = try await client.execute(uri: "/_sim/ratelimits", method: .get)
        #expect(response.status == .ok)
        let text = String(buffer: response.body)
        return (try JSONDecoder().decode([RateLimitUsage].self, from: Data(text.utf8)), text)
    }

    @Test("Each token has its own core and search budgets; anonymous requests share one")
    func budgetsPerToken() async throws {
        try await withRouter { _, client in
            for expected in [4999, 4998, 4997] {
                let a = try await client.execute(uri: "/users/octocat", method: .get, headers: Self.bearer("tokenA"))
                #expect(Self.remaining(a) == expected)
                #expect(a.headers[HTTPField.Name("X-RateLimit-Used")!] == String(5000 - expected))
            }
            // Token B starts from its own full budget; token A's spending does not move it.
            let b = try await client.execute(uri: "/repos/kean/Get", method: .get, headers: [.authorization: "token tokenB"])
            #expect(Self.remaining(b) == 4999)
            let anonymous = try await client.execute(uri: "/users/octocat", method: .get)
            #expect(Self.remaining(anonymous) == 59)
            let anonymousAgain = try await client.execute(uri: "/repos/kean/Get", method: .get)
            #expect(Self.remaining(anonymousAgain) == 58, "every anonymous request draws on one budget")
            // Search is a budget of its own, per token too.
            let searchA = try await client.execute(uri: "/search/repositories?q=swift", method: .get, headers: Self.bearer("tokenA"))
            #expect(Self.remaining(searchA) == 29)
            let searchB = try await client.execute(uri: "/search/repositories?q=swift", method: .get, headers: Self.bearer("tokenB"))
            #expect(Self.remaining(searchB) == 29)
            let fourthA = try await client.execute(uri: "/users/octocat", method: .get, headers: Self.bearer("tokenA"))
            #expect(Self.remaining(fourthA) == 4996)
        }
    }

    @Test("One token exhausting its search budget is refused; another token and anonymous requests are not")
    func exhaustionIsPerToken() async throws {
        try await withRouter { _, client in
            for _ in 0..<30 {
                let a = try await client.execute(uri: "/search/repositories?q=swift", method: .get, headers: Self.bearer("tokenA"))
                #expect(a.status == .ok)
            }
            let refused = try await client.execute(uri: "/search/repositories?q=swift", method: .get, headers: Self.bearer("tokenA"))
            #expect(refused.status == .forbidden)
            #expect(String(buffer: refused.body).contains("API rate limit exceeded for user"))
            let b = try await client.execute(uri: "/search/repositories?q=swift", method: .get, headers: Self.bearer("tokenB"))
            #expect(b.status == .ok)
            #expect(Self.remaining(b) == 29)
            let anonymous = try await client.execute(uri: "/search/repositories?q=swift", method: .get)
            #expect(anonymous.status == .ok)
            #expect(Self.remaining(anonymous) == 9)
            let (usage, _) = try await Self.rateLimits(client)
            #expect(usage.first { $0.credential == Self.tokenAName }?.used == 30)
        }
    }

    @Test("A 304 is free for every token: the budget and /_sim/ratelimits do not move")
    func notModifiedIsFreeForEveryToken() async throws {
        try await withRouter { _, client in
            for (token, name) in [("tokenA", Self.tokenAName), ("tokenB", Self.tokenBName)] {
                let first = try await client.execute(uri: "/repos/ReactiveX/RxSwift/events", method: .get, headers: Self.bearer(token))
                #expect(Self.remaining(first) == 4999)
                var conditional = Self.bearer(token)
                let etag = try #require(first.headers[.eTag])
                conditional[.ifNoneMatch] = etag
                for _ in 0..<3 {
                    let again = try await client.execute(uri: "/repos/ReactiveX/RxSwift/events", method: .get, headers: conditional)
                    #expect(again.status == .notModified)
                    #expect(Self.remaining(again) == 4999, "\(token)")
                }
                let (usage, _) = try await Self.rateLimits(client)
                #expect(usage.first { $0.credential == name }?.used == 1, "\(token)")
            }
        }
    }

    @Test("/_sim/ratelimits: one object per credential and resource, exact numbers, never a token")
    func rateLimitsEndpoint() async throws {
        try await withRouter { simulator, client in
            #expect(try await Self.rateLimits(client).0.isEmpty)
            for _ in 0..<3 { _ = try await client.execute(uri: "/users/octocat", method: .get, headers: Self.bearer("tokenA")) }
            _ = try await client.execute(uri: "/users/octocat", method: .get, headers: Self.bearer("tokenB"))
            _ = try await client.execute(uri: "/search/repositories?q=swift", method: .get, headers: Self.bearer("tokenA"))
            _ = try await client.execute(uri: "/nope/nothing", method: .get) // not GitHub's API: no budget
            for _ in 0..<2 { _ = try await client.execute(uri: "/repos/nobody/nothing", method: .get) } // a 404 counts
            let bad = try await client.execute(uri: "/users/octocat", method: .get, headers: [.authorization: "Basic x"])
            #expect(bad.status == .unauthorized) // refused before any budget

            let (usage, text) = try await Self.rateLimits(client)
            let rows = usage.map { "\($0.credential) \($0.resource.rawValue) \($0.limit) \($0.used) \($0.remaining)" }
            #expect(rows == [
                "\(Self.tokenAName) core 5000 3 4997", "\(Self.tokenBName) core 5000 1 4999", "\(Self.tokenAName) search 30 1 29",
                "anonymous core 60 2 58",
            ])
            #expect(!text.contains("tokenA") && !text.contains("tokenB"))
            #expect(text.hasPrefix(#"[{"credential":""# + Self.tokenAName + #"","resource":"core","limit":5000,"used":3,"remaining":4997,"reset":"#))
            #expect(await simulator.rateLimits() == usage)
            #expect(RateLimitUsage.credentialName(forToken: "tokenA") == Self.tokenAName)
            #expect(RateLimitUsage.credentialName(forToken: nil) == "anonymous")

            // Listed in /_sim/routes; not itself recorded.
            let routes = try await client.execute(uri: "/_sim/routes", method: .get)
            #expect(String(buffer: routes.body).contains("GET /_sim/ratelimits"))
            #expect(await simulator.requestLog().count == 9)
        }
    }

    @Test("Without enforced limits nothing is refused, but /_sim/ratelimits still counts each credential's spending")
    func unenforcedLimitsStillCount() async throws {
        try await withRouter(SimulatorConfiguration(hnStoryCount: 1, enforceRateLimits: false)) { _, client in
            for _ in 0..<62 {
                let response = try await client.execute(uri: "/users/octocat", method: .get)
                #expect(response.status == .ok)
                #expect(Self.remaining(response) == 60, "the headers announce a full budget")
            }
            let first = try await client.execute(uri: "/users/octocat", method: .get, headers: Self.bearer("tokenA"))
            var conditional = Self.bearer("tokenA")
            let etag = try #require(first.headers[.eTag])
            conditional[.ifNoneMatch] = etag
            #expect(try await client.execute(uri: "/users/octocat", method: .get, headers: conditional).status == .notModified)
            let (usage, _) = try await Self.rateLimits(client)
            let rows = usage.map { "\($0.credential) \($0.resource.rawValue) \($0.limit) \($0.used) \($0.remaining)" }
            #expect(rows == ["anonymous core 60 62 0", "\(Self.tokenAName) core 5000 1 4999"])
        }
    }

    @Test("POST /_sim/ratelimit sets the anonymous budget or every token's, each still counted on its own")
    func settingBudgets() async throws {
        try await withRouter { simulator, client in
            _ = try await client.execute(uri: "/users/octocat", method: .get, headers: Self.bearer("tokenA"))
            await simulator.setRateLimit(resource: .core, remaining: 1, reset: 2_000_000_000, authenticated: true)
            // Token A (seen) and token B (not yet) each have one request left.
            for token in ["tokenA", "tokenB"] {
                let last = try await client.execute(uri: "/users/octocat", method: .get, headers: Self.bearer(token))
                #expect(last.status == .ok, "\(token)")
                #expect(Self.remaining(last) == 0)
                let refused = try await client.execute(uri: "/users/octocat", method: .get, headers: Self.bearer(token))
                #expect(refused.status == .forbidden, "\(token)")
                #expect(refused.headers[HTTPField.Name("X-RateLimit-Reset")!] == "2000000000")
            }
            #expect(try await client.execute(uri: "/users/octocat", method: .get).status == .ok)
            await simulator.setRateLimit(resource: .core, remaining: 0, authenticated: false)
            #expect(try await client.execute(uri: "/users/octocat", method: .get).status == .forbidden)
        }
    }

    // MARK: Permissions

    static func permissions(_ response: TestResponse) throws -> [String: Bool]? {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any])
        return object["permissions"] as? [String: Bool]
    }

    @Test("GET /repos/{owner}/{repo} has permissions per token (stable, different for tokenA and tokenB), none anonymously")
    func permissionsPerToken() async throws {
        try await withRouter { _, client in
            let anonymous = try await client.execute(uri: "/repos/kean/Get", method: .get)
            #expect(try Self.permissions(anonymous) == nil)
            #expect(!String(buffer: anonymous.body).contains("permissions"))

            let a = try await client.execute(uri: "/repos/kean/Get", method: .get, headers: Self.bearer("tokenA"))
            let b = try await client.execute(uri: "/repos/kean/Get", method: .get, headers: Self.bearer("tokenB"))
            let permissionsA = try #require(try Self.permissions(a))
            let permissionsB = try #require(try Self.permissions(b))
            #expect(permissionsA == ["admin": false, "maintain": false, "push": false, "triage": false, "pull": true])
            #expect(permissionsB == ["admin": true, "maintain": true, "push": true, "triage": true, "pull": true])
            #expect(a.body != b.body)
            #expect(a.headers[.eTag] != b.headers[.eTag])
            // In GitHub's place and key order.
            #expect(String(buffer: b.body).contains(
                #""default_branch":"main","permissions":{"admin":true,"maintain":true,"push":true,"triage":true,"pull":true},"temp_clone_token""#))
            // The same token, the same answer (so its 304s keep working).
            let again = try await client.execute(uri: "/repos/kean/Get", method: .get, headers: [.authorization: "token tokenA"])
            #expect(again.body == a.body)

            // Across many tokens, every role shows up, and roughly half are admins.
            var roles: [[String: Bool]: Int] = [:]
            for i in 0..<64 {
                let response = try await client.execute(uri: "/repos/kean/Get", method: .get, headers: Self.bearer("token\(i)"))
                let permissions = try #require(try Self.permissions(response))
                #expect(permissions["pull"] == true)
                // Each role includes the ones below it.
                let levels = ["admin", "maintain", "push", "triage", "pull"].map { permissions[$0] == true }
                #expect(levels == levels.sorted { !$0 && $1 }, "\(permissions)")
                roles[permissions, default: 0] += 1
            }
            #expect(roles.count == 5)
            let admins = roles.filter { $0.key["admin"] == true }.values.reduce(0, +)
            #expect((16...48).contains(admins))
        }
    }
}
