import Foundation
import Freshet
import FreshetTestSupport
import FreshetTransports
import HTTPTypes
import OpenAPIRuntime
import Testing

/// Both transports through a real forward proxy (tinyproxy, started per test on 127.0.0.1), with
/// its settings read from environment dictionaries as the CLI reads the process's: plain `http`
/// in absolute form, `https` through `CONNECT` to an origin whose root comes from
/// `SSL_CERT_FILE`, `NO_PROXY`, credentials, and a proxy that refuses connections.
@Suite("Forward proxies (tinyproxy)", .timeLimit(.minutes(2)))
struct ForwardProxyTests {
    /// The two ways a request is sent: the default transport (AsyncHTTPClient) and HTTP1Transport.
    enum Kind: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case asyncHTTPClient, http1
        var testDescription: String { rawValue }
    }

    /// A transport of `kind` with the proxies and trust the environment `environment` names.
    static func transport(_ kind: Kind, _ environment: [String: String]) throws -> any ClientTransport {
        let proxies = try ProxySettings.fromEnvironment(environment)
        let trust = try TLSTrust.fromEnvironment(environment) ?? .system
        switch kind {
        case .asyncHTTPClient:
            return Transports.asyncHTTPClient(timeout: .seconds(20), trust: trust, proxies: proxies)
        case .http1:
            return ClassifyingTransport(base: HTTP1Transport(
                headTimeout: .seconds(20),
                pool: HTTP1ConnectionPool(configuration: .init(trust: trust, proxies: proxies))))
        }
    }

    static func get(_ transport: any ClientTransport, _ base: URL, _ path: String) async throws -> (HTTPResponse, String) {
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: path)
        let (response, body) = try await transport.send(request, body: nil, baseURL: base, operationID: "proxy")
        return (response, try await String(collecting: try #require(body), upTo: 1 << 16))
    }

    /// An http origin answering `ok` to each of `count` requests.
    static func origin(_ count: Int = 1) throws -> RawOrigin {
        try RawOrigin(responses: Array(repeating: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", count: count))
    }

    @Test("HTTP_PROXY: a plain http request goes to the proxy in absolute form", arguments: Kind.allCases)
    func plainHTTP(kind: Kind) async throws {
        let origin = try Self.origin()
        defer { origin.stop() }
        let port = origin.url.port!
        try await withTinyproxy { proxy in
            let transport = try Self.transport(kind, ["HTTP_PROXY": proxy.url])
            let (response, body) = try await Self.get(transport, origin.url, "/feed?page=2")
            #expect(response.status.code == 200)
            #expect(body == "ok")
            #expect(proxy.requests == ["GET http://127.0.0.1:\(port)/feed?page=2 HTTP/1.1"], "\(proxy.log)")
            #expect(origin.received.map(\.requestLine) == ["GET /feed?page=2 HTTP/1.1"])
        }
    }

    @Test("HTTPS_PROXY: an https origin through CONNECT, its root from SSL_CERT_FILE", arguments: Kind.allCases)
    func httpsThroughConnect(kind: Kind) async throws {
        let certificates = try await TestCertificates.make()
        let rootFile = try certificates.writeRoot()
        try await withTLSOrigin(certificates) { origin in
            let port = origin.url.port!
            try await withTinyproxy(connectPorts: [port]) { proxy in
                let transport = try Self.transport(kind, ["HTTPS_PROXY": proxy.url, "SSL_CERT_FILE": rootFile])
                let (response, body) = try await Self.get(transport, origin.url, "/secure?x=1")
                #expect(response.status.code == 200)
                #expect(response.headerFields[.init("X-Request-Target")!] == "/secure?x=1")
                #expect(body == "secure")
                #expect(proxy.requests == ["CONNECT 127.0.0.1:\(port) HTTP/1.1"], "\(proxy.log)")
                // The origin counts a request after writing its answer, which may have arrived first.
                let counted = await eventually { origin.requests == 1 }
                #expect(counted)
            }
        }
    }

    @Test("NO_PROXY: a listed host:port is reached directly; the proxy sees nothing", arguments: Kind.allCases)
    func noProxyBypass(kind: Kind) async throws {
        let origin = try Self.origin(2)
        defer { origin.stop() }
        let port = origin.url.port!
        try await withTinyproxy { proxy in
            let environment = ["HTTP_PROXY": proxy.url, "NO_PROXY": "example.com, 127.0.0.1:\(port)"]
            let (response, _) = try await Self.get(try Self.transport(kind, environment), origin.url, "/direct")
            #expect(response.status.code == 200)
            #expect(origin.received.map(\.requestLine) == ["GET /direct HTTP/1.1"])
            // The same URL with another port in NO_PROXY goes through the proxy: loopback is not special.
            let other = ["HTTP_PROXY": proxy.url, "NO_PROXY": "127.0.0.1:\(port == 65_535 ? 1 : port + 1)"]
            _ = try await Self.get(try Self.transport(kind, other), origin.url, "/proxied")
            #expect(proxy.requests == ["GET http://127.0.0.1:\(port)/proxied HTTP/1.1"], "\(proxy.log)")
        }
    }

    @Test("A proxy that refuses connections: unreachable, naming the proxy without its password",
          arguments: Kind.allCases, ["http", "https"])
    func deadProxy(kind: Kind, scheme: String) async throws {
        let dead = try await closedLoopbackURL()
        let proxyURL = "http://user:hunter2@127.0.0.1:\(dead.port!)"
        let transport = try Self.transport(kind, ["HTTP_PROXY": proxyURL, "HTTPS_PROXY": proxyURL])
        // Nothing listens at the origin either: only the proxy is connected to.
        let origin = URL(string: "\(scheme)://origin.invalid:8443")!
        let failure = await #expect(throws: TransportFailure.self) {
            _ = try await Self.get(transport, origin, "/")
        }
        #expect(failure?.kind == .unreachable, "\(String(describing: failure))")
        #expect(failure?.reason == "the proxy http://127.0.0.1:\(dead.port!) refused the connection")
        // As a person sees it.
        let shown = APIError.wrapping(try #require(failure), url: origin).description
        #expect(shown.contains("the proxy http://127.0.0.1:\(dead.port!) refused the connection"), "\(shown)")
        #expect(!shown.contains("hunter2"))
    }

    @Test("Credentials in the proxy URL: Proxy-Authorization to the proxy only; a wrong password is a 407 naming the proxy",
          arguments: Kind.allCases)
    func credentials(kind: Kind) async throws {
        let certificates = try await TestCertificates.make()
        let rootFile = try certificates.writeRoot()
        let origin = try Self.origin()
        defer { origin.stop() }
        try await withTLSOrigin(certificates) { secure in
            try await withTinyproxy(credentials: (user: "alice", password: "s3cret")) { proxy in
                let environment = ["HTTP_PROXY": proxy.url(), "HTTPS_PROXY": proxy.url(), "SSL_CERT_FILE": rootFile]
                let transport = try Self.transport(kind, environment)
                #expect(try await Self.get(transport, origin.url, "/plain").1 == "ok")
                #expect(try await Self.get(transport, secure.url, "/tunnel").1 == "secure")
                #expect(proxy.requests == ["GET http://127.0.0.1:\(origin.url.port!)/plain HTTP/1.1",
                                           "CONNECT 127.0.0.1:\(secure.url.port!) HTTP/1.1"], "\(proxy.log)")
                let received = try #require(origin.received.first)
                #expect(received.values("Proxy-Authorization").isEmpty, "the proxy's credentials stay with the proxy")

                // Without credentials tinyproxy answers 407: a ForwardProxyFailure, for a request and a tunnel alike.
                let anonymous = try Self.transport(kind, ["HTTP_PROXY": proxy.url, "HTTPS_PROXY": proxy.url, "SSL_CERT_FILE": rootFile])
                for (base, tunnel) in [(origin.url, false), (secure.url, true)] {
                    let failure = await #expect(throws: ForwardProxyFailure.self) {
                        _ = try await Self.get(anonymous, base, "/x")
                    }
                    #expect(failure?.status == 407)
                    #expect(failure?.description
                        == "the proxy http://127.0.0.1:\(proxy.port) refused the \(tunnel ? "tunnel to" : "request for") 127.0.0.1:\(base.port!): "
                        + "407 Proxy Authentication Required (it asks for credentials: put them in the proxy URL, http://USER:PASSWORD@HOST:PORT)",
                        "\(String(describing: failure))")
                }

                // With a wrong password tinyproxy answers 401 (not 407), which only a tunnel can tell
                // apart from the origin's own 401: the tunnel fails naming the proxy, the request gets the 401.
                let wrong = ["HTTP_PROXY": proxy.url(password: "wrong"), "HTTPS_PROXY": proxy.url(password: "wrong"),
                             "SSL_CERT_FILE": rootFile]
                let refused = try Self.transport(kind, wrong)
                let failure = await #expect(throws: ForwardProxyFailure.self) {
                    _ = try await Self.get(refused, secure.url, "/x")
                }
                #expect(failure?.description.hasPrefix(
                    "the proxy http://127.0.0.1:\(proxy.port) refused the tunnel to 127.0.0.1:\(secure.url.port!)") == true,
                    "\(String(describing: failure))")
                #expect(failure?.description.contains("wrong") == false)
                #expect(try await Self.get(refused, origin.url, "/x").0.status.code == 401)
                #expect(origin.received.count == 1, "only the request with the right credentials reached the origin")
                let counted = await eventually { secure.requests == 1 }
                #expect(counted, "only the tunnel with the right credentials reached the origin")
            }
        }
    }
}

/// `ALL_PROXY=socks5://…` through a real SOCKS5 server: Debian's microsocks.
@Suite("Forward proxies: SOCKS5")
struct SOCKS5ProxyTests {
    static let microsocks = ["/usr/bin/microsocks", "/usr/local/bin/microsocks"].first { FileManager.default.isExecutableFile(atPath: $0) }

    @Test("ALL_PROXY=socks5://: the request goes through microsocks; with microsocks stopped it fails naming the proxy",
          arguments: ForwardProxyTests.Kind.allCases)
    func throughSOCKS5(kind: ForwardProxyTests.Kind) async throws {
        guard let microsocks = Self.microsocks else {
            Issue.record("microsocks is not installed (apt-get install microsocks; .ci/run installs it)")
            return
        }
        let origin = try ForwardProxyTests.origin(2)
        defer { origin.stop() }
        // A port the system handed out and that is free again; microsocks is given it (bounded retries).
        var started: (pid: pid_t, exit: OneShot<ChildExit>, port: Int)?
        for _ in 0..<10 where started == nil {
            let (fd, port) = try loopbackSocket()
            close(fd)
            guard let (pid, exit) = await spawnQuietly(URL(fileURLWithPath: microsocks), ["-i", "127.0.0.1", "-p", String(port)],
                                                       environment: [:]) else { break }
            let listening = await eventually(within: 10) {
                if exit.delivered != nil { return true }
                return Self.connects(port)
            }
            if listening && exit.delivered == nil { started = (pid, exit, port) } else { kill(pid, SIGKILL) }
        }
        let socks = try #require(started, "microsocks did not start")
        let proxyURL = "socks5://127.0.0.1:\(socks.port)"
        let transport = try ForwardProxyTests.transport(kind, ["ALL_PROXY": proxyURL])
        let (response, body) = try await ForwardProxyTests.get(transport, origin.url, "/through-socks")
        #expect(response.status.code == 200)
        #expect(body == "ok")
        #expect(origin.received.map(\.requestLine) == ["GET /through-socks HTTP/1.1"])

        kill(socks.pid, SIGTERM)
        let ended = await eventually(within: 10) { socks.exit.delivered != nil }
        #expect(ended)
        let fresh = try ForwardProxyTests.transport(kind, ["ALL_PROXY": proxyURL])
        await #expect {
            _ = try await ForwardProxyTests.get(fresh, origin.url, "/after-stop")
        } throws: { error in
            String(describing: error).contains("127.0.0.1:\(socks.port)")
        }
        #expect(origin.received.count == 1, "nothing reached the origin once the proxy was gone")
    }

    /// Whether a TCP connection to 127.0.0.1:`port` is accepted.
    static func connects(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
