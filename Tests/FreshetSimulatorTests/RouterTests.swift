import Foundation
@testable import FreshetSimulator
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// In-process tests of the simulator's routers and middleware through HummingbirdTesting's router
/// framework (no socket): what no route answers, `HEAD`, the routes list, faults, latency and the
/// request log. The socket tests in `SimulatorTests` cover what needs a connection.
@Suite("FreshetSimulator: routers and middleware")
struct RouterTests {
    /// GitHub's not-found body, as GitHub writes it.
    static let notFound = #"{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}"#

    /// Runs `body` against a fresh simulator's responder, in process.
    func withRouter<T: Sendable>(
        _ body: @escaping @Sendable (Simulator, any TestClientProtocol) async throws -> T
    ) async throws -> T {
        let simulator = Simulator(configuration: SimulatorConfiguration(hnStoryCount: 50))
        let app = Application(responder: simulator.makeResponder())
        return try await app.test(.router) { client in try await body(simulator, client) }
    }

    // MARK: What no route answers

    @Test("Paths no route answers get GitHub's 404 body, recorded like any answer")
    func unknownPathsGetGitHubsNotFound() async throws {
        try await withRouter { simulator, client in
            let misses: [(HTTPRequest.Method, String)] = [
                (.get, "/"), (.get, "/nope"), (.get, "/v2/search"), (.get, "/v2/search/blog/x"), (.get, "/avatars/u/0"),
                (.get, "/avatars/u/abc"), (.get, "/_sim"), (.post, "/v0/topstories.json"), (.post, "/_sim/drip"),
                (.delete, "/v2/search/blog"),
            ]
            for (method, path) in misses {
                let response = try await client.execute(uri: path, method: method)
                #expect(response.status == .notFound, "\(method) \(path)")
                #expect(String(buffer: response.body) == Self.notFound, "\(method) \(path)")
                #expect(response.headers[.contentType] == "application/json; charset=utf-8")
                #expect(response.headers[.init("X-RateLimit-Resource")!] == nil, "\(method) \(path) is not GitHub's API")
            }
            let log = await simulator.requestLog()
            #expect(log.map(\.path) == misses.map(\.1))
            #expect(log.allSatisfy { $0.status == 404 && $0.finished })
        }
    }

    @Test("Every path under /repos, /users and /search is GitHub's: 404 with its headers, counted against the budget")
    func gitHubPathsWithoutARouteAreGitHubs404() async throws {
        try await withRouter { _, client in
            let misses: [(HTTPRequest.Method, String, String)] = [
                (.get, "/repos", "core"), (.get, "/repos/ReactiveX", "core"), (.get, "/repos/ReactiveX/RxSwift/issues", "core"),
                (.get, "/repos/ReactiveX/RxSwift/events/1", "core"), (.post, "/repos/ReactiveX/RxSwift", "core"),
                (.put, "/repos/ReactiveX/RxSwift/events", "core"), (.get, "/users", "core"), (.get, "/users/octocat/repos", "core"),
                (.get, "/search", "search"), (.get, "/search/code", "search"), (.post, "/search/repositories", "search"),
            ]
            var remaining = ["core": 60, "search": 10]
            for (method, path, resource) in misses {
                let response = try await client.execute(uri: path, method: method)
                #expect(response.status == .notFound, "\(method) \(path)")
                #expect(String(buffer: response.body) == Self.notFound)
                #expect(response.headers[.init("X-GitHub-Media-Type")!] == "github.v3; format=json")
                #expect(response.headers[.init("X-RateLimit-Resource")!] == resource, "\(method) \(path)")
                remaining[resource, default: 0] -= 1
                #expect(response.headers[.init("X-RateLimit-Remaining")!] == String(remaining[resource] ?? 0), "\(method) \(path)")
            }
            // An extension method under a GitHub root is GitHub's too; elsewhere the plain 404.
            let propfind = try await client.execute(uri: "/repos/ReactiveX/RxSwift", method: try #require(HTTPRequest.Method("PROPFIND")))
            #expect(propfind.status == .notFound)
            #expect(propfind.headers[.init("X-RateLimit-Resource")!] == "core")
            #expect(propfind.headers[.init("X-RateLimit-Remaining")!] == String((remaining["core"] ?? 0) - 1))
            let elsewhere = try await client.execute(uri: "/v0/item/1.json", method: try #require(HTTPRequest.Method("PURGE")))
            #expect(elsewhere.status == .notFound)
            #expect(String(buffer: elsewhere.body) == Self.notFound)
            let badToken = try await client.execute(uri: "/repos/x", method: .get, headers: [.authorization: "Basic"])
            #expect(badToken.status == .unauthorized)
        }
    }

    @Test("Hacker News: null for any other .json path, Firebase's 404 without .json; slashes as before")
    func hackerNewsFallbacks() async throws {
        try await withRouter { _, client in
            for path in ["/v0", "/v0/item", "/v0/user", "/v0/item/abc", "/v0/a/b/c"] {
                let response = try await client.execute(uri: path, method: .get)
                #expect(response.status == .notFound, "\(path)")
                #expect(String(buffer: response.body) == #"{"error":"Not Found"}"#, "\(path)")
                #expect(response.headers[.init("Access-Control-Allow-Origin")!] == "*")
            }
            for path in ["/v0/item/0.json", "/v0/item/abc.json", "/v0/nothing.json", "/v0/a/b/c.json", "/v0//item//0.json"] {
                let response = try await client.execute(uri: path, method: .get)
                #expect(response.status == .ok, "\(path)")
                #expect(String(buffer: response.body) == "null", "\(path)")
            }
            let top = try await client.execute(uri: "/v0/topstories.json", method: .get)
            let slashed = try await client.execute(uri: "/v0/topstories.json/", method: .get)
            #expect(top.status == .ok)
            #expect(String(buffer: top.body).hasPrefix("["))
            #expect(slashed.body == top.body)
            let max = try await client.execute(uri: "/v0/maxitem.json", method: .get)
            #expect(Int(String(buffer: max.body)) != nil)
        }
    }

    @Test("Trailing and repeated slashes match as before; parameters are percent-decoded")
    func slashesAndPercentEncoding() async throws {
        try await withRouter { simulator, client in
            let plain = try await client.execute(uri: "/users/octocat", method: .get)
            #expect(plain.status == .ok)
            for path in ["/users/octocat/", "/users//octocat", "/users/octo%63at"] {
                let response = try await client.execute(uri: path, method: .get)
                #expect(response.status == .ok, "\(path)")
                #expect(response.body == plain.body, "\(path)")
            }
            #expect(await simulator.requestLog().last?.path == "/users/octo%63at")
        }
    }

    // MARK: HEAD

    @Test("HEAD gets the GET head, Content-Length included, and no body; the log counts no bytes")
    func headHasTheGetHeadAndNoBody() async throws {
        try await withRouter { simulator, client in
            for path in ["/users/octocat", "/v0/item/0.json", "/nope", "/avatars/u/1?s=16"] {
                let get = try await client.execute(uri: path, method: .get)
                let head = try await client.execute(uri: path, method: .head)
                #expect(head.status == get.status, "\(path)")
                #expect(head.body.readableBytes == 0, "\(path)")
                #expect(head.headers[.contentLength] == String(get.body.readableBytes), "\(path)")
                #expect(head.headers[.contentType] == get.headers[.contentType], "\(path)")
            }
            let heads = await simulator.requestLog().filter { $0.method == "HEAD" }
            #expect(heads.count == 4)
            #expect(heads.allSatisfy { $0.finished && $0.bytesSent == 0 })
        }
    }

    // MARK: Control endpoints

    @Test("Control endpoints are not recorded; unknown ones (and unknown methods) are the control 404")
    func controlEndpoints() async throws {
        try await withRouter { simulator, client in
            #expect(try await client.execute(uri: "/_sim/stats", method: .get).status == .ok)
            let cases: [(HTTPRequest.Method, String, String)] = [
                (.put, "/_sim/log", "unknown control endpoint PUT /_sim/log"),
                (.head, "/_sim/log", "unknown control endpoint HEAD /_sim/log"),
                (.get, "/_sim/nothing", "unknown control endpoint GET /_sim/nothing"),
                (.get, "/_sim/log/extra", "unknown control endpoint /_sim/log/extra"),
                (.get, "/_sim/drip/extra", "unknown control endpoint /_sim/drip/extra"),
            ]
            for (method, path, message) in cases {
                let response = try await client.execute(uri: path, method: method)
                #expect(response.status == .notFound, "\(method) \(path)")
                if method != .head {
                    #expect(String(buffer: response.body) == #"{"error":"\#(message)"}"#)
                }
            }
            let bad = try await client.execute(uri: "/_sim/latency", method: .post, body: ByteBuffer(string: "{}"))
            #expect(bad.status == .badRequest)
            #expect(String(buffer: bad.body) == #"{"error":"expected {\"route\":\"/v0/item\",\"ms\":50}"}"#)
            #expect(await simulator.requestLog().isEmpty)
        }
    }

    @Test("The routes list is generated from the routers: one line per registered path, with its hint")
    func routesListComesFromTheRouters() async throws {
        let simulator = Simulator(configuration: SimulatorConfiguration(hnStoryCount: 1))
        let routes = simulator.makeRoutes()
        let registered = (routes.api.router.routes + routes.control.router.routes).map(\.path.description)
        let list = Simulator.routeList(routes)
        #expect(list == Simulator.routes)
        let listed = list.map { line in String(line.split(separator: " ")[1].prefix { $0 != "?" }) }
        #expect(listed.count == Set(registered).count)
        #expect(Set(listed) == Set(registered))
        for line in [
            "GET /repos/{owner}/{repo}/events?per_page=&page=",
            "GET /users/{login}",
            "ANY /repos/{owner} (anything else: GitHub's 404, counted against the rate limit)",
            "GET /v0/item/{id}.json",
            "GET /v2/search/blog?query=&sort=accuracy|recency&page=&size= (Authorization: KakaoAK <key>)",
            "ANY /scripted/** (answers from its script, with 304 on matching validators)",
            "GET /_sim/drip?bytes=N&chunk=K&intervalMs=M",
            "GET|DELETE /_sim/log",
            "POST|DELETE /_sim/faults {\"route\":\"/path\",\"status\":503,\"times\":1,\"headers\":{},\"body\":\"…\"}",
            "GET /_sim/routes",
        ] {
            #expect(list.contains(line), "\(line)")
        }

        try await withRouter { _, client in
            let served = try await client.execute(uri: "/_sim/routes", method: .get)
            let decoded = try JSONDecoder().decode([String].self, from: Data(served.body.readableBytesView))
            #expect(decoded == Simulator.routes)
        }
    }

    // MARK: Scripted

    @Test("/scripted/… answers any method; 304 on a matching validator; unscripted paths are its own 404")
    func scriptedAnswersAnyMethod() async throws {
        try await withRouter { simulator, client in
            await simulator.setScript(
                path: "/scripted/a", Script(headers: [["ETag", "\"v1\""]], body: "hello", unsafeHeaders: [["Location", "/scripted/b"]]))
            let get = try await client.execute(uri: "/scripted/a", method: .get)
            #expect(get.status == .ok)
            #expect(String(buffer: get.body) == "hello")
            let conditional = try await client.execute(uri: "/scripted/a", method: .get, headers: [.ifNoneMatch: "\"v1\""])
            #expect(conditional.status == .notModified)
            #expect(conditional.body.readableBytes == 0)
            for method: HTTPRequest.Method in [.post, .put, .patch, .delete, .options] {
                let unsafe = try await client.execute(uri: "/scripted/a", method: method)
                #expect(unsafe.status == .ok, "\(method)")
                #expect(unsafe.headers[.location] == "/scripted/b", "\(method)")
            }
            // Extension methods too, as any method reached the scripted paths before the router.
            for method in ["PURGE", "M-SEARCH"] {
                let extended = try await client.execute(uri: "/scripted/a", method: try #require(HTTPRequest.Method(method)))
                #expect(extended.status == .ok, "\(method)")
                #expect(extended.headers[.location] == "/scripted/b", "\(method): the script's answer to an unsafe method")
            }
            for path in ["/scripted", "/scripted/none", "/scripted/a/b"] {
                let missing = try await client.execute(uri: path, method: .get)
                #expect(missing.status == .notFound)
                #expect(String(buffer: missing.body) == #"{"message":"Not Found"}"#)
            }
        }
    }

    // MARK: Middleware

    @Test("A fault is served the given number of times, fault modes first, on any recorded path")
    func faultMiddleware() async throws {
        try await withRouter { simulator, client in
            let real = try await client.execute(uri: "/users/octocat", method: .get)
            await simulator.injectFaults(Fault(route: "/users/octocat", status: 503, times: 1, headers: ["Retry-After": "1"], body: "{}"))
            await simulator.injectFaultMode(FaultMode(route: "/users/oct", mode: .huge, size: 20))
            await simulator.injectFaults(Fault(route: "/nope", status: 500))

            let huge = try await client.execute(uri: "/users/octocat", method: .get)
            #expect(huge.status == .ok)
            #expect(String(buffer: huge.body) == #"{"pad":"xxxxxxxxxx"}"#)
            let canned = try await client.execute(uri: "/users/octocat", method: .get)
            #expect(canned.status == .serviceUnavailable)
            #expect(canned.headers[.retryAfter] == "1")
            #expect(String(buffer: canned.body) == "{}")
            let again = try await client.execute(uri: "/users/octocat", method: .get)
            #expect(again.status == .ok)
            #expect(again.body == real.body)

            #expect(try await client.execute(uri: "/nope", method: .get).status == .internalServerError)
            #expect(try await client.execute(uri: "/nope", method: .get).status == .notFound)
            #expect(await simulator.requestLog().map(\.status) == [200, 200, 503, 200, 500, 404])
        }
    }

    @Test("A drip fault mode serves the real answer, whatever the validators, in chunks")
    func dripFaultModeServesTheRealAnswer() async throws {
        try await withRouter { simulator, client in
            let real = try await client.execute(uri: "/repos/kean/Get", method: .get)
            let etag = try #require(real.headers[.eTag])
            await simulator.injectFaultMode(FaultMode(route: "/repos/kean/Get", mode: .drip, chunk: 7, intervalMs: 0))
            let dripped = try await client.execute(uri: "/repos/kean/Get", method: .get, headers: [.ifNoneMatch: etag])
            #expect(dripped.status == .ok)
            #expect(dripped.body == real.body)
            #expect(dripped.headers[.contentLength] == String(real.body.readableBytes))
            #expect(try await client.execute(uri: "/repos/kean/Get", method: .get, headers: [.ifNoneMatch: etag]).status == .notModified)
        }
    }

    @Test("Latency waits before the route answers (a cancelled request never gets there); other paths do not wait")
    func latencyMiddlewareWaitsBeforeTheRoute() async throws {
        try await withRouter { simulator, client in
            await simulator.setLatency(route: "/v0/item", milliseconds: 60_000)
            // Cancelled before it starts: the latency's sleep throws instead of waiting a minute,
            // so the route is never reached (the router framework answers 500 for the error).
            let delayed = Task { try await client.execute(uri: "/v0/item/0.json", method: .get) }
            delayed.cancel()
            let cut = try await delayed.value
            #expect(cut.status == .internalServerError)
            let undelayed = Task { try await client.execute(uri: "/v0/user/nobody.json", method: .get) }
            undelayed.cancel()
            #expect(try await undelayed.value.status == .ok)

            let log = await simulator.requestLog()
            #expect(log.map(\.path) == ["/v0/item/0.json", "/v0/user/nobody.json"])
            #expect(log.first?.aborted == true)
            #expect(log.first?.status == 0)
            #expect(log.last?.finished == true)
        }
    }

    @Test("The request log records method, target, headers, status and bytes of recorded requests")
    func requestLogMiddlewareRecords() async throws {
        try await withRouter { simulator, client in
            let response = try await client.execute(
                uri: "/users/octocat?x=1", method: .get, headers: [.init("X-Test")!: "a", .accept: "application/json"])
            let log = await simulator.requestLog()
            #expect(log.count == 1)
            let entry = try #require(log.first)
            #expect(entry.method == "GET")
            #expect(entry.path == "/users/octocat?x=1")
            #expect(entry.headers["x-test"] == "a")
            #expect(entry.headers["accept"] == "application/json")
            #expect(entry.headers["host"] == "localhost")
            #expect(entry.status == 200)
            #expect(entry.finished && !entry.aborted)
            #expect(entry.bytesSent == response.body.readableBytes)
            #expect(await simulator.stats() == SimulatorStats(requests: 1, inFlight: 0, maxInFlight: 1))
        }
    }
}
