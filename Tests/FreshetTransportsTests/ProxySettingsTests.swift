import Foundation
import FreshetTransports
import Testing

/// Reading forward proxies from the environment as curl does, and `NO_PROXY`'s matching.
@Suite("Proxy settings from the environment")
struct ProxySettingsTests {
    static func proxy(_ settings: ProxySettings, _ url: String) throws -> String? {
        try settings.proxy(for: URL(string: url)!)?.description
    }

    @Test("HTTP_PROXY for http, HTTPS_PROXY for https, ALL_PROXY for either when its own is unset")
    func perScheme() throws {
        let settings = try ProxySettings.fromEnvironment([
            "HTTP_PROXY": "http://web:3128", "HTTPS_PROXY": "secure:8443", "ALL_PROXY": "socks5://all:1080",
        ])
        #expect(try Self.proxy(settings, "http://example.com/a") == "http://web:3128")
        #expect(try Self.proxy(settings, "https://example.com/a") == "http://secure:8443", "no scheme: http")
        let onlyAll = try ProxySettings.fromEnvironment(["ALL_PROXY": "socks5h://all"])
        #expect(try Self.proxy(onlyAll, "http://example.com") == "socks5://all:1080", "no port: 1080, as curl")
        #expect(try Self.proxy(onlyAll, "https://example.com") == "socks5://all:1080")
        #expect(try ProxySettings.fromEnvironment([:]).isDirect)
        #expect(try Self.proxy(ProxySettings.fromEnvironment([:]), "https://example.com") == nil)
    }

    @Test("The lowercase name wins over the uppercase one; an empty value counts as unset")
    func lowercaseWins() throws {
        let settings = try ProxySettings.fromEnvironment([
            "http_proxy": "http://lower:1", "HTTP_PROXY": "http://upper:2",
            "https_proxy": "", "HTTPS_PROXY": "http://upper:3",
            "no_proxy": "lower.example", "NO_PROXY": "upper.example",
        ])
        #expect(try Self.proxy(settings, "http://example.com") == "http://lower:1")
        #expect(try Self.proxy(settings, "https://example.com") == "http://upper:3")
        #expect(try Self.proxy(settings, "http://lower.example") == nil)
        #expect(try Self.proxy(settings, "http://upper.example") == "http://lower:1")
    }

    @Test("Uppercase HTTP_PROXY is ignored in a CGI program (httpoxy); lowercase and HTTPS_PROXY are not")
    func httpoxy() throws {
        let cgi = try ProxySettings.fromEnvironment(["REQUEST_METHOD": "GET", "HTTP_PROXY": "http://attacker:80",
                                                     "HTTPS_PROXY": "http://ok:1"])
        #expect(try Self.proxy(cgi, "http://example.com") == nil)
        #expect(try Self.proxy(cgi, "https://example.com") == "http://ok:1")
        let lower = try ProxySettings.fromEnvironment(["REQUEST_METHOD": "GET", "http_proxy": "http://mine:1"])
        #expect(try Self.proxy(lower, "http://example.com") == "http://mine:1")
    }

    @Test("Credentials: percent-decoded, sent as Basic, never in a description")
    func credentials() throws {
        let proxy = try ForwardProxy(url: "http://al%40ice:p%3Ass@proxy.internal:3128/")
        #expect(proxy.credentials?.user == "al@ice")
        #expect(proxy.credentials?.password == "p:ss")
        #expect(proxy.description == "http://proxy.internal:3128")
        #expect(String(reflecting: proxy) == "http://proxy.internal:3128")
        #expect(!String(describing: proxy.credentials!).contains("p:ss"))
        var dumped = ""
        dump(proxy, to: &dumped)
        #expect(!dumped.contains("p:ss"), "\(dumped)")
        let settings = try ProxySettings.fromEnvironment(["HTTPS_PROXY": "http://u:hunter2@[::1]:8080"])
        #expect(settings.https?.host == "::1")
        #expect(settings.description == "https: http://[::1]:8080")
    }

    @Test("A malformed value is an error naming the variable, never showing the password")
    func malformed() throws {
        let cases: [([String: String], String)] = [
            (["HTTPS_PROXY": "http://u:hunter2@proxy:notaport"], "HTTPS_PROXY: \"http://***@proxy:notaport\": the port must be a number from 1 to 65535"),
            (["http_proxy": "https://u:hunter2@proxy:443"], "http_proxy: \"https://***@proxy:443\": https:// proxies (TLS to the proxy) are not supported"),
            (["ALL_PROXY": "socks4://proxy"], "ALL_PROXY: \"socks4://proxy\": the proxy scheme socks4 is not supported"),
            (["ALL_PROXY": "socks5://u:hunter2@proxy"], "ALL_PROXY: \"socks5://***@proxy\": SOCKS5 proxies with a user name and password are not supported"),
            (["HTTP_PROXY": "http://:1"], "HTTP_PROXY: \"http://:1\": no proxy host name"),
            (["NO_PROXY": "10.0.0.0/33"], "NO_PROXY: the entry \"10.0.0.0/33\" has a CIDR prefix length above 32"),
            (["no_proxy": "example.com:http"], "no_proxy: the entry \"example.com:http\" has a port that is not a number from 1 to 65535"),
        ]
        for (environment, message) in cases {
            let error = #expect(throws: ProxySettings.ConfigurationError.self) {
                _ = try ProxySettings.fromEnvironment(environment)
            }
            #expect(error?.description.hasPrefix(message) == true, "\(String(describing: error))")
            #expect(error?.description.contains("hunter2") == false)
        }
    }

    @Test("NO_PROXY: *, exact hosts, domain suffixes with or without a dot, IPs, CIDR ranges, ports")
    func noProxy() throws {
        let rules = try NoProxy("example.com, .corp.internal  10.1.2.3,192.168.0.0/16,[::1]:8443, fd00::/8, Api.Other.ORG.:8080,*.wild.test")
        let cases: [(host: String, port: Int, bypass: Bool)] = [
            ("example.com", 443, true), ("www.example.com", 80, true), ("EXAMPLE.COM.", 80, true),
            ("notexample.com", 80, false), ("example.com.evil", 80, false),
            ("corp.internal", 80, true), ("a.b.corp.internal", 80, true),
            ("10.1.2.3", 80, true), ("10.1.2.4", 80, false),
            ("192.168.7.9", 80, true), ("192.169.0.1", 80, false),
            ("::1", 8443, true), ("[::1]", 8443, true), ("::1", 443, false),
            ("fd12:3456::1", 80, true), ("fe80::1", 80, false),
            ("api.other.org", 8080, true), ("api.other.org", 443, false),
            ("x.wild.test", 80, true), ("wild.test", 80, true),
            // Loopback is not special.
            ("127.0.0.1", 80, false), ("localhost", 80, false),
        ]
        for (host, port, bypass) in cases {
            #expect(rules.matches(host: host, port: port) == bypass, "\(host):\(port)")
        }
        #expect(try NoProxy("*").matches(host: "anything", port: 1))
        #expect(try NoProxy("").rules.isEmpty)
        #expect(try ProxySettings.fromEnvironment(["HTTP_PROXY": "p:1", "NO_PROXY": "*"]).isDirect)
    }

    @Test("NO_PROXY applies per URL: host and port, whatever the proxy")
    func perURL() throws {
        let settings = try ProxySettings.fromEnvironment([
            "ALL_PROXY": "http://proxy:3128", "NO_PROXY": "127.0.0.1:8080,internal",
        ])
        #expect(try Self.proxy(settings, "http://127.0.0.1:8080/x") == nil)
        #expect(try Self.proxy(settings, "http://127.0.0.1:9090/x") == "http://proxy:3128")
        #expect(try Self.proxy(settings, "https://api.internal/x") == nil)
        #expect(try Self.proxy(settings, "https://internal.example/x") == "http://proxy:3128")
    }
}
