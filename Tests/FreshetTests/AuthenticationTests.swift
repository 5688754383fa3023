import Foundation
import Freshet
import FreshetSimulator
import FreshetTestSupport
import HTTPTypes
import Synchronization
import Testing

/// The authentication middleware against the simulator's `/auth/me` (which accepts only the
/// current access token) and `/oauth/token` (which hands it out for the refresh token).
@Suite struct AuthenticationTests {
    struct Me: Decodable, Sendable { var login: String }
    struct Token: Decodable, Sendable { var access_token: String }

    static let me = Endpoint<Me>.get("auth", "me")

    /// A refresh that asks the simulator's token endpoint, counting its calls.
    static func refresher(_ sim: RunningSimulator, refreshToken: String = Simulator.refreshToken)
        -> @Sendable (String?) async throws -> String
    {
        let tokens = APIClient(baseURL: sim.baseURL, transport: liveTransport)
        return { _ in
            let form = "grant_type=refresh_token&refresh_token=\(refreshToken)"
            let endpoint = Endpoint<Token>(method: .post, path: ["oauth", "token"],
                                           headers: [.contentType: "application/x-www-form-urlencoded"], body: Data(form.utf8))
            return try await tokens.value(endpoint).access_token
        }
    }

    /// A bearer middleware that starts with the simulator's first access token and refreshes
    /// through ``refresher(_:refreshToken:)``, counting the refreshes it starts.
    static func countingBearer(_ sim: RunningSimulator, refreshToken: String = Simulator.refreshToken)
        -> (AuthenticationMiddleware<String>, Counter)
    {
        let refreshes = Counter()
        let refresh = refresher(sim, refreshToken: refreshToken)
        let auth = AuthenticationMiddleware.bearer(token: Simulator.accessToken(generation: 0)) { old in
            refreshes.increment()
            return try await refresh(old)
        }
        return (auth, refreshes)
    }

    /// Eight requests refused with the old token wait on one refresh (held at the server until
    /// all eight were refused), then each is sent again once with the new token.
    @Test func concurrentRefusalsShareOneRefresh() async throws {
        try await withSimulator { sim in
            let (auth, refreshes) = Self.countingBearer(sim)
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport, middlewares: [auth])
            #expect(try await client.value(Self.me).login == "octocat")
            await sim.simulator.expireAccessToken()
            await sim.simulator.hold(route: "/oauth/token")
            await sim.simulator.resetLog()
            let results = Task {
                try await withThrowingTaskGroup(of: String.self) { group in
                    for _ in 0..<8 { group.addTask { try await client.value(Self.me).login } }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
            }
            let allRefused = await eventually(within: 20) {
                let log = await sim.simulator.requestLog()
                return log.filter { $0.path == "/auth/me" && $0.status == 401 }.count == 8
                    && log.contains { $0.path == "/oauth/token" }
            }
            #expect(allRefused)
            await sim.simulator.release(route: "/oauth/token")
            let logins = try await results.value
            #expect(logins == Array(repeating: "octocat", count: 8))
            #expect(refreshes.value == 1)
            #expect(await sim.simulator.tokenRefreshCount() == 1)
            #expect(auth.refreshCount == 1)
            let log = await sim.simulator.requestLog()
            let accepted = log.filter { $0.path == "/auth/me" && $0.status == 200 }
            #expect(accepted.count == 8)
            #expect(accepted.allSatisfy { $0.headers["authorization"] == "Bearer " + Simulator.accessToken(generation: 1) })
            #expect(log.filter { $0.path == "/oauth/token" }.count == 1)
        }
    }

    /// A refresh that fails fails every waiting request with one typed error; the error and the
    /// logs never show a token.
    @Test func aFailedRefreshFailsEveryWaiterWithATypedError() async throws {
        try await withSimulator { sim in
            let (auth, refreshes) = Self.countingBearer(sim, refreshToken: "revoked")
            let log = CapturedLog()
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport, middlewares: [
                LoggingMiddleware(logger: log.logger()), auth,
            ])
            await sim.simulator.expireAccessToken()
            await sim.simulator.hold(route: "/oauth/token")
            let results = Task {
                await withTaskGroup(of: APIError?.self) { group in
                    for _ in 0..<4 {
                        group.addTask {
                            do {
                                _ = try await client.value(Self.me)
                                return nil
                            } catch {
                                return error as? APIError
                            }
                        }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
            }
            let allRefused = await eventually(within: 20) {
                await sim.simulator.requestLog().filter { $0.path == "/auth/me" && $0.status == 401 }.count == 4
            }
            #expect(allRefused)
            await sim.simulator.release(route: "/oauth/token")
            let errors = await results.value
            #expect(errors.count == 4)
            for error in errors {
                guard case .authenticationFailed = error, let reason = error?.reason else {
                    Issue.record("expected authenticationFailed, got \(String(describing: error))")
                    continue
                }
                #expect(reason.contains("400"))
            }
            #expect(refreshes.value == 1)
            let text = log.text + errors.map { String(describing: $0) }.joined() + String(describing: auth)
            #expect(!text.contains("sim-access"))
            #expect(!text.contains("revoked"))
            #expect(!text.contains(Simulator.refreshToken))
            #expect(log.text.contains("/auth/me"), "the exchanges were logged, without their credentials")
        }
    }

    /// A `401` read only after the refresh of the same credential failed (its request was out
    /// meanwhile) fails with that refresh's error instead of starting a second refresh with the
    /// same refused credential; a request sent after the failure tries again.
    @Test func aRefusalReadAfterAFailedRefreshSharesItsFailure() async throws {
        try await withSimulator { sim in
            let (auth, refreshes) = Self.countingBearer(sim, refreshToken: "revoked")
            let gate = GateMiddleware(holdsAnswers: true)
            let late = APIClient(baseURL: sim.baseURL, transport: liveTransport, middlewares: [auth, gate])
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport, middlewares: [auth])
            await sim.simulator.expireAccessToken()
            let held = Task { () -> APIError? in
                do {
                    _ = try await late.value(Self.me)
                    return nil
                } catch {
                    return error as? APIError
                }
            }
            let answerHeld = await eventually(within: 20) { gate.arrivals == 1 }
            #expect(answerHeld, "the late request's 401 is in, and not yet read")
            await #expect(throws: APIError.self) { try await client.value(Self.me) }
            #expect(refreshes.value == 1)
            gate.open()
            let error = await held.value
            guard case .authenticationFailed = error, let reason = error?.reason else {
                Issue.record("expected authenticationFailed, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("400"))
            #expect(refreshes.value == 1, "the late 401 shared the failed refresh")
            await #expect(throws: APIError.self) { try await client.value(Self.me) }
            #expect(refreshes.value == 2, "a request sent after the failure tries again")
        }
    }

    /// Starting without a credential refreshes first; a body that can be sent only once is not
    /// sent again after a `401`.
    @Test func noCredentialRefreshesFirstAndASingleUseBodyIsNotResent() async throws {
        try await withSimulator { sim in
            let auth = AuthenticationMiddleware.bearer(token: nil, refresh: Self.refresher(sim))
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport, middlewares: [auth])
            let login = try await client.value(Self.me).login
            #expect(login == "octocat")
            #expect(auth.refreshCount == 1)

            await sim.simulator.expireAccessToken()
            await sim.simulator.resetLog()
            let (stream, continuation) = AsyncStream.makeStream(of: Data.self)
            continuation.yield(Data("once".utf8))
            continuation.finish()
            let endpoint = Endpoint<Me>(method: .post, path: ["auth", "me"])
            await #expect {
                try await client.upload(endpoint, from: .stream(stream)).value
            } throws: { error in
                guard case .httpStatus(401, _, _, _) = error as? APIError else { return false }
                return true
            }
            #expect(auth.refreshCount == 1, "a single-use body is not sent again, so no refresh")
        }
    }
}

extension AuthenticationTests {
    struct Expiring: Sendable {
        var token: String
        var expired: Bool
    }

    /// `isExpired` refreshes before the first request (the server never sees the old token);
    /// a `refreshWhen` that declines leaves a `401` as it is.
    @Test func expiryAndThePredicateDecideWhenToRefresh() async throws {
        try await withSimulator { sim in
            let refresh = Self.refresher(sim)
            let auth = AuthenticationMiddleware<Expiring>(
                credential: Expiring(token: "stale", expired: true),
                apply: { credential, request in request.headerFields[.authorization] = "Bearer \(credential.token)" },
                refresh: { _ in Expiring(token: try await refresh(nil), expired: false) },
                isExpired: { $0.expired })
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport, middlewares: [auth])
            let login = try await client.value(Self.me).login
            #expect(login == "octocat")
            #expect(auth.refreshCount == 1)
            let log = await sim.simulator.requestLog().filter { $0.path == "/auth/me" }
            #expect(log.map(\.status) == [200], "the expired credential was never sent")

            let declining = AuthenticationMiddleware.bearer(token: "wrong", refresh: refresh)
            var never = declining
            never.refreshWhen = { _ in false }
            let strict = APIClient(baseURL: sim.baseURL, transport: liveTransport, middlewares: [never])
            await #expect(throws: APIError.httpStatus(code: 401, message: "Bad credentials", url: sim.baseURL.absoluteString + "/auth/me")) {
                try await strict.value(Self.me)
            }
            #expect(never.refreshCount == 0)
        }
    }
}

/// A thread-safe count.
final class Counter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
