import Foundation
import Freshet
import FreshetTesting
import GitHubAPI
import HTTPTypes
import Synchronization
import Testing

private let profile = #"{"login":"LOGIN","id":1,"avatar_url":"","html_url":"","type":"User","public_repos":0,"followers":0,"following":0,"created_at":"2020-01-01T00:00:00Z","updated_at":"2020-01-01T00:00:00Z"}"#

@Suite("FreshetTesting: the stub transport under the real client")
struct StubTransportTests {
    @Test("The documented example: routes with parameters, a 404 route, the requests recorded")
    func documentedExample() async throws {
        let transport = StubTransport()
        transport.on(.get, "/users/ghost", .status(.notFound, json: #"{"message":"Not Found"}"#))
        transport.on(.get, "/users/{login}") { request in
            .json(profile.replacingOccurrences(of: "LOGIN", with: request.parameters["login"] ?? ""))
        }
        var headers = APIClient.standardHeaders
        headers[.authorization] = "Bearer stub-token"
        let client = APIClient(baseURL: GitHub.defaultBaseURL, transport: transport, defaultHeaders: headers, errorBody: .gitHub)

        let user = try await client.value(GitHub.user(login: "octocat"))
        #expect(user.login == "octocat")
        await #expect(throws: APIError.self) { try await client.value(GitHub.user(login: "ghost")) }
        #expect(transport.requests.map(\.path) == ["/users/octocat", "/users/ghost"])
        #expect(transport.requests.allSatisfy { $0.headerFields[.authorization] == "Bearer stub-token" })
    }

    @Test("Order decides; unknown paths get a 404 the client turns into its typed error; query and body are recorded")
    func orderFallbackQueryBody() async throws {
        let transport = StubTransport()
        transport.on(.get, "/users/{login}", .json(profile))
        transport.on(.get, "/users/ghost", .status(.notFound, json: #"{"message":"Not Found"}"#))
        transport.on(nil, "/echo/*") { request in .json(String(decoding: request.body ?? Data(), as: UTF8.self)) }
        let client = APIClient(baseURL: URL(string: "https://api.example/v3")!, transport: transport, errorBody: .gitHub)

        // The first matching route wins: `{login}` was added before the ghost's 404.
        #expect(try await client.value(GitHub.user(login: "ghost")).login == "LOGIN")
        do {
            _ = try await client.value(Endpoint<Data>.raw("nowhere"))
            Issue.record("expected a 404")
        } catch {
            if case .httpStatus(404, _, _, _) = error {} else { Issue.record("expected a 404, got \(error)") }
        }
        let echo = Endpoint<Data>(method: .post, path: ["echo", "a", "b"], query: [QueryItem("q", "swift")], body: Data("[1,2]".utf8)) { data, _ in data }
        #expect(try await client.value(echo) == Data("[1,2]".utf8))
        let last = try #require(transport.requests.last)
        #expect(last.method == .post && last.path == "/echo/a/b" && last.query["q"] == "swift" && last.body == Data("[1,2]".utf8))
    }

    @Test("A scripted event stream: each connection answered by the next script, Last-Event-ID and retry: honoured")
    func scriptedEventStream() async throws {
        let transport = StubTransport()
        let connections = Counter()
        transport.on(.get, "/stream") { _ in
            switch connections.next() {
            case 1: .eventStream([.init("tick", data: "{\"n\":1}", id: "1", retry: 1), .init(data: "{\"n\":2}", id: "2")])
            case 2: .eventStream([.init("tick", data: "{\"n\":\n3}", id: "3")], then: .fail)
            default: .eventStream([.init("tick", data: "{\"n\":4}", id: "4")], then: .hang)
            }
        }
        struct Tick: Decodable, Sendable { var n: Int }
        let client = APIClient(baseURL: URL(string: "https://stream.example")!, transport: transport)
        var seen: [(type: String, n: Int, connection: Int)] = []
        for try await event in client.events(Endpoint<Tick>(path: ["stream"])) {
            seen.append((event.type, try event.value().n, event.connection))
            if seen.count == 4 { break }
        }
        #expect(seen.map(\.n) == [1, 2, 3, 4])
        #expect(seen.map(\.type) == ["tick", "message", "tick", "tick"])
        #expect(seen.map(\.connection) == [1, 1, 2, 3])
        #expect(transport.requests.map { $0.headerFields[.lastEventID] } == [nil, "2", "3"])
        #expect(transport.requests.allSatisfy { $0.headerFields[.accept] == "text/event-stream" })
    }
}

/// Counts calls, from any task.
private final class Counter: Sendable {
    private let value = Mutex(0)
    func next() -> Int { value.withLock { $0 += 1; return $0 } }
}
