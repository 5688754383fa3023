import Foundation
import Freshet
import FreshetSimulator
import FreshetTestSupport
import FreshetTransports
import HTTPTypes
import OpenAPIRuntime
import Testing

@Suite("Middlewares over loopback", .timeLimit(.minutes(2)))
struct MiddlewareTests {
    @Test("503 with Retry-After, then 200: succeeds after exactly the stated wait")
    func retryHonoursRetryAfter() async throws {
        let sleeper = SleepRecorder()
        let retry = RetryMiddleware(sleep: sleeper.sleep, random: { 0.5 })
        try await withSimClient(middlewares: [retry]) { sim, client in
            let control = SimControl(sim)
            try await control.fault(route: "/users/octocat", status: 503, times: 1, headers: ["Retry-After": "7"])
            let response = try await client.send(Endpoint<Login>.get("users", "octocat"))
            #expect(response.value.login == "octocat")
            #expect(response.attempt == 2)
            #expect(sleeper.sleeps == [.seconds(7)])
            #expect(try await control.log().count == 2)
        }
    }

    @Test("Retry-After as an HTTP-date is honoured")
    func retryAfterHTTPDate() async throws {
        let sleeper = SleepRecorder()
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let retry = RetryMiddleware(sleep: sleeper.sleep, now: { now })
        try await withSimClient(middlewares: [retry]) { sim, client in
            try await SimControl(sim).fault(
                route: "/users/octocat", status: 429, times: 1,
                headers: ["Retry-After": HTTPDate.format(now.addingTimeInterval(12))])
            _ = try await client.send(Endpoint<Login>.get("users", "octocat"))
            #expect(sleeper.sleeps == [.seconds(12)])
        }
    }

    @Test("Exponential backoff with full jitter, then the last answer is returned")
    func backoffThenGiveUp() async throws {
        let sleeper = SleepRecorder()
        let retry = RetryMiddleware(policy: .init(maxAttempts: 4), sleep: sleeper.sleep, random: { 0.5 })
        try await withSimClient(middlewares: [retry]) { sim, client in
            let control = SimControl(sim)
            try await control.fault(route: "/users/octocat", status: 502, times: 10)
            let result = await Result { () async throws(APIError) in try await client.send(Endpoint<Login>.get("users", "octocat")) }
            guard case .failure(.httpStatus(502, _, _, _)) = result else {
                Issue.record("expected the final 502, got \(result)")
                return
            }
            let millis = sleeper.sleeps.map { Int($0.components.seconds * 1000 + $0.components.attoseconds / 1_000_000_000_000_000) }
            #expect(millis == [250, 500, 1000])
            #expect(try await control.log().count == 4)
        }
    }

    @Test("A Retry-After beyond the cap fails at once, saying when to retry")
    func retryAfterBeyondCap() async throws {
        let sleeper = SleepRecorder()
        let retry = RetryMiddleware(policy: .init(maxRetryAfter: .seconds(30)), sleep: sleeper.sleep)
        try await withSimClient(middlewares: [retry]) { sim, client in
            try await SimControl(sim).fault(route: "/users/octocat", status: 503, times: 1, headers: ["Retry-After": "3600"])
            let result = await Result { () async throws(APIError) in try await client.send(Endpoint<Login>.get("users", "octocat")) }
            guard case .failure(.retryLater(503, let retryAt, _, _)) = result else {
                Issue.record("expected retryLater, got \(result)")
                return
            }
            #expect(retryAt.timeIntervalSinceNow > 3000)
            #expect(sleeper.sleeps.isEmpty)
        }
    }

    @Test func postIsNeverRetried() async throws {
        let sleeper = SleepRecorder()
        let retry = RetryMiddleware(sleep: sleeper.sleep)
        try await withSimClient(middlewares: [retry]) { sim, client in
            let control = SimControl(sim)
            try await control.fault(route: "/repos/ReactiveX/RxSwift/issues", status: 503, times: 5)
            let post = Endpoint<Data>(method: .post, path: ["repos", "ReactiveX", "RxSwift", "issues"],
                                      body: Data(#"{"title":"x"}"#.utf8)) { data, _ in data }
            let result = await Result { () async throws(APIError) in try await client.send(post) }
            guard case .failure(.httpStatus(503, _, _, _)) = result else {
                Issue.record("expected 503, got \(result)")
                return
            }
            #expect(try await control.log().count == 1)
            #expect(sleeper.sleeps.isEmpty)
        }
    }

    @Test func connectionFailuresAreRetried() async throws {
        let url = try await closedLoopbackURL()
        let sleeper = SleepRecorder()
        let client = APIClient(baseURL: url, transport: liveTransport,
                               middlewares: [RetryMiddleware(sleep: sleeper.sleep)])
        let result = await Result { () async throws(APIError) in try await client.send(Endpoint<Login>.get("users", "x")) }
        guard case .failure(.unreachable) = result else {
            Issue.record("expected unreachable, got \(result)")
            return
        }
        #expect(sleeper.sleeps.count == 2)
    }

    @Test("Cancelling during the backoff wait ends at once, without another attempt")
    func cancelDuringBackoff() async throws {
        let retry = RetryMiddleware(policy: .init(baseDelay: .seconds(3600), maxDelay: .seconds(3600)), random: { 1 })
        try await withSimClient(middlewares: [retry]) { sim, client in
            let control = SimControl(sim)
            try await control.fault(route: "/users/octocat", status: 500, times: 5)
            let task = Task { () async throws(APIError) in try await client.send(Endpoint<Login>.get("users", "octocat")) }
            let firstAttempt = try await eventually { try await control.log().count == 1 }
            #expect(firstAttempt)
            task.cancel()
            #expect(await task.result.apiError == .cancelled)
            #expect(try await control.log().count == 1)
        }
    }

    @Test("Ten concurrent identical GETs produce one request")
    func coalescing() async throws {
        let coalescing = CoalescingMiddleware()
        let gate = GateMiddleware()
        try await withSimClient(middlewares: [coalescing, gate]) { sim, client throws in
            let control = SimControl(sim)
            let logins = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<10 {
                    group.addTask { try await client.value(Endpoint<Login>.get("users", "octocat")).login }
                }
                // One request is held at the gate and nine wait for it; then the answer is let through.
                let held = await eventually { gate.arrivals == 1 && coalescing.waiterCount == 9 }
                #expect(held)
                gate.open()
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(logins == Array(repeating: "octocat", count: 10))
            #expect(gate.arrivals == 1)
            #expect(try await control.log().count == 1)
        }
    }

    @Test("A body a middleware holds whole reaches the caller as it is; a body put in its place is read")
    func wholeBodiesAreNotReadAgain() async throws {
        // The note names the bytes the caller gets: bytes other than the body's own show that the
        // body was not read again.
        let noting = WholeNoting(noted: Data("noted".utf8))
        try await withSimClient(middlewares: [noting]) { _, client in
            let value = try await client.value(Endpoint<Data>.raw("users", "octocat"))
            #expect(value == Data("noted".utf8))
        }
        // A middleware outside that puts another body in its place: the note no longer applies.
        try await withSimClient(middlewares: [Rewrapping(), noting]) { _, client in
            let value = try await client.value(Endpoint<Data>.raw("users", "octocat"))
            #expect(String(decoding: value, as: UTF8.self).contains("\"login\""))
        }
        // Whole bytes over the caller's limit still fail as too large.
        try await withSimClient(middlewares: [WholeNoting(noted: nil)], maxResponseBytes: 16) { _, client in
            let error = await #expect(throws: APIError.self) { _ = try await client.value(Endpoint<Data>.raw("users", "octocat")) }
            if case .bodyTooLarge = error {} else { Issue.record("not bodyTooLarge: \(String(describing: error))") }
        }
    }

    @Test("Different credentials never share an exchange")
    func coalescingKeysOnCredentials() async throws {
        try await withSimClient(middlewares: [CoalescingMiddleware()]) { sim, client in
            let control = SimControl(sim)
            // Held at the server until both have arrived: the two overlap, so a shared exchange
            // would show as one request.
            try await control.hold(route: "/users/octocat")
            var alice = Endpoint<Login>.get("users", "octocat")
            alice.headers[.authorization] = "Bearer alice"
            var bob = alice
            bob.headers[.authorization] = "Bearer bob"
            async let a = client.value(alice)
            async let b = client.value(bob)
            let both = try await eventually { try await control.stats().inFlight == 2 }
            #expect(both, "each credential sent its own request")
            try await control.release(route: "/users/octocat")
            _ = try await (a, b)
            #expect(try await control.log().count == 2)
        }
    }

    @Test("One waiter cancelling does not cancel the others; all cancelling cancels the exchange")
    func coalescingCancellation() async throws {
        let coalescing = CoalescingMiddleware()
        let gate = GateMiddleware()
        // No transport deadline within the drip's 40 s: only the cancel can end the exchange early.
        let patient = Transports.asyncHTTPClient(timeout: .seconds(300))
        try await withSimClient(middlewares: [coalescing, gate], transport: patient) { sim, client throws in
            let control = SimControl(sim)
            let endpoint = Endpoint<Login>.get("users", "octocat")
            let stayer = Task { () async throws(APIError) in try await client.value(endpoint) }
            let held = await eventually { gate.arrivals == 1 }
            #expect(held)
            let leaver = Task { () async throws(APIError) in try await client.value(endpoint) }
            let joined = await eventually { coalescing.waiterCount == 1 }
            #expect(joined)
            leaver.cancel()
            // Checked before the gate opens (and the gate opened either way), so a waiter that
            // does not leave fails the test instead of hanging it.
            let left = await eventually { coalescing.waiterCount == 0 }
            gate.open()
            #expect(left, "the cancelled waiter left while the exchange was still held")
            #expect(await leaver.result.apiError == .cancelled, "the cancelled waiter should see .cancelled")
            #expect(try await stayer.value.login == "octocat")
            #expect(gate.arrivals == 1, "the stayer's exchange was not started again")

            let slow = Endpoint<Data>.raw("_sim", "drip", query: [
                QueryItem("bytes", "200000"), QueryItem("chunk", "100"), QueryItem("intervalMs", "20"),
            ])
            let first = Task { () async throws(APIError) in try await client.send(slow) }
            let dripping = try await eventually { try await control.log().contains { $0.path.hasPrefix("/_sim/drip") } }
            #expect(dripping)
            let second = Task { () async throws(APIError) in try await client.send(slow) }
            let waiting = await eventually { coalescing.waiterCount == 1 }
            #expect(waiting, "the second joined the first's exchange")
            first.cancel()
            second.cancel()
            let (firstResult, secondResult) = await (first.result, second.result)
            #expect(firstResult.apiError == .cancelled)
            #expect(secondResult.apiError == .cancelled)
            let aborted = try await eventually {
                try await control.log().first { $0.path.hasPrefix("/_sim/drip") }?.aborted == true
            }
            #expect(aborted, "with every caller gone, the shared exchange was cancelled at the server")
            #expect(try await control.log().filter { $0.path.hasPrefix("/_sim/drip") }.count == 1, "one exchange for both")
            #expect(coalescing.inFlightCount == 0)
        }
    }

    @Test("The owner cancelled: its waiter is not failed, it runs the exchange again")
    func coalescingOwnerCancelled() async throws {
        let coalescing = CoalescingMiddleware()
        let gate = GateMiddleware()
        // No transport deadline within the drip's 40 s: only the cancel can end the exchange early.
        let patient = Transports.asyncHTTPClient(timeout: .seconds(300))
        try await withSimClient(middlewares: [coalescing, gate], transport: patient) { sim, client throws in
            let control = SimControl(sim)
            let endpoint = Endpoint<Login>.get("users", "octocat")
            let owner = Task { () async throws(APIError) in try await client.value(endpoint) }
            let held = await eventually { gate.arrivals == 1 }
            #expect(held)
            let waiter = Task { () async throws(APIError) in try await client.value(endpoint) }
            // The waiter has joined: no second request while the first is in flight.
            let joined = await eventually { coalescing.waiterCount == 1 }
            #expect(joined)
            #expect(coalescing.inFlightCount == 1)
            owner.cancel()
            #expect(await owner.result.apiError == .cancelled)
            // The waiter starts the exchange again; the owner's never reached the server.
            let rerun = await eventually { gate.arrivals == 2 }
            #expect(rerun)
            gate.open()
            #expect(try await waiter.value.login == "octocat")
            let log = try await control.log()
            #expect(log.count == 1, "one exchange reached the server: \(log.map(\.path))")
            #expect(log.last?.status == 200)
            #expect(coalescing.inFlightCount == 0)
        }
    }

    @Test("A 403 with remaining 0 becomes rateLimited, and the spent budget is not spent again")
    func rateLimitBudget() async throws {
        let tracker = RateLimitTracker()
        try await withSimClient(middlewares: [RateLimitMiddleware(tracker: tracker)]) { sim, client in
            let control = SimControl(sim)
            _ = try await client.send(Endpoint<Login>.get("users", "octocat"))
            let budget = try #require(tracker.budget(for: "core"))
            #expect(budget.limit == 60)
            #expect(budget.remaining == 59)
            try await control.resetLog()
            let reset = Int(Date().timeIntervalSince1970) + 900
            try await control.post("ratelimit", ["resource": "core", "remaining": 0, "reset": reset])
            for _ in 0..<3 {
                let result = await Result { () async throws(APIError) in try await client.send(Endpoint<Login>.get("users", "octocat")) }
                guard case .failure(.rateLimited(let resetAt?, _, _, _)) = result else {
                    Issue.record("expected rateLimited, got \(result)")
                    return
                }
                #expect(Int(resetAt.timeIntervalSince1970) == reset)
            }
            #expect(try await control.log().count == 1, "only the first refused request reaches the server")
            #expect(tracker.budget(for: "core")?.remaining == 0)
        }
    }

    @Test("A cross-host redirect arrives without Authorization")
    func crossHostRedirectDropsCredentials() async throws {
        try await withSimClient(middlewares: [RedirectMiddleware()]) { sim, client in
            let control = SimControl(sim)
            let port = try #require(sim.baseURL.port)
            try await control.fault(route: "/users/moved", status: 301, times: 1,
                                    headers: ["Location": "http://localhost:\(port)/users/octocat"])
            var endpoint = Endpoint<Login>.get("users", "moved")
            endpoint.headers[.authorization] = "Bearer marker-token"
            let login = try await client.value(endpoint)
            #expect(login.login == "octocat")
            let log = try await control.log()
            #expect(log.count == 2)
            #expect(log.first?.headers["authorization"] == "Bearer marker-token")
            #expect(log.last?.headers["authorization"] == nil)
        }
    }

    @Test("A same-origin redirect keeps Authorization; a loop is named")
    func sameOriginRedirectAndLoop() async throws {
        try await withSimClient(middlewares: [RedirectMiddleware()]) { sim, client in
            let control = SimControl(sim)
            try await control.fault(route: "/users/moved", status: 302, times: 1, headers: ["Location": "/users/octocat"])
            var endpoint = Endpoint<Login>.get("users", "moved")
            endpoint.headers[.authorization] = "Bearer marker-token"
            _ = try await client.value(endpoint)
            #expect(try await control.log().last?.headers["authorization"] == "Bearer marker-token")

            try await control.fault(route: "/users/a", status: 302, times: 5, headers: ["Location": "/users/b"])
            try await control.fault(route: "/users/b", status: 302, times: 5, headers: ["Location": "/users/a"])
            let result = await Result { () async throws(APIError) in try await client.send(Endpoint<Login>.get("users", "a")) }
            guard case .failure(.redirectRefused(let reason, _)) = result else {
                Issue.record("expected redirectRefused, got \(result)")
                return
            }
            #expect(reason.contains("loop"))
            #expect(reason.contains("/users/a"))
        }
    }

    @Test func httpsToHTTPRedirectIsRefused() async throws {
        let transport = ClosureTransport { _, _, _ in
            (HTTPResponse(status: .found, headerFields: [.location: "http://example.com/plain"]), nil)
        }
        let client = APIClient(baseURL: URL(string: "https://example.com")!, transport: transport,
                               middlewares: [RedirectMiddleware()])
        let result = await Result { () async throws(APIError) in try await client.send(Endpoint<Data>.raw("x")) }
        guard case .failure(.redirectRefused(let reason, _)) = result else {
            Issue.record("expected redirectRefused, got \(result)")
            return
        }
        #expect(reason.contains("downgrades"))
    }

    @Test func tooManyRedirects() async throws {
        let transport = ClosureTransport { request, _, _ in
            let n = Int(request.path?.split(separator: "/").last ?? "0") ?? 0
            return (HTTPResponse(status: .temporaryRedirect, headerFields: [.location: "/r/\(n + 1)"]), nil)
        }
        let client = APIClient(baseURL: URL(string: "https://example.com")!, transport: transport,
                               middlewares: [RedirectMiddleware()])
        let result = await Result { () async throws(APIError) in try await client.send(Endpoint<Data>.raw("r", "0")) }
        guard case .failure(.redirectRefused(let reason, _)) = result else {
            Issue.record("expected redirectRefused, got \(result)")
            return
        }
        #expect(reason.contains("more than 10"))
    }

    @Test("Pagination follows rel=next as given, up to the page cap")
    func pagination() async throws {
        try await withSimClient { sim, client in
            let endpoint = Endpoint<[IDOnly]>.get("repos", "ReactiveX", "RxSwift", "events", query: [QueryItem("per_page", "100")])
            var pages: [[IDOnly]] = []
            for try await page in client.pages(endpoint, maxPages: 10) { pages.append(page.value) }
            #expect(pages.map(\.count) == [100, 100, 100])
            #expect(Set(pages.flatMap { $0.map(\.id) }).count == 300)
            let log = try await SimControl(sim).log().map(\.path)
            #expect(log.count == 3)
            #expect(log.last?.contains("page=3") == true)

            var capped: [Int] = []
            for try await page in client.pages(endpoint, maxPages: 2) { capped.append(page.value.count) }
            #expect(capped == [100, 100])
        }
    }

    @Test("Logging: one line per exchange, never a token")
    func loggingRedactsSecrets() async throws {
        let capture = CapturedLog()
        let logging = LoggingMiddleware(logger: capture.logger())
        try await withSimClient(middlewares: [logging, RetryMiddleware(sleep: SleepRecorder().sleep)]) { sim, client in
            try await SimControl(sim).fault(route: "/users/octocat", status: 503, times: 1)
            var endpoint = Endpoint<Login>.get("users", "octocat", query: [QueryItem("access_token", "marker-token-123")])
            endpoint.headers[.authorization] = "Bearer marker-token-456"
            _ = try await client.send(endpoint)
            _ = await Result { () async throws(APIError) in try await client.send(Endpoint<Login>.get("users", "nobody-here-x")) }
        }
        let text = capture.text
        #expect(text.contains("GET "))
        #expect(text.contains(" 200"))
        #expect(text.contains("attempt=2"))
        #expect(text.contains(" 404"))
        #expect(!text.contains("marker-token"))
        #expect(text.contains("REDACTED"))
    }

    @Test("Polling yields the first response and then only changes")
    func pollingYieldsChanges() async throws {
        try await withSimClient { sim, client in
            let control = SimControl(sim)
            let sleeper = SleepRecorder { count in
                if count == 2 { try await control.post("events", ["repo": "ReactiveX/RxSwift", "count": 2]) }
                if count == 4 { throw CancellationError() }
            }
            let endpoint = Endpoint<[IDOnly]>.get("repos", "ReactiveX", "RxSwift", "events")
            var yields: [[IDOnly]] = []
            do {
                for try await response in client.poll(endpoint, minimumInterval: .seconds(5), sleep: sleeper.sleep) {
                    yields.append(response.value)
                }
            } catch {}
            #expect(yields.count == 2)
            #expect(yields.last?.first?.id != yields.first?.first?.id)
            let requests = try await control.log().count
            #expect(requests == 4)
            #expect(sleeper.sleeps.allSatisfy { $0 == .seconds(60) })
        }
    }
}

/// Just the `id` of a GitHub event.
/// Reads the answer's body and hands it on whole (``HTTPBody/whole(_:)``); with `noted`, notes
/// those bytes in its place.
private struct WholeNoting: ClientMiddleware {
    let noted: Data?

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let (response, responseBody) = try await next(request, body, baseURL)
        let data = try await Data(collecting: responseBody ?? HTTPBody(), upTo: 1 << 20)
        guard let noted else { return (response, .whole(data)) }
        let whole = HTTPBody(data)
        ExchangeReport.current?.recordWhole(whole, data: noted)
        return (response, whole)
    }
}

/// Hands on the body beneath in a body of its own.
private struct Rewrapping: ClientMiddleware {
    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let (response, responseBody) = try await next(request, body, baseURL)
        return (response, responseBody.map { HTTPBody($0, length: $0.length, iterationBehavior: .single) })
    }
}

struct IDOnly: Decodable, Sendable {
    let id: String
}

@Suite("Rate-limit waiting and pacing")
struct RateLimitWaitTests {
    @Test("With maxWait, a spent budget that resets soon is waited for instead of failing")
    func waitsForAReset() async throws {
        let sleeper = SleepRecorder()
        let now = Date()
        let tracker = RateLimitTracker()
        tracker.record(RateLimitBudget(resource: "core", limit: 60, remaining: 0, resetAt: now.addingTimeInterval(30)))
        tracker.learn("core", forPath: "/users")
        let middleware = RateLimitMiddleware(tracker: tracker, maxWait: .seconds(60), sleep: sleeper.sleep, now: { now })
        try await withSimClient(middlewares: [middleware]) { sim, client in
            _ = try await client.send(Endpoint<Login>.get("users", "octocat"))
            #expect(sleeper.sleeps == [.seconds(30)])
            #expect(try await SimControl(sim).log().count == 1)
        }
    }

    @Test("Without enough maxWait it fails at once, naming the reset, and sends nothing")
    func failsWithoutSending() async throws {
        let now = Date()
        let tracker = RateLimitTracker()
        tracker.record(RateLimitBudget(resource: "search", limit: 10, remaining: 0, resetAt: now.addingTimeInterval(45)))
        tracker.learn("search", forPath: "/search/code")
        let middleware = RateLimitMiddleware(tracker: tracker, maxWait: .seconds(10), now: { now })
        try await withSimClient(middlewares: [middleware]) { sim, client in
            let result = await Result { () async throws(APIError) in
                try await client.send(Endpoint<Data>.raw("search", "repositories", query: [QueryItem("q", "swift")]))
            }
            guard case .failure(.rateLimited(let resetAt?, _, _, _)) = result else {
                Issue.record("expected rateLimited, got \(result)")
                return
            }
            #expect(resetAt == now.addingTimeInterval(45))
            #expect(try await SimControl(sim).log().isEmpty)
            _ = try await client.send(Endpoint<Login>.get("users", "octocat"))
            #expect(try await SimControl(sim).log().count == 1, "the core budget is separate from search")
        }
    }

    @Test("Which budget a path spends is learned from the server's X-RateLimit-Resource, per first path segment")
    func resourcesAreLearned() async throws {
        let tracker = RateLimitTracker()
        #expect(tracker.resource(forPath: "/search/repositories") == RateLimitTracker.defaultResource)
        try await withSimClient(middlewares: [RateLimitMiddleware(tracker: tracker)]) { _, client in
            _ = try await client.send(Endpoint<Data>.raw("search", "repositories", query: [QueryItem("q", "swift")]))
            #expect(tracker.resource(forPath: "/search/code?q=x") == "search")
            #expect(tracker.resource(forPath: "/users/octocat") == RateLimitTracker.defaultResource)
            _ = try await client.send(Endpoint<Login>.get("users", "octocat"))
            #expect(tracker.resource(forPath: "/users/someone") == "core")
            #expect(tracker.budget(for: "search") != nil && tracker.budget(for: "core") != nil)
            #expect(tracker.budget(for: RateLimitTracker.defaultResource) == nil, "both answers named their resource")
        }
    }

    @Test("Pacing spreads the remaining budget over the window")
    func pacing() async throws {
        let sleeper = SleepRecorder()
        let now = Date()
        let tracker = RateLimitTracker()
        tracker.record(RateLimitBudget(resource: "core", limit: 60, remaining: 9, resetAt: now.addingTimeInterval(100)))
        tracker.learn("core", forPath: "/users/someone")
        let middleware = RateLimitMiddleware(tracker: tracker, pacing: true, sleep: sleeper.sleep, now: { now })
        try await withSimClient(middlewares: [middleware]) { _, client in
            _ = try await client.send(Endpoint<Login>.get("users", "octocat"))
            #expect(sleeper.sleeps == [.seconds(10)])
        }
    }
}
