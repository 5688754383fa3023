import Foundation
import Freshet
import FreshetTestSupport
import HTTPTypes
import Synchronization
import Testing

@Suite("Endpoint path and query encoding")
struct EndpointTests {
    @Test("Each hostile segment stays one segment", arguments: [
        ("a/../b", "a%2F..%2Fb"),
        ("x?y", "x%3Fy"),
        ("%2F", "%252F"),
        ("..", "%2E%2E"),
        (".", "%2E"),
        ("a#b", "a%23b"),
        ("a b", "a%20b"),
        ("스위프트", "%EC%8A%A4%EC%9C%84%ED%94%84%ED%8A%B8"),
        ("a+b;c=d", "a%2Bb%3Bc%3Dd"),
        ("safe-._~AZaz09", "safe-._~AZaz09"),
    ])
    func hostileSegment(raw: String, encoded: String) throws {
        let endpoint = Endpoint<Data>.raw("repos", raw, "events")
        #expect(try endpoint.encodedTarget() == "/repos/\(encoded)/events")
    }

    @Test func emptySegmentIsRejected() {
        let endpoint = Endpoint<Data>.raw("users", "")
        #expect(throws: APIError.invalidRequest("a path segment is empty (an empty name or ID was given)")) {
            try endpoint.encodedTarget()
        }
    }

    @Test func queryItemsAreEncodedInOrder() throws {
        let endpoint = Endpoint<Data>.raw("search", query: [
            QueryItem("q", "language:swift stars:>10"), QueryItem("plus", "a+b"), QueryItem("flag", nil),
        ])
        #expect(try endpoint.encodedTarget() == "/search?q=language%3Aswift%20stars%3A%3E10&plus=a%2Bb&flag")
    }

    @Test func baseURLPathIsKept() throws {
        let client = APIClient(baseURL: URL(string: "https://example.com/v0")!, transport: ClosureTransport { _, _, _ in
            throw CancellationError()
        })
        #expect(try client.url(for: Endpoint<Data>.raw("item", "1.json")).absoluteString == "https://example.com/v0/item/1.json")
    }

    @Test("An absolute URL is sent as it is, without its user, password or fragment", arguments: [
        ("https://api.github.com/repositories/1/events?page=2", "https://api.github.com/repositories/1/events?page=2"),
        ("https://api.github.com/events?page=2#top", "https://api.github.com/events?page=2"),
        ("https://user:secret@example.com:8443/x?y=1", "https://example.com:8443/x?y=1"),
        ("https://example.com", "https://example.com/"),
        ("http://127.0.0.1:8080/a%20b?q=%2F", "http://127.0.0.1:8080/a%20b?q=%2F"),
    ])
    func absoluteURLs(given: String, sent: String) throws {
        let client = APIClient(baseURL: URL(string: "https://unused.invalid")!, transport: ClosureTransport { _, _, _ in
            throw CancellationError()
        })
        let endpoint = Endpoint<Data>(path: [], absoluteURL: URL(string: given)!) { data, _ in data }
        #expect(try client.url(for: endpoint).absoluteString == sent)
    }

    @Test("An absolute URL goes to the transport as its origin and its target", arguments: [
        ("https://api.github.com/repositories/1/events?page=2", "https://api.github.com", "/repositories/1/events?page=2"),
        ("http://127.0.0.1:8080/a%20b?q=%2F", "http://127.0.0.1:8080", "/a%20b?q=%2F"),
        ("HTTP://Example.COM:80/x", "HTTP://Example.COM:80", "/x"),
        ("https://user:secret@example.com:8443/x?y=1", "https://example.com:8443", "/x?y=1"),
        ("https://example.com/x#frag", "https://example.com", "/x"),
        ("http://[::1]:8080/x", "http://[::1]:8080", "/x"),
        ("https://example.com", "https://example.com", "/"),
        ("https://example.com?x=1", "https://example.com", "/?x=1"),
    ])
    func absoluteURLSplit(given: String, origin: String, target: String) async throws {
        let seen = Mutex<(String, String?)?>(nil)
        let client = APIClient(baseURL: URL(string: "https://unused.invalid")!, transport: ClosureTransport { request, _, base in
            seen.withLock { $0 = (base.absoluteString, request.path) }
            throw CancellationError()
        })
        _ = try? await client.send(Endpoint<Data>(path: [], absoluteURL: URL(string: given)!) { data, _ in data })
        let sent = try #require(seen.withLock { $0 })
        #expect(sent.0 == origin)
        #expect(sent.1 == target)
    }

    @Test("Hostile segments reach the server unchanged, as one segment")
    func hostileSegmentsOverLoopback() async throws {
        try await withSimClient { sim, client in
            let control = SimControl(sim)
            for raw in ["a/../b", "x?y", "%2F", "..", "a#b"] {
                let result = await Result { () async throws(APIError) in try await client.send(Endpoint<Data>.raw("users", raw)) }
                guard case .failure(.httpStatus(let code, _, _, _)) = result else {
                    Issue.record("expected a 404 for \(raw), got \(result)")
                    continue
                }
                #expect(code == 404)
            }
            let paths = try await control.log().map(\.path)
            #expect(paths == ["/users/a%2F..%2Fb", "/users/x%3Fy", "/users/%252F", "/users/%2E%2E", "/users/a%23b"])
        }
    }
}

extension Result where Failure == APIError {
    /// Captures the outcome of a typed-throwing async call.
    init(catching body: () async throws(APIError) -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
