import Foundation
import Freshet
import FreshetTestSupport
import GitHubAPI
import Testing

// `GitHubEvent.decode(from:)` and `decodeList(from:)` read events without `JSONDecoder`; they
// must give exactly what `GitHub.decoder` gives, so stored feeds and `--json` stay the same.

/// An event in docs/API-FACTS.md's shape with the given payload JSON.
private func event(payload: String, extra: String = "") -> String {
    """
    {"id": "1", "type": "PushEvent", \(extra)
     "actor": {"id": 1, "login": "alice", "avatar_url": "https://avatars.example/u/1"},
     "repo": {"id": 2, "name": "alice/tool", "url": "https://api.github.com/repos/alice/tool"},
     "payload": \(payload), "public": true, "created_at": "2024-01-02T03:04:05Z"}
    """
}

/// Decodes `json` both ways and checks they agree, value and re-encoded bytes; returns the event
/// (`nil` when both fail). `decodes` says which way they must agree: both failing is agreement
/// only where the input is one `GitHub.decoder` refuses.
@discardableResult
private func checkAgreement(
    _ json: String, decodes: Bool = true, sourceLocation: SourceLocation = #_sourceLocation
) -> GitHubEvent? {
    let data = Data(json.utf8)
    let reference = try? GitHub.decoder.decode(GitHubEvent.self, from: data)
    let fast = try? GitHubEvent.decode(from: data)
    #expect((reference != nil) == decodes, "GitHub.decoder \(decodes ? "refused" : "accepted") \(json)",
            sourceLocation: sourceLocation)
    #expect(fast == reference, "\(json)", sourceLocation: sourceLocation)
    if let fast, let reference {
        #expect((try? GitHub.encoder.encode(fast)) == (try? GitHub.encoder.encode(reference)), sourceLocation: sourceLocation)
    }
    return fast
}

@Test func fastDecodingAgreesOnOddPayloads() throws {
    let payloads = [
        "{}", "null", "[]", "[1, 2]", "\"text\"", "42", "true",
        #"{"action": "started"}"#,
        #"{"action": 5, "size": "3", "commits": "none", "issue": {"number": "x"}, "ref": null}"#,
        #"{"size": 3.0, "distinct_size": 1e2, "number": -0, "head": "a\u00e9\ud83d\ude00\n\t\"\\\/"}"#,
        #"{"size": 9223372036854775807, "distinct_size": -9223372036854775808, "number": 9223372036854775808}"#,
        #"{"list": [1, 2.5, null, true, "x", {"a": []}], "nested": {"deep": [[[{"x": -1}]]]}}"#,
        #"{"commits": [{"sha": "a", "message": "m", "author": {"name": 1}}]}"#,
        #"{"commits": [{"sha": "a", "message": "m", "author": null, "distinct": 1}]}"#,
        #"{"commits": [{"sha": "a", "message": "m", "distinct": false, "url": null}, null]}"#,
        #"{"commits": [{"sha": "a", "message": "m", "distinct": false, "url": null}]}"#,
        #"{"pull_request": {"number": 7, "title": null}, "release": {"tag_name": "v1", "name": 3}}"#,
        #"{"forkee": {"full_name": "b/t", "html_url": "https://x"}, "member": {"login": null}}"#,
        #"{"comment": {"body": "é — 漢字", "html_url": 1}, "issue": {"number": 1, "title": "t", "html_url": null}}"#,
        #"{"a": 1, "a": 2}"#,
    ]
    for payload in payloads {
        checkAgreement(event(payload: payload))
    }
    // Not JSON: a lone surrogate, a raw control character in a string.
    checkAgreement(event(payload: #"{"text": "bad \u0000 nul", "lone": "\ud800"}"#), decodes: false)
    checkAgreement(event(payload: "{\"ctl\": \"tab\tinside\"}"), decodes: false)
    // The event's own fields.
    checkAgreement(event(payload: "{}", extra: #""org": {"id": 3, "login": "o", "avatar_url": null},"#))
    checkAgreement(event(payload: "{}", extra: #""org": null,"#))
    checkAgreement(event(payload: "{}", extra: #""org": {"id": "3", "login": "o"},"#), decodes: false)
    checkAgreement(event(payload: "{}").replacingOccurrences(of: #""id": "1""#, with: #""id": 123"#))
    checkAgreement(event(payload: "{}").replacingOccurrences(of: #""id": "1""#, with: #""id": 1.5"#), decodes: false)
    checkAgreement(event(payload: "{}").replacingOccurrences(of: #""public": true"#, with: #""public": null"#))
    checkAgreement(event(payload: "{}").replacingOccurrences(of: #""public": true"#, with: #""public": 1"#), decodes: false)
    checkAgreement(event(payload: "{}").replacingOccurrences(of: #""alice","#, with: #""alice", "display_login": 2,"#),
                   decodes: false)
    // The reference is lenient where ISO8601FormatStyle is: 29 February 2023 and 24:00 are read
    // as the next day; the fast path must be too.
    for (date, valid) in [
        ("2024-02-29T23:59:59Z", true), ("2023-02-29T00:00:00Z", true), ("2024-01-02T03:04:05.250Z", true),
        ("1969-12-31T23:59:59Z", true), ("2024-13-01T00:00:00Z", false), ("2024-01-02T24:00:00Z", true),
        ("2024-01-02 03:04:05Z", false), ("2024-01-02T03:04:05+01:00", true),
    ] {
        checkAgreement(event(payload: "{}").replacingOccurrences(of: "2024-01-02T03:04:05Z", with: date), decodes: valid)
    }
}

@Test func fastDateFormattingMatchesTheFormatStyle() {
    var seconds: TimeInterval = 0
    while seconds < 4_102_444_800 {  // through 2100, in uneven steps
        let date = Date(timeIntervalSince1970: seconds)
        #expect(GitHub.formatDate(date) == Date.ISO8601FormatStyle().format(date))
        #expect(GitHub.parseDate(Date.ISO8601FormatStyle().format(date)) == date)
        seconds += 86_399 * 17 + 3
    }
}

@Test func fastDecodingAgreesOnSimulatedFeeds() async throws {
    try await withSimClient { _, client in
        let top = try await client.value(GitHub.searchRepositories(query: "language:swift", sort: "stars", perPage: 4))
        for repository in ["ReactiveX/RxSwift"] + top.items.map(\.fullName) {
            let parts = repository.split(separator: "/").map(String.init)
            let events = GitHub.repoEvents(owner: parts[0], name: parts[1], perPage: 100)
            let raw = Endpoint<Data>(path: events.pathSegments, query: events.query, headers: events.headers) { data, _ in data }
            let body = try await client.value(raw)
            let reference = try GitHub.decoder.decode([GitHubEvent].self, from: body)
            let fast = try GitHubEvent.decodeList(from: body)
            #expect(!fast.isEmpty)
            #expect(fast == reference, "\(repository)")
            // What the feed store keeps, read back.
            for event in reference {
                let stored = try GitHub.encoder.encode(event)
                #expect(try GitHubEvent.decode(from: stored) == event)
            }
            #expect(try GitHub.encoder.encode(fast) == GitHub.encoder.encode(reference))
        }
    }
}

@Test func fastListDecodingFallsBackWithTheDecoderError() throws {
    let broken = Data("[\(event(payload: "{}")), {\"id\": \"2\"}]".utf8)
    #expect(throws: DecodingError.self) { try GitHubEvent.decodeList(from: broken) }
    #expect(throws: DecodingError.self) { try GitHubEvent.decode(from: Data("{".utf8)) }
    #expect(try GitHubEvent.decodeList(from: Data(" [ ] ".utf8)).isEmpty)
}

@Test func payloadFromRawTreeMatchesDecodingItsJSON() throws {
    let trees: [JSONValue] = [
        .object(["size": .double(3.0), "number": .double(2.5)]),
        .object(["size": .int(3), "commits": .array([.object(["sha": .string("a"), "message": .string("m")])])]),
        .object([:]), .null, .array([.int(1)]),
    ]
    for tree in trees {
        let json = try JSONEncoder().encode(tree)
        let decoded = try JSONDecoder().decode(GitHubEvent.Payload.self, from: json)
        #expect(GitHubEvent.Payload(raw: tree) == decoded, "\(tree)")
    }
}
