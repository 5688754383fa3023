import Foundation
import FreshetSimulator
import FreshetTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An HTTP exchange as curl saw it.
struct CurlResponse {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: String

    /// Every value of the field `name` (case-insensitive), in order.
    func values(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    /// The value of `name` (several lines joined with ", ").
    func header(_ name: String) -> String? {
        let found = values(name)
        return found.isEmpty ? nil : found.joined(separator: ", ")
    }
}

struct CurlFailed: Error, CustomStringConvertible {
    var description: String
}

/// Runs curl (no proxy from the environment, no `Expect: 100-continue`) and parses `-i` output.
func curl(_ arguments: [String]) async throws -> CurlResponse {
    let executable = URL(fileURLWithPath: "/usr/bin/curl")
    guard FileManager.default.isExecutableFile(atPath: executable.path) else {
        throw CurlFailed(description: "the proxy tests drive /usr/bin/curl, which is not installed (.ci/run installs it)")
    }
    let result = try await runProcess(
        executable, ["-sS", "-i", "--noproxy", "*", "-H", "Expect:", "--max-time", "30"] + arguments, timeout: 40)
    guard result.status == 0 else { throw CurlFailed(description: "curl \(arguments) failed (\(result.status)): \(result.stderr)") }
    let text = result.stdout
    guard let split = text.range(of: "\r\n\r\n") else {
        throw CurlFailed(description: "no header section in curl's output: \(text.prefix(500))")
    }
    var lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
    let statusLine = lines.removeFirst().split(separator: " ")
    guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
        throw CurlFailed(description: "bad status line in \(text.prefix(200))")
    }
    let headers = lines.compactMap { line -> (String, String)? in
        guard let colon = line.firstIndex(of: ":") else { return nil }
        return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
    }
    return CurlResponse(status: status, headers: headers, body: String(text[split.upperBound...]))
}

/// Starts `freshet proxy --origin <sim> --listen 127.0.0.1:0 EXTRA…` with the CLI's FRESHET_HOME
/// and hands `body` the child and the proxy's base URL (`http://127.0.0.1:PORT`).
func withProxy<T: Sendable>(
    _ cli: FreshetCLI, _ extra: [String] = [], origin: String? = nil,
    _ body: (RunningProcess, String) async throws -> T
) async throws -> T {
    let executable = try #require(builtProduct("freshet"), "the freshet executable was not built")
    let arguments = ["proxy", "--origin", origin ?? cli.sim.baseURL.absoluteString, "--listen", "127.0.0.1:0"] + extra
    return try await withRunningProcess(executable, arguments, environment: cli.baseEnvironment) { child in
        let prefix = "listening on "
        #expect(child.firstLine.hasPrefix("listening on http://127.0.0.1:"), "\(child.firstLine)")
        let base = String(child.firstLine.dropFirst(prefix.count))
        #expect(URL(string: base)?.port.map { $0 > 0 } == true)
        return try await body(child, base)
    }
}

/// The simulator's log entries for `path`.
func entries(_ control: SimControl, _ path: String) async throws -> [SimLogEntry] {
    try await control.log().filter { $0.path == path }
}

@Suite("freshet proxy, end to end")
struct ProxyTests {
    @Test("A fresh response is served from the cache without an origin request, with Age, Via and X-Cache")
    func hitWithoutOriginRequest() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            try await control.script("hit", headers: [("Cache-Control", "max-age=300"), ("ETag", "\"h1\""),
                                                      ("Content-Type", "application/json")], body: #"{"n":1}"#)
            try await withProxy(cli) { _, base in
                let first = try await curl([base + "/scripted/hit"])
                #expect(first.status == 200)
                #expect(first.body == #"{"n":1}"#)
                #expect(first.header("X-Cache") == "MISS")
                #expect(first.values("Via").contains("1.1 freshet"))
                #expect(first.header("Content-Type") == "application/json")
                #expect(try await entries(control, "/scripted/hit").count == 1)

                let second = try await curl([base + "/scripted/hit"])
                #expect(second.status == 200)
                #expect(second.body == #"{"n":1}"#)
                #expect(second.header("X-Cache") == "HIT")
                let age = try #require(second.header("Age"), "a hit carries Age")
                #expect(Int(age).map { $0 >= 0 } == true, "Age is delta-seconds: \(age)")
                #expect(second.values("Via").contains("1.1 freshet"))
                #expect(second.header("ETag") == "\"h1\"")
                #expect(second.header("Date") != nil)
                for response in [first, second] {
                    let leaked = response.headers.filter { $0.name.lowercased().hasPrefix("freshet-") }
                    #expect(leaked.isEmpty, "internal fields leaked: \(leaked)")
                }
                #expect(try await entries(control, "/scripted/hit").count == 1, "the hit made no origin request")
            }
        }
    }

    @Test("A stale response is revalidated with If-None-Match; the origin's 304 reaches the client as 200 with the body")
    func revalidation() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            try await control.script("reval", headers: [("Cache-Control", "no-cache"), ("ETag", "\"r1\"")], body: "stored body")
            try await withProxy(cli) { _, base in
                let first = try await curl([base + "/scripted/reval"])
                #expect(first.status == 200)
                #expect(first.header("X-Cache") == "MISS")

                let second = try await curl([base + "/scripted/reval"])
                #expect(second.status == 200)
                #expect(second.body == "stored body")
                #expect(second.header("X-Cache") == "REVALIDATED")
                #expect(second.header("ETag") == "\"r1\"")

                let log = try await entries(control, "/scripted/reval")
                #expect(log.count == 2)
                #expect(log.first?.headers["if-none-match"] == nil)
                #expect(log.last?.headers["if-none-match"] == "\"r1\"")
                #expect(log.last?.status == 304)
            }
        }
    }

    @Test("A client's validators: 304 from a fresh stored response without an origin request, else forwarded as sent")
    func clientValidation() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            let lastModified = "Sat, 01 Jan 2022 00:00:00 GMT"
            try await control.script("cond", headers: [
                ("Cache-Control", "max-age=300"), ("ETag", "\"c1\""), ("Last-Modified", lastModified),
            ], body: "conditional")
            try await withProxy(cli) { _, base in
                let url = base + "/scripted/cond"
                let forwarded = try await curl([url, "-H", "If-None-Match: \"c1\""])
                #expect(forwarded.status == 304, "nothing stored: the origin answers the client's validators")
                var log = try await entries(control, "/scripted/cond")
                #expect(log.count == 1)
                #expect(log.last?.headers["if-none-match"] == "\"c1\"")
                #expect(log.last?.status == 304)

                #expect(try await curl([url]).header("X-Cache") == "MISS")
                let local = try await curl([url, "-H", "If-None-Match: W/\"x\", \"c1\""])
                #expect(local.status == 304)
                #expect(local.body.isEmpty)
                #expect(local.header("ETag") == "\"c1\"")
                #expect(local.header("X-Cache") == "HIT")
                let byDate = try await curl([url, "-H", "If-Modified-Since: \(lastModified)"])
                #expect(byDate.status == 304)
                let changed = try await curl([url, "-H", "If-None-Match: \"c0\""])
                #expect(changed.status == 200)
                #expect(changed.body == "conditional")
                #expect(changed.header("X-Cache") == "HIT")
                log = try await entries(control, "/scripted/cond")
                #expect(log.count == 2, "the stored response answered every later validation request")
            }
        }
    }

    @Test("Request Cache-Control reaches the cache: no-cache revalidates, only-if-cached answers from the store")
    func requestDirectives() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            try await control.script("directives", headers: [("Cache-Control", "max-age=300"), ("ETag", "\"d1\"")], body: "d")
            try await withProxy(cli) { _, base in
                #expect(try await curl([base + "/scripted/directives", "-H", "Cache-Control: only-if-cached"]).status == 504)
                #expect(try await curl([base + "/scripted/directives"]).header("X-Cache") == "MISS")
                let reload = try await curl([base + "/scripted/directives", "-H", "Cache-Control: no-cache"])
                #expect(reload.header("X-Cache") == "REVALIDATED")
                #expect(reload.body == "d")
                let cached = try await curl([base + "/scripted/directives", "-H", "Cache-Control: only-if-cached"])
                #expect(cached.status == 200)
                #expect(cached.header("X-Cache") == "HIT")
                let log = try await entries(control, "/scripted/directives")
                #expect(log.count == 2, "only-if-cached never reaches the origin")
                #expect(log.last?.headers["if-none-match"] == "\"d1\"")
            }
        }
    }

    @Test("A POST invalidates the stored response; PUT, PATCH, DELETE, OPTIONS and HEAD are forwarded with their bodies")
    func unsafeMethods() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            try await control.script("inv", headers: [("Cache-Control", "max-age=300")], body: "v1")
            try await withProxy(cli) { _, base in
                let url = base + "/scripted/inv"
                #expect(try await curl([url]).header("X-Cache") == "MISS")
                #expect(try await curl([url]).header("X-Cache") == "HIT")
                let post = try await curl([url, "-X", "POST", "-H", "Content-Type: application/json", "--data", #"{"a":1}"#])
                #expect(post.status == 200)
                let afterPost = try await curl([url])
                #expect(afterPost.header("X-Cache") == "MISS", "the POST invalidated the stored response")
                #expect(afterPost.body == "v1")

                let head = try await curl([url, "-I"])
                #expect(head.status == 200)
                #expect(head.header("X-Cache") == "HIT")
                #expect(head.header("Content-Length") == "2")
                #expect(head.body.isEmpty)
                for method in ["PUT", "PATCH", "DELETE", "OPTIONS"] {
                    #expect(try await curl([url, "-X", method, "--data", "body-\(method)"]).status == 200)
                }

                let log = try await entries(control, "/scripted/inv")
                #expect(log.map(\.method) == ["GET", "POST", "GET", "PUT", "PATCH", "DELETE", "OPTIONS"],
                        "HEAD was answered from the store")
                let post0 = try #require(log.first { $0.method == "POST" })
                #expect(post0.headers["content-length"] == "7")
                #expect(post0.headers["content-type"] == "application/json")
                let put = try #require(log.first { $0.method == "PUT" })
                #expect(put.headers["content-length"] == "8")
            }
        }
    }

    @Test("Hop-by-hop fields are dropped both ways; end-to-end fields and repeated lines pass; Host names the origin")
    func hopByHop() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            try await control.script("hop", headers: [
                ("Cache-Control", "max-age=300"), ("Connection", "X-Resp-Hop"), ("X-Resp-Hop", "secret"),
                ("Keep-Alive", "timeout=9"), ("Proxy-Authenticate", "Basic"), ("X-Resp-End", "kept"),
                ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"),
            ], body: "hop")
            try await withProxy(cli) { _, base in
                let response = try await curl([
                    base + "/scripted/hop", "-H", "Connection: keep-alive, X-Req-Hop", "-H", "X-Req-Hop: secret",
                    "-H", "Keep-Alive: timeout=5", "-H", "Proxy-Authorization: Basic c2VjcmV0", "-H", "TE: trailers",
                    "-H", "X-Req-End: kept",
                ])
                #expect(response.status == 200)
                let sent = try #require(try await entries(control, "/scripted/hop").first)
                for name in ["x-req-hop", "keep-alive", "proxy-authorization", "te", "connection"] {
                    #expect(sent.headers[name] == nil, "\(name) reached the origin")
                }
                #expect(sent.headers["x-req-end"] == "kept")
                #expect(sent.headers["via"] == "1.1 freshet")
                #expect(sent.headers["host"] == "127.0.0.1:\(cli.sim.port)")

                let hit = try await curl([base + "/scripted/hop"])
                #expect(hit.header("X-Cache") == "HIT")
                for answer in [response, hit] {
                    for name in ["X-Resp-Hop", "Keep-Alive", "Proxy-Authenticate"] {
                        #expect(answer.header(name) == nil, "\(name) reached the client")
                    }
                    #expect(answer.header("Connection")?.lowercased().contains("x-resp-hop") != true)
                    #expect(answer.header("X-Resp-End") == "kept")
                }
                #expect(response.values("Set-Cookie") == ["a=1", "b=2"], "every line of a repeated field")
                #expect(hit.values("Set-Cookie") == ["a=1", "b=2"], "stored and replayed (RFC 9111 §7.3), every line")
            }
        }
    }

    @Test("--log prints one line per request: method, path, status, cache outcome, duration")
    func logLines() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            try await control.script("logged", headers: [("Cache-Control", "max-age=300"), ("ETag", "\"l\"")], body: "x")
            try await withProxy(cli, ["--log"]) { child, base in
                _ = try await curl([base + "/scripted/logged?page=2"])
                _ = try await curl([base + "/scripted/logged?page=2"])
                _ = try await curl([base + "/scripted/logged?page=2", "-H", "Cache-Control: no-cache"])
                let complete = await eventually { child.stderr.split(separator: "\n").count >= 3 }
                #expect(complete, "stderr: \(child.stderr)")
                let lines = child.stderr.split(separator: "\n").map(String.init)
                let pattern = /^GET \/scripted\/logged\?page=2 200 (hit|miss|revalidated|stale) [0-9]+\.[0-9]ms$/
                #expect(lines.count == 3, "\(lines)")
                #expect(lines.allSatisfy { $0.wholeMatch(of: pattern) != nil }, "\(lines)")
                #expect(lines.map { $0.split(separator: " ")[3] } == ["miss", "hit", "revalidated"])
                #expect(child.stdout.isEmpty, "stdout holds only the listening line")
            }
        }
    }

    @Test("Rate limits: the origin's 403 passes unchanged, then the spent budget is refused locally with 429; hits still served")
    func rateLimitGate() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            try await withProxy(cli) { _, base in
                #expect(try await curl([base + "/repos/ReactiveX/RxSwift"]).header("X-Cache") == "MISS")
                try await control.post("ratelimit", ["resource": "core", "remaining": 0])
                let refused = try await curl([base + "/users/octocat"])
                #expect(refused.status == 403, "the origin's own refusal reaches the client")
                #expect(refused.header("X-RateLimit-Remaining") == "0")
                #expect(refused.body.contains("rate limit"))

                let local = try await curl([base + "/users/torvalds"])
                #expect(local.status == 429)
                #expect(Int(local.header("Retry-After") ?? "").map { $0 > 0 } == true)
                #expect(local.body.contains("no request was sent"))
                #expect(try await entries(control, "/users/torvalds").isEmpty)

                let hit = try await curl([base + "/repos/ReactiveX/RxSwift"])
                #expect(hit.status == 200)
                #expect(hit.header("X-Cache") == "HIT", "a fresh stored response needs no budget")
            }
        }
    }

    @Test("Bodies larger than the cache's entry limit stream through whole and unstored; chunked bodies stream")
    func largeBodyStreams() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            let big = String(repeating: "0123456789", count: 30_000)
            try await control.script("big", headers: [("Cache-Control", "max-age=300")], body: big)
            try await withProxy(cli, ["--max-entry-bytes", "100000"]) { _, base in
                for _ in 0..<2 {
                    let response = try await curl([base + "/scripted/big"])
                    #expect(response.status == 200)
                    #expect(response.header("X-Cache") == "MISS")
                    #expect(response.body == big)
                }
                #expect(try await entries(control, "/scripted/big").count == 2, "too large to store")

                let size = 3_000_000
                let result = try await runProcess(URL(fileURLWithPath: "/usr/bin/curl"), [
                    "-sS", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code} %{size_download}",
                    "\(base)/_sim/bytes?size=\(size)&chunked=1",
                ], timeout: 60)
                #expect(result.status == 0, "\(result.stderr)")
                #expect(result.stdout == "200 \(size)")
            }
        }
    }

    @Test("Bad flags and a taken port: one clear line on stderr, exit 1, nothing on stdout")
    func badInput() async throws {
        try await withFreshetCLI { cli in
            let origin = cli.sim.baseURL.absoluteString
            let cases: [([String], String)] = [
                (["proxy", "--origin", "notaurl"], "--origin must be an http(s) URL"),
                (["proxy", "--origin", "ftp://example.com"], "--origin must be an http(s) URL"),
                (["proxy", "--origin", origin, "--listen", "abc"], "--listen must be HOST:PORT"),
                (["proxy", "--origin", origin, "--listen", "127.0.0.1:99999"], "--listen must be HOST:PORT"),
                (["proxy"], "Missing expected argument '--origin <origin>'"),
                (["proxy", "--origin", origin, "--serve-stale", "5xx,sometimes"], "--serve-stale takes a comma-separated list"),
                (["proxy", "--origin", origin, "--partition", "user"], "--partition"),
                (["proxy", "--origin", origin, "--private", "--partition", "credential"], "--partition credential is for a shared cache"),
                (["proxy", "--origin", origin, "--revalidate", "sometimes"], "--revalidate"),
                (["proxy", "--origin", origin, "--public-url", "ghproxy"], "--public-url must be an http(s) URL"),
                (["proxy", "--origin", origin, "--store-size", "0"], "--store-size must be between 1 and 1048576"),
            ]
            for (arguments, message) in cases {
                let result = try await cli.run(arguments, timeout: 30)
                #expect(result.status == 1, "\(arguments)")
                #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
                #expect(result.stdout.isEmpty, "\(arguments)")
            }
            try await withProxy(cli) { _, base in
                let port = try #require(URL(string: base)?.port)
                let taken = try await cli.run(["proxy", "--origin", origin, "--listen", "127.0.0.1:\(port)"], timeout: 30)
                #expect(taken.status == 1)
                #expect(taken.stderr.contains("could not serve on 127.0.0.1:\(port): Address already in use"), "\(taken.stderr)")
                #expect(taken.stderr.contains("0 for a free one"))
                #expect(taken.stdout.isEmpty)
            }
        }
    }

    @Test("An unreachable origin gives 502 and a silent one 504, with a plain-text body")
    func gatewayErrors() async throws {
        try await withFreshetCLI { cli in
            let closed = try await closedLoopbackURL()
            try await withProxy(cli, origin: closed.absoluteString) { _, base in
                let response = try await curl([base + "/anything"])
                #expect(response.status == 502)
                #expect(response.header("Content-Type")?.hasPrefix("text/plain") == true)
                #expect(response.body.contains("could not reach the origin"))
                #expect(response.header("X-Cache") == "MISS")
                #expect(response.header("Cache-Status") == "freshet; fwd=miss; detail=error")
            }
            let control = SimControl(cli.sim)
            try await control.script("slow", headers: [("Cache-Control", "max-age=300")], body: "late")
            // Held at the simulator until the proxy has given up on it.
            try await control.hold(route: "/scripted/slow")
            try await withProxy(cli, ["--timeout", "1"]) { _, base in
                let response = try await curl([base + "/scripted/slow"])
                try await control.release(route: "/scripted/slow")
                #expect(response.status == 504)
                #expect(response.body.contains("did not answer in time"))
                #expect(response.header("X-Cache") == "MISS")
            }
        }
    }

    @Test("SIGTERM: the request in flight finishes, the database is closed, exit status 0")
    func gracefulShutdown() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            try await control.script("inflight", headers: [("Cache-Control", "max-age=300")], body: "finished")
            // Held at the origin until the proxy's shutdown has begun: the request is in flight
            // across the SIGTERM however long anything takes.
            try await control.hold(route: "/scripted/inflight")
            try await withProxy(cli) { child, base in
                let port = try #require(URL(string: base)?.port)
                let request = Task { try await curl([base + "/scripted/inflight"]) }
                let arrived = await eventually { (try? await entries(control, "/scripted/inflight").isEmpty) == false }
                #expect(arrived, "the request reached the origin")
                child.signal(SIGTERM)
                // A graceful shutdown begins by accepting no new connection.
                let draining = await eventually { (try? RawClient(port: port)) == nil }
                #expect(draining, "the proxy stopped accepting connections")
                try await control.release(route: "/scripted/inflight")
                let response = try await request.value
                #expect(response.status == 200)
                #expect(response.body == "finished")
                let status = await child.waitForExit(timeout: 30)
                #expect(status == 0, "stderr: \(child.stderr)")
                #expect(child.stdout.isEmpty)
                // Its answer and counters reached the file, which the next process reads.
                let stats = try await cli.run("cache", "stats", "--json")
                let json = try #require(try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any])
                #expect(json["entries"] as? Int == 1)
                #expect(json["outcomes"] as? [String: Int] == ["miss": 1])
            }
        }
    }
}
