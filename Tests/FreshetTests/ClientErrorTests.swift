import Foundation
import Freshet
import GitHubAPI
import FreshetTestSupport
import Testing
import HTTPTypes

/// A minimal GitHub user shape, enough to exercise decoding in the core.
struct Login: Decodable, Sendable, Equatable {
    let login: String
}

@Suite("Typed errors over loopback")
struct ClientErrorTests {
    @Test func decodesASuccessfulResponseWithMetadata() async throws {
        try await withSimClient { _, client in
            let response = try await client.send(Endpoint<Login>.get("users", "octocat"))
            #expect(response.value == Login(login: "octocat"))
            #expect(response.status.code == 200)
            #expect(response.headers[.eTag] != nil)
            #expect(response.bodyBytes > 0)
            #expect(response.cache == nil)
        }
    }

    @Test func notFoundCarriesTheAPIMessage() async throws {
        try await withSimClient { _, client in
            let result = await Result { () async throws(APIError) in try await client.send(Endpoint<Login>.get("users", "no-such-user-x")) }
            guard case .failure(.httpStatus(404, let message, let url, _)) = result else {
                Issue.record("expected 404, got \(result)")
                return
            }
            #expect(message == "Not Found")
            #expect(url.hasSuffix("/users/no-such-user-x"))
            #expect(APIError.httpStatus(code: 404, message: message, url: url).description.contains("Check the name"))
        }
    }

    @Test func validationFailedCarriesTheFieldErrors() async throws {
        try await withSimClient { _, client in
            var client = client
            client.errorBody = .gitHub
            let result = await Result { () async throws(APIError) in
                try await client.send(Endpoint<Data>.raw("search", "repositories", query: [QueryItem("q", "")]))
            }
            guard case .failure(.httpStatus(422, let message?, _, _)) = result else {
                Issue.record("expected 422, got \(result)")
                return
            }
            #expect(message.hasPrefix("Validation Failed"))
            #expect(message.contains("q"))
            #expect(message.contains("missing"))
        }
    }

    @Test func exhaustedRateLimitBecomesRateLimited() async throws {
        try await withSimClient { sim, client in
            let reset = Int(Date().timeIntervalSince1970) + 600
            try await SimControl(sim).post("ratelimit", ["resource": "core", "remaining": 0, "reset": reset])
            let result = await Result { () async throws(APIError) in try await client.send(Endpoint<Login>.get("users", "octocat")) }
            guard case .failure(.rateLimited(let resetAt?, let message?, _, _)) = result else {
                Issue.record("expected rateLimited, got \(result)")
                return
            }
            #expect(Int(resetAt.timeIntervalSince1970) == reset)
            #expect(message.contains("API rate limit exceeded"))
        }
    }

    @Test func malformedJSONIsADecodingErrorWithItsPath() async throws {
        try await withSimClient { sim, client in
            let control = SimControl(sim)
            try await control.fault(route: "/users/octocat", status: 200, body: #"{"login": 42}"#)
            let result = await Result { () async throws(APIError) in try await client.send(Endpoint<Login>.get("users", "octocat")) }
            guard case .failure(.decodingFailed(let type, let path, _)) = result else {
                Issue.record("expected decodingFailed, got \(result)")
                return
            }
            #expect(type == "Login")
            #expect(path == "login")

            try await control.fault(route: "/users/octocat", status: 200, body: #"{"login": "oc"#)
            let truncated = await Result { () async throws(APIError) in try await client.send(Endpoint<Login>.get("users", "octocat")) }
            guard case .failure(.decodingFailed) = truncated else {
                Issue.record("expected decodingFailed for truncated JSON, got \(truncated)")
                return
            }
        }
    }

    @Test("A body over the limit fails without being read whole", arguments: [false, true])
    func oversizedBody(chunked: Bool) async throws {
        try await withSimClient(maxResponseBytes: 64 * 1024) { sim, client in
            var query = [QueryItem("size", String(4 * 1024 * 1024))]
            if chunked { query.append(QueryItem("chunked", "1")) }
            let result = await Result { () async throws(APIError) in
                try await client.send(Endpoint<Data>.raw("_sim", "bytes", query: query))
            }
            guard case .failure(.bodyTooLarge(let limit, _)) = result else {
                Issue.record("expected bodyTooLarge, got \(result)")
                return
            }
            #expect(limit == 64 * 1024)
            // The limit is not a property of the data: the same body fits a bigger limit.
            let small = try await client.send(Endpoint<Data>.raw("_sim", "bytes", query: [QueryItem("size", "1000")]))
            #expect(small.value.count == 1000)
        }
    }

    @Test func refusedConnectionIsUnreachableWithTheURL() async throws {
        let url = try await closedLoopbackURL()
        let client = APIClient(baseURL: url, transport: liveTransport)
        let result = await Result { () async throws(APIError) in try await client.send(Endpoint<Login>.get("users", "octocat")) }
        guard case .failure(.unreachable(let shown, _)) = result else {
            Issue.record("expected unreachable, got \(result)")
            return
        }
        #expect(shown.hasPrefix(url.absoluteString))
        #expect(APIError.unreachable(url: shown, cause: TransportFailure(.unreachable, reason: "x")).description.contains("Could not connect"))
    }
}

@Suite("The default transport on the wire")
struct TransportWireTests {
    @Test("Repeated response header lines all arrive, in order (Set-Cookie, Link, Cache-Control)")
    func repeatedHeaderLines() async throws {
        try await withSimClient { sim, client in
            try await SimControl(sim).script("repeated", headers: [
                ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"), ("Link", "<https://x/2>; rel=\"next\""),
                ("Link", "<https://x/9>; rel=\"last\""), ("Cache-Control", "max-age=60"), ("Cache-Control", "public"),
            ])
            let response = try await client.send(Endpoint<Data>.raw("scripted", "repeated"))
            #expect(response.headers[values: .setCookie] == ["a=1", "b=2"])
            #expect(response.headers[values: .link] == ["<https://x/2>; rel=\"next\"", "<https://x/9>; rel=\"last\""])
            #expect(response.headers[values: .cacheControl] == ["max-age=60", "public"])
        }
    }
}
