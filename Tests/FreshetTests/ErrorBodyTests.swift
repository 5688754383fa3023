import Foundation
import Freshet
import GitHubAPI
import DaumSearchAPI
import FreshetSimulator
import FreshetTestSupport
import FreshetTransports
import FreshetURLSession
import HTTPTypes
import Testing
import OpenAPIRuntime

@Suite("Error bodies, redaction and transports")
struct ErrorBodyTests {
    @Test("Each service's reader finds the API's own message in its error shapes", arguments: [
        (#"{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}"#, "generic", "Not Found"),
        (#"{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}"#, "github", "Not Found"),
        (#"{"message":"Validation Failed","errors":[{"resource":"Search","field":"q","code":"missing"}]}"#, "github",
         "Validation Failed: Search q missing"),
        (#"{"message":"Validation Failed","errors":[{"resource":"Search","field":"q","code":"missing"}]}"#, "generic",
         "Validation Failed"),
        (#"{"errorType":"AccessDeniedError","message":"wrong appKey(null) format"}"#, "kakao", "wrong appKey(null) format (AccessDeniedError)"),
        (#"{"code":-401,"msg":"invalid appkey"}"#, "kakao", "invalid appkey"),
    ])
    func apiMessage(body: String, reader: String, message: String) {
        #expect(Self.reader(reader).message(in: Data(body.utf8)) == message)
    }

    static func reader(_ name: String) -> any ErrorBodyReader {
        switch name {
        case "github": GitHubErrorBody()
        case "kakao": KakaoErrorBodyReader()
        default: JSONMessageErrorBody()
        }
    }

    @Test(arguments: ["generic", "github", "kakao"])
    func noMessageInNonJSONBodies(reader: String) {
        for body in ["<html>502</html>", "", "[1,2]", #"{"code":-1}"#] {
            #expect(Self.reader(reader).message(in: Data(body.utf8)) == nil, "\(reader): \(body)")
        }
    }

    @Test func secretsAreRedactedFromURLs() throws {
        let url = try #require(URL(string: "https://user:pw@example.com/a?access_token=s3cret&page=2&API_KEY=k"))
        let shown = Redaction.redact(url)
        #expect(!shown.contains("s3cret"))
        #expect(!shown.contains("pw"))
        #expect(!shown.contains("=k"))
        #expect(shown.contains("page=2"))
    }

    @Test func secretHeadersAreRedacted() {
        let fields: HTTPFields = [.authorization: "Bearer ghp_secret", .accept: "application/json"]
        let shown = Redaction.redact(fields)
        #expect(shown[.authorization] == "REDACTED")
        #expect(shown[.accept] == "application/json")
    }

    @Test func aRedactedURLAppearsInErrorsNotTheToken() async throws {
        let transport = ClosureTransport { _, _, _ in
            (HTTPResponse(status: .notFound), .init(#"{"message":"Not Found"}"#))
        }
        let client = APIClient(baseURL: URL(string: "https://example.com")!, transport: transport)
        let result = await Result { () async throws(APIError) in
            try await client.send(Endpoint<Data>.raw("x", query: [QueryItem("access_token", "s3cret")]))
        }
        guard case .failure(let error) = result else {
            Issue.record("expected failure")
            return
        }
        #expect(!error.description.contains("s3cret"))
        #expect(error.description.contains("404"))
    }

    @Test func a304WithoutACacheIsNotSilentlyDropped() async throws {
        let transport = ClosureTransport { _, _, _ in (HTTPResponse(status: .notModified), nil) }
        let client = APIClient(baseURL: URL(string: "https://example.com")!, transport: transport)
        let result = await Result { () async throws(APIError) in try await client.send(Endpoint<Data>.raw("x")) }
        guard case .failure(.httpStatus(304, _, _, _)) = result else {
            Issue.record("expected a 304 error, got \(result)")
            return
        }
    }

    @Test("The middlewares' report reaches Response as typed values; a server's look-alike header is only a header")
    func reportReachesResponse() async throws {
        let transport = ClosureTransport { _, _, _ in
            (HTTPResponse(status: .ok, headerFields: [HTTPField.Name("Freshet-Cache")!: "revalidated"]), .init("[]"))
        }
        let reporter = ClosureMiddleware { request, body, base, next in
            let answer = try await next(request, body, base)
            ExchangeReport.current?.recordCache(.stale, staleReason: .failed(.timedOut(url: "because")))
            ExchangeReport.current?.recordAttempt(3)
            return answer
        }
        let client = APIClient(baseURL: URL(string: "https://example.com")!, transport: transport, middlewares: [reporter])
        let response = try await client.send(Endpoint<[Int]>.get("x"))
        #expect(response.cache == .stale)
        #expect(response.staleReason == .failed(.timedOut(url: "because")))
        #expect(response.attempt == 3)
        #expect(response.headers[HTTPField.Name("Freshet-Cache")!] == "revalidated", "the server's own field is passed on untouched")

        let plain = try await APIClient(baseURL: URL(string: "https://example.com")!, transport: transport).send(Endpoint<[Int]>.get("x"))
        #expect(plain.cache == nil && plain.staleReason == nil && plain.attempt == 1)
    }

    @Test func defaultAndEndpointHeadersAreSent() async throws {
        let transport = ClosureTransport { request, _, _ in
            let echo = "\(request.headerFields[.userAgent] ?? "-")|\(request.headerFields[.accept] ?? "-")"
            return (HTTPResponse(status: .ok), .init(Data(#"{"echo":"\#(echo)"}"#.utf8)))
        }
        struct Echo: Decodable, Sendable { let echo: String }
        let client = APIClient(baseURL: URL(string: "https://example.com")!, transport: transport)
        var endpoint = Endpoint<Echo>.get("x")
        endpoint.headers[.accept] = "application/vnd.github+json"
        let echo = try await client.value(endpoint).echo
        #expect(echo == "freshet/\(FreshetInfo.version)|application/vnd.github+json")
    }

    @Test("URLSession is selectable and talks to the same simulator")
    func urlSessionTransport() async throws {
        try await withSimulator(.init()) { sim in
            let client = APIClient(baseURL: sim.baseURL, transport: Transports.urlSession())
            let response = try await client.send(Endpoint<Login>.get("users", "octocat"))
            #expect(response.value.login == "octocat")
            let missing = await Result { () async throws(APIError) in try await client.send(Endpoint<Login>.get("users", "no-such-user-x")) }
            guard case .failure(.httpStatus(404, "Not Found", _, _)) = missing else {
                Issue.record("expected 404, got \(missing)")
                return
            }
        }
    }
}
