import Foundation
import FreshetSimulator
import FreshetTestSupport
import Testing

/// The CLI through a real forward proxy (tinyproxy on 127.0.0.1) named by the environment:
/// `freshet feed` with `HTTP_PROXY`, `NO_PROXY`, a dead proxy and a malformed variable, and
/// `freshet proxy`'s origin connections.
@Suite("Forward proxies from the environment, end to end")
struct ForwardProxyCLITests {
    @Test("freshet feed with HTTP_PROXY: every request goes through the proxy, which the simulator sees arrive")
    func feedThroughProxy() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            let port = cli.sim.baseURL.port!
            try await withTinyproxy { proxy in
                let result = try await cli.run(["feed", "--limit", "5", "-v"], environment: ["HTTP_PROXY": proxy.url])
                #expect(result.status == 0, "\(result.stderr)")
                #expect(result.stdout.split(separator: "\n").count == 5)
                let path = "/repos/ReactiveX/RxSwift/events?per_page=100"
                #expect(proxy.requests == ["GET http://127.0.0.1:\(port)\(path) HTTP/1.1"], "\(proxy.log)")
                let log = try await control.log()
                #expect(log.map(\.path) == [path])
                #expect(log.first?.status == 200)

                // NO_PROXY lists the simulator: reached directly, the proxy sees nothing more.
                let direct = try await cli.run(["feed", "--limit", "5", "--refresh"],
                                               environment: ["HTTP_PROXY": proxy.url, "NO_PROXY": "127.0.0.1"])
                #expect(direct.status == 0, "\(direct.stderr)")
                #expect(try await control.log().count == 2)
                #expect(proxy.requests.count == 1, "\(proxy.log)")
            }
        }
    }

    @Test("A proxy that refuses connections is named in the error (without its password); a malformed one stops the command")
    func deadAndMalformedProxy() async throws {
        try await withFreshetCLI { cli in
            let dead = try await closedLoopbackURL()
            let result = try await cli.run(["feed", "--limit", "5"],
                                           environment: ["HTTP_PROXY": "http://user:hunter2@127.0.0.1:\(dead.port!)"])
            #expect(result.status == 2, "\(result.stdout)")
            #expect(result.stderr.contains("the proxy http://127.0.0.1:\(dead.port!) refused the connection"), "\(result.stderr)")
            #expect(!result.stderr.contains("hunter2"))
            #expect(try await SimControl(cli.sim).log().isEmpty)

            let malformed = try await cli.run(["feed", "--limit", "5"], environment: ["https_proxy": "http://user:hunter2@proxy:http"])
            #expect(malformed.status == 1)
            #expect(malformed.stderr.contains("https_proxy: \"http://***@proxy:http\": the port must be a number"), "\(malformed.stderr)")
            #expect(!malformed.stderr.contains("hunter2"))
        }
    }

    @Test("freshet proxy: its connections to the origin go through HTTP_PROXY")
    func reverseProxyOriginThroughForwardProxy() async throws {
        let executable = try #require(builtProduct("freshet"), "the freshet executable was not built")
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            let port = cli.sim.baseURL.port!
            try await withTinyproxy { proxy in
                let arguments = ["proxy", "--origin", cli.sim.baseURL.absoluteString, "--listen", "127.0.0.1:0"]
                let environment = cli.baseEnvironment.merging(["HTTP_PROXY": proxy.url]) { $1 }
                try await withRunningProcess(executable, arguments, environment: environment) { child in
                    let base = String(child.firstLine.dropFirst("listening on ".count))
                    let response = try await curl([base + "/repos/ReactiveX/RxSwift"])
                    #expect(response.status == 200, "\(response.body)")
                    #expect(proxy.requests == ["GET http://127.0.0.1:\(port)/repos/ReactiveX/RxSwift HTTP/1.1"], "\(proxy.log)")
                    #expect(try await control.log().map(\.path) == ["/repos/ReactiveX/RxSwift"])
                }
            }
        }
    }
}
