import Foundation
import FreshetSimulator
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

private func get(_ sim: RunningSimulator, _ path: String, headers: [String: String] = [:]) async throws -> HTTPResult {
    try await HTTPTestClient.send(sim.baseURL, path, headers: headers)
}

private func post(_ sim: RunningSimulator, _ path: String, _ body: String) async throws -> HTTPResult {
    try await HTTPTestClient.send(sim.baseURL, path, method: "POST", body: body)
}

/// Polls `condition` (bounded) — used only to wait for the server to observe something.
private func eventually(_ condition: @Sendable () async -> Bool) async -> Bool {
    for _ in 0..<1_000 {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return false
}

@Suite("FreshetSimulator")
struct SimulatorTests {
    // MARK: GitHub

    @Test func etagRoundTripAnswers304WithoutBodyAndKeepsTheRateLimit() async throws {
        try await withSimulator { sim in
            let first = try await get(sim, "/repos/ReactiveX/RxSwift/events")
            #expect(first.status == 200)
            let etag = try #require(first.header("ETag"))
            #expect(etag.hasPrefix("W/\""))
            #expect(first.header("Cache-Control") == "public, max-age=60, s-maxage=60")
            #expect(first.header("X-Poll-Interval") == "60")
            #expect(first.header("X-RateLimit-Limit") == "60")
            #expect(first.header("X-RateLimit-Resource") == "core")
            #expect(first.header("Content-Type") == "application/json; charset=utf-8")
            #expect(first.header("Last-Modified")?.hasSuffix(" GMT") == true)
            let remaining = try #require(first.header("X-RateLimit-Remaining").flatMap { Int($0) })
            #expect(remaining == 59)
            let events = try #require(try first.json() as? [[String: Any]])
            #expect(events.count == 30)
            #expect(events.allSatisfy { $0["id"] is String && $0["type"] is String && $0["created_at"] is String })

            let second = try await get(sim, "/repos/ReactiveX/RxSwift/events", headers: ["If-None-Match": etag])
            #expect(second.status == 304)
            #expect(second.body.isEmpty)
            #expect(second.header("ETag") == etag)
            #expect(second.header("X-RateLimit-Remaining") == String(remaining))

            let byDate = try await get(
                sim, "/repos/ReactiveX/RxSwift/events",
                headers: ["If-Modified-Since": try #require(first.header("Last-Modified"))])
            #expect(byDate.status == 304)
            #expect(byDate.header("X-RateLimit-Remaining") == String(remaining))

            // A different token gets a different validator, so no 304.
            let other = try await get(sim, "/repos/ReactiveX/RxSwift/events", headers: ["If-None-Match": etag, "Authorization": "Bearer abc"])
            #expect(other.status == 200)
            #expect(other.header("ETag") != etag)
            #expect(other.header("Cache-Control") == "private, max-age=60, s-maxage=60")
            #expect(other.header("X-RateLimit-Limit") == "5000")

            let third = try await get(sim, "/repos/ReactiveX/RxSwift/events")
            #expect(third.status == 200)
            #expect(third.header("X-RateLimit-Remaining") == String(remaining - 1))
        }
    }

    @Test func linkHeaderHasNextOnFirstPageAndNoneOnLastPage() async throws {
        try await withSimulator { sim in
            let first = try await get(sim, "/repos/vapor/vapor/events?per_page=100")
            #expect(first.status == 200)
            let link = try #require(first.header("Link"))
            let origin = "http://127.0.0.1:\(sim.port)"
            #expect(link.contains("<\(origin)/repos/vapor/vapor/events?per_page=100&page=2>; rel=\"next\""))
            #expect(link.contains("<\(origin)/repos/vapor/vapor/events?per_page=100&page=3>; rel=\"last\""))

            let last = try await get(sim, "/repos/vapor/vapor/events?per_page=100&page=3")
            #expect(last.status == 200)
            let lastLink = last.header("Link") ?? ""
            #expect(!lastLink.contains("rel=\"next\""))
            #expect(lastLink.contains("rel=\"first\""))
            #expect((try last.json() as? [Any])?.count == 100)
        }
    }

    @Test func unknownRepositoryIs404WithGitHubBody() async throws {
        try await withSimulator { sim in
            for path in ["/repos/nobody/nothing/events", "/repos/nobody/nothing", "/users/no-such-user-zz"] {
                let response = try await get(sim, path)
                #expect(response.status == 404)
                let body = try #require(try response.json() as? [String: Any])
                #expect(body["message"] as? String == "Not Found")
                #expect(body["documentation_url"] as? String == "https://docs.github.com/rest")
            }
            let repo = try await get(sim, "/repos/Alamofire/Alamofire")
            #expect(repo.status == 200)
            let object = try #require(try repo.json() as? [String: Any])
            #expect(object["full_name"] as? String == "Alamofire/Alamofire")
            #expect(object["subscribers_count"] is Int)
            #expect((object["license"] as? [String: Any])?["spdx_id"] as? String == "MIT")
            let user = try await get(sim, "/users/octocat")
            #expect((try user.json() as? [String: Any])?["login"] as? String == "octocat")
        }
    }

    @Test func searchWithoutQueryIs422AndLanguageFilterWorks() async throws {
        try await withSimulator { sim in
            let missing = try await get(sim, "/search/repositories")
            #expect(missing.status == 422)
            let body = try #require(try missing.json() as? [String: Any])
            #expect(body["message"] as? String == "Validation Failed")
            let errors = try #require(body["errors"] as? [[String: Any]])
            #expect(errors.first?["field"] as? String == "q")
            #expect(errors.first?["code"] as? String == "missing")
            #expect(missing.header("X-RateLimit-Resource") == "search")

            let tooLong = try await get(sim, "/search/repositories?q=" + String(repeating: "a", count: 257))
            #expect(tooLong.status == 422)

            let swift = try await get(sim, "/search/repositories?q=language:swift&sort=stars&per_page=50")
            #expect(swift.status == 200)
            let result = try #require(try swift.json() as? [String: Any])
            let items = try #require(result["items"] as? [[String: Any]])
            #expect(items.count == 50)
            #expect(items.allSatisfy { $0["language"] as? String == "Swift" })
            let stars = items.compactMap { $0["stargazers_count"] as? Int }
            #expect(stars == stars.sorted(by: >))
            #expect(((result["total_count"] as? Int) ?? 0) > 50)
            #expect(swift.header("Link")?.contains("rel=\"next\"") == true)
        }
    }

    @Test func rateLimitExhaustionAnswers403() async throws {
        try await withSimulator { sim in
            let set = try await post(sim, "/_sim/ratelimit", #"{"resource":"core","remaining":0,"reset":2000000000}"#)
            #expect(set.status == 200)
            let limited = try await get(sim, "/users/octocat")
            #expect(limited.status == 403)
            #expect(limited.header("X-RateLimit-Remaining") == "0")
            #expect(limited.header("X-RateLimit-Reset") == "2000000000")
            let body = try #require(try limited.json() as? [String: Any])
            #expect((body["message"] as? String)?.hasPrefix("API rate limit exceeded") == true)
        }
    }

    // MARK: Kakao

    @Test func kakaoRequiresTheKeyAndValidatesPaging() async throws {
        try await withSimulator { sim in
            let anonymous = try await get(sim, "/v2/search/blog?query=swift")
            #expect(anonymous.status == 401)
            let denied = try #require(try anonymous.json() as? [String: Any])
            #expect(denied["errorType"] as? String == "AccessDeniedError")
            #expect(denied["message"] as? String == "wrong appKey(null) format")

            let wrongKey = try await get(sim, "/v2/search/blog?query=swift", headers: ["Authorization": "KakaoAK nope"])
            #expect(wrongKey.status == 401)

            let auth = ["Authorization": "KakaoAK sim-kakao-key"]
            let ok = try await get(sim, "/v2/search/blog?query=RxSwift&size=5", headers: auth)
            #expect(ok.status == 200)
            let result = try #require(try ok.json() as? [String: Any])
            let meta = try #require(result["meta"] as? [String: Any])
            #expect(meta["is_end"] as? Bool == false)
            let documents = try #require(result["documents"] as? [[String: Any]])
            #expect(documents.count == 5)
            #expect(documents.allSatisfy { ($0["title"] as? String ?? "").contains("<b>RxSwift</b>") || ($0["contents"] as? String ?? "").contains("<b>RxSwift</b>") })
            #expect(documents.allSatisfy { ($0["datetime"] as? String ?? "").hasSuffix(".000+09:00") })

            let korean = try await get(sim, "/v2/search/blog?query=%EB%B9%84%EB%8F%99%EA%B8%B0&sort=recency", headers: auth)
            let koreanDocs = try #require((try korean.json() as? [String: Any])?["documents"] as? [[String: Any]])
            #expect(!koreanDocs.isEmpty)
            let dates = koreanDocs.compactMap { $0["datetime"] as? String }
            #expect(dates == dates.sorted(by: >))

            let tooFar = try await get(sim, "/v2/search/blog?query=swift&page=51", headers: auth)
            #expect(tooFar.status == 400)
            #expect((try tooFar.json() as? [String: Any])?["message"] as? String == "page is more than max")

            let missing = try await get(sim, "/v2/search/blog", headers: auth)
            #expect(missing.status == 400)
            #expect((try missing.json() as? [String: Any])?["errorType"] as? String == "MissingParameter")

            let nothing = try await get(sim, "/v2/search/blog?query=zzqqxxnothing", headers: auth)
            let empty = try #require(try nothing.json() as? [String: Any])
            #expect((empty["meta"] as? [String: Any])?["total_count"] as? Int == 0)
            #expect((empty["meta"] as? [String: Any])?["is_end"] as? Bool == true)
            #expect((empty["documents"] as? [Any])?.isEmpty == true)
        }
    }

    // MARK: Hacker News

    @Test func hackerNewsListsHaveUpstreamLengthsAndNullItemsExist() async throws {
        try await withSimulator { sim in
            let top = try #require(try await get(sim, "/v0/topstories.json").json() as? [Int])
            #expect(top.count == 500)
            let ask = try #require(try await get(sim, "/v0/askstories.json").json() as? [Int])
            #expect(ask.count == 200)
            #expect(try #require(try await get(sim, "/v0/newstories.json").json() as? [Int]).count == 500)
            #expect(try #require(try await get(sim, "/v0/jobstories.json").json() as? [Int]).count == 200)

            let zero = try await get(sim, "/v0/item/0.json")
            #expect(zero.status == 200)
            #expect(zero.text == "null")
            let unknown = try await get(sim, "/v0/item/1.json")
            #expect(unknown.text == "null")
            // A listed id whose item is null (as upstream does for some jobs).
            let nullIDs = sim.simulator.hackerNewsNullItemIDs()
            let listedNull = try #require(top.first { nullIDs.contains($0) })
            #expect(try await get(sim, "/v0/item/\(listedNull).json").text == "null")

            let story = try #require(try await get(sim, "/v0/item/\(top[0]).json").json() as? [String: Any])
            #expect(story["type"] as? String == "story")
            #expect(story["id"] as? Int == top[0])
            #expect(story["title"] is String)
            let askStory = try #require(try await get(sim, "/v0/item/\(ask[0]).json").json() as? [String: Any])
            #expect((askStory["title"] as? String)?.hasPrefix("Ask HN:") == true)
            #expect(askStory["text"] is String)
            if let kid = (story["kids"] as? [Int])?.first {
                let comment = try #require(try await get(sim, "/v0/item/\(kid).json").json() as? [String: Any])
                #expect(comment["parent"] as? Int == top[0])
            }
            let by = try #require(story["by"] as? String)
            let user = try #require(try await get(sim, "/v0/user/\(by).json").json() as? [String: Any])
            #expect(user["id"] as? String == by)
            #expect((user["submitted"] as? [Int])?.contains(top[0]) == true)
        }
    }

    // MARK: Control endpoints

    @Test func addingEventsChangesTheETag() async throws {
        try await withSimulator { sim in
            let before = try await get(sim, "/repos/kean/Get/events?per_page=5")
            let etag = try #require(before.header("ETag"))
            let firstID = try #require((try before.json() as? [[String: Any]])?.first?["id"] as? String)

            let added = try await post(sim, "/_sim/events", #"{"repo":"kean/Get","count":3}"#)
            #expect(added.status == 200)

            let after = try await get(sim, "/repos/kean/Get/events?per_page=5", headers: ["If-None-Match": etag])
            #expect(after.status == 200)
            #expect(after.header("ETag") != etag)
            #expect(after.header("Last-Modified") != before.header("Last-Modified"))
            let events = try #require(try after.json() as? [[String: Any]])
            #expect(events[3]["id"] as? String == firstID)
            let newIDs = events.prefix(3).compactMap { ($0["id"] as? String).flatMap(UInt64.init) }
            #expect(newIDs.count == 3 && newIDs.allSatisfy { $0 > UInt64(firstID)! })

            #expect(await sim.simulator.addEvents(repo: "kean/Get", count: 1))
            #expect(await sim.simulator.addEvents(repo: "no/such", count: 1) == false)
        }
    }

    @Test func injectedFaultIsServedTheGivenNumberOfTimes() async throws {
        try await withSimulator { sim in
            let fault = #"{"route":"/repos/ReactiveX/RxSwift/events","status":503,"times":2,"headers":{"Retry-After":"1"},"body":"{\"message\":\"Service Unavailable\"}"}"#
            #expect(try await post(sim, "/_sim/faults", fault).status == 200)
            for _ in 0..<2 {
                let failed = try await get(sim, "/repos/ReactiveX/RxSwift/events")
                #expect(failed.status == 503)
                #expect(failed.header("Retry-After") == "1")
                #expect(failed.text == #"{"message":"Service Unavailable"}"#)
            }
            #expect(try await get(sim, "/repos/ReactiveX/RxSwift/events").status == 200)

            // Other routes are untouched, and the Swift accessor works the same way.
            await sim.simulator.injectFaults(Fault(route: "/v0/item", status: 500, times: 1))
            #expect(try await get(sim, "/v0/topstories.json").status == 200)
            #expect(try await get(sim, "/v0/item/0.json").status == 500)
            #expect(try await get(sim, "/v0/item/0.json").status == 200)
        }
    }

    @Test func requestLogRecordsHeadersButNotControlRequests() async throws {
        try await withSimulator { sim in
            _ = try await get(sim, "/users/octocat?x=1", headers: ["X-Test-Header": "abc", "Authorization": "token t0k"])
            let response = try await get(sim, "/_sim/log")
            let log = try #require(try response.json() as? [[String: Any]])
            #expect(log.count == 1)
            let entry = try #require(log.first)
            #expect(entry["method"] as? String == "GET")
            #expect(entry["path"] as? String == "/users/octocat?x=1")
            #expect(entry["status"] as? Int == 200)
            #expect(entry["finished"] as? Bool == true)
            #expect(entry["aborted"] as? Bool == false)
            #expect(((entry["bytesSent"] as? Int) ?? 0) > 0)
            let headers = try #require(entry["headers"] as? [String: String])
            #expect(headers["x-test-header"] == "abc")
            #expect(headers["authorization"] == "token t0k")
            #expect(headers["host"] == "127.0.0.1:\(sim.port)")

            let typed = await sim.simulator.requestLog()
            #expect(typed.count == 1)
            #expect(typed.first?.headers["x-test-header"] == "abc")
            #expect(await sim.simulator.stats() == SimulatorStats(requests: 1, inFlight: 0, maxInFlight: 1))

            #expect(try await HTTPTestClient.send(sim.baseURL, "/_sim/log", method: "DELETE").status == 200)
            #expect(await sim.simulator.requestLog().isEmpty)
            #expect(await sim.simulator.stats().requests == 0)
        }
    }

    @Test func bytesEndpointServesExactSizes() async throws {
        try await withSimulator { sim in
            let sized = try await get(sim, "/_sim/bytes?size=1000")
            #expect(sized.body.count == 1000)
            #expect(sized.header("Content-Length") == "1000")
            #expect(try sized.json() is [String: Any])
            let chunked = try await get(sim, "/_sim/bytes?size=70000&chunked=1")
            #expect(chunked.body.count == 70000)
            #expect(chunked.header("Content-Length") == nil)
            let log = await sim.simulator.requestLog()
            #expect(log.map(\.bytesSent) == [1000, 70000])
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func clientDisconnectDuringDripIsRecordedAsAborted() async throws {
        try await withSimulator { sim in
            let session = HTTPTestClient.session()
            let base = sim.baseURL
            let download = Task {
                try await HTTPTestClient.send(base, "/_sim/drip?bytes=100000&chunk=100&intervalMs=50", session: session)
            }
            // Wait until the server has started streaming, then hang up.
            let started = await eventually { await sim.simulator.requestLog().first.map { $0.bytesSent > 0 } ?? false }
            #expect(started)
            download.cancel()
            session.invalidateAndCancel()
            _ = try? await download.value
            let id = try #require(await sim.simulator.requestLog().first?.id)
            let entry = try #require(await sim.simulator.waitForCompletion(ofRequest: id, timeout: .seconds(30)))
            #expect(entry.aborted)
            #expect(!entry.finished)
            #expect(entry.bytesSent < 100_000)
            #expect(await sim.simulator.stats().inFlight == 0)
        }
    }

    /// Each drip would take about 14 hours: `withSimulator` returning within the time limit, with
    /// the three aborted at the server and failed at the client, is shutdown not waiting for them.
    @Test(.timeLimit(.minutes(1)))
    func maxInFlightCountsConcurrentRequestsAndShutdownIsPrompt() async throws {
        let (simulator, tasks) = try await withSimulator { sim in
            let session = HTTPTestClient.session()
            let base = sim.baseURL
            var tasks: [Task<HTTPResult, any Error>] = []
            for _ in 0..<3 {
                tasks.append(Task { try await HTTPTestClient.send(base, "/_sim/drip?bytes=1000000&chunk=10&intervalMs=500", session: session) })
            }
            let allInFlight = await eventually { await sim.simulator.stats().inFlight == 3 }
            #expect(allInFlight)
            #expect(await sim.simulator.stats().maxInFlight == 3)
            // Leave the drips running: withSimulator must still return (and abort them).
            return (sim.simulator, tasks)
        }
        let drips = await simulator.requestLog().filter { $0.path.hasPrefix("/_sim/drip") }
        #expect(drips.count == 3)
        #expect(drips.allSatisfy { $0.aborted && !$0.finished && $0.bytesSent < 1_000_000 }, "\(drips)")
        for task in tasks {
            let result = await task.result
            #expect(throws: (any Error).self, "the client saw its drip cut short") { try result.get() }
        }
    }

    @Test func latencyEndpointAcceptsAndClearsRoutes() async throws {
        try await withSimulator { (sim: RunningSimulator) async throws in
            #expect(try await post(sim, "/_sim/latency", #"{"route":"/v0/item","ms":20}"#).status == 200)
            #expect(try await get(sim, "/v0/item/0.json").text == "null")
            #expect(try await post(sim, "/_sim/latency", #"{"route":"/v0/item","ms":0}"#).status == 200)
            #expect(try await post(sim, "/_sim/latency", #"{"nonsense":true}"#).status == 400)
        }
    }

    @Test func holdKeepsARequestUntilReleasedAndOnlyThatRoute() async throws {
        try await withSimulator { (sim: RunningSimulator) async throws in
            #expect(try await post(sim, "/_sim/hold", #"{"route":"/v0/item/1.json"}"#).status == 200)
            let held = Task { try await get(sim, "/v0/item/1.json") }
            let arrived = await eventually { await sim.simulator.requestLog().contains { $0.path == "/v0/item/1.json" } }
            #expect(arrived)
            // Another path is not held, and the held request is still waiting after it answered.
            #expect(try await get(sim, "/v0/item/0.json").text == "null")
            #expect(await sim.simulator.requestLog().first { $0.path == "/v0/item/1.json" }?.inFlight == true)
            #expect(try await HTTPTestClient.send(sim.baseURL, "/_sim/hold?route=/v0/item/1.json", method: "DELETE").status == 200)
            #expect(try await held.value.status == 200)
            #expect(try await post(sim, "/_sim/hold", #"{"nonsense":true}"#).status == 400)
        }
    }

    // MARK: Determinism

    @Test func sameSeedGivesIdenticalData() async throws {
        let anchor = Date(timeIntervalSince1970: 1_750_000_000)
        let config = SimulatorConfiguration(seed: 7, anchorDate: anchor)
        let paths = ["/v0/topstories.json", "/repos/ReactiveX/RxSwift/events?per_page=100", "/search/repositories?q=swift&per_page=20"]

        @Sendable func snapshot(_ sim: RunningSimulator) async throws -> [String] {
            var bodies: [String] = []
            for path in paths { bodies.append(try await get(sim, path).text) }
            let top = try #require(try await get(sim, "/v0/topstories.json").json() as? [Int])
            for id in top.prefix(5) { bodies.append(try await get(sim, "/v0/item/\(id).json").text) }
            return bodies
        }

        let a = try await withSimulator(config) { try await snapshot($0) }
        let b = try await withSimulator(config) { try await snapshot($0) }
        #expect(a == b)

        func eventIDs(_ body: String) throws -> [String] {
            let events = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [[String: Any]])
            return events.compactMap { $0["id"] as? String }
        }
        #expect(try eventIDs(a[1]).count == 100)

        // Event ids do not depend on the clock, only on the seed.
        let c = try await withSimulator(SimulatorConfiguration(seed: 7)) { sim in
            try await get(sim, "/repos/ReactiveX/RxSwift/events?per_page=100").text
        }
        #expect(try eventIDs(c) == eventIDs(a[1]))

        let other = try await withSimulator(SimulatorConfiguration(seed: 8, anchorDate: anchor)) { try await snapshot($0) }
        #expect(other[0] != a[0])
    }

    @Test func refusesToListenBeyondLoopback() async throws {
        let simulator = Simulator()
        await #expect(throws: SimulatorError.nonLoopbackHost("0.0.0.0")) {
            try await simulator.run(host: "0.0.0.0", port: 0) { _ in }
        }
    }
}
