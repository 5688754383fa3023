import DaumSearchAPI
import Foundation
import Freshet
import FreshetFeeds
import FreshetCache
import FreshetSimulator
import FreshetTestSupport
import GitHubAPI
import HackerNewsAPI
import HTTPTypes
import Testing

/// Problems found on a worker thread, reported by the test afterwards (issues are attributed to a
/// test from its task, not from a plain thread). Used by one thread at a time.
final class Findings: @unchecked Sendable {
    private(set) var list: [String] = []

    func check(_ condition: Bool, _ message: @autoclosure () -> String = "", sourceLine: Int = #line) {
        if !condition { list.append("line \(sourceLine): \(message())") }
    }
}

/// Runs CPU-bound work on a thread of its own: on the cooperative pool (2 threads on a 2-core
/// machine) it would starve the in-process simulators of the tests running alongside.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try work() }) }
        thread.stackSize = 64 << 20
        thread.start()
    }
}

/// Runs `body` on `iterations` mutations of the corpus, seeded.
private func fuzz(_ corpus: [String], seed: UInt64, iterations: Int, _ body: (String) throws -> Void) rethrows {
    let seeds = corpus.map { Array($0.utf8) }
    var random = SplitMix64(seed: seed)
    for seedValue in corpus { try body(seedValue) }
    for _ in 0..<iterations {
        try body(Mutator.string(Mutator.mutate(random.pick(seeds), corpus: seeds, random: &random)))
    }
}

@Suite("Fuzzing: header parsers, JSON models and hostile names", .serialized, .timeLimit(.minutes(3)))
struct FuzzTests {
    static let iterations = Mutator.iterations(3000)

    @Test("Cache-Control: any input parses; numbers are nil or 0…2³¹; names are lowercased tokens")
    func cacheControl() async throws {
        let found = Findings()
        try await offPool {
            let corpus = [
                "public, max-age=60, s-maxage=60", "private, max-age=60, s-maxage=60", "no-cache", "no-store",
                "max-age=0, must-revalidate", #"no-cache="Set-Cookie, X-Foo", max-age=10"#, #"ext="max-age=0, no-store""#,
                "stale-while-revalidate=30, stale-if-error=86400", "max-stale", "max-stale=5, min-fresh=2, only-if-cached",
                "immutable, max-age=31536000", "max-age=99999999999999999999", "MAX-AGE=5", #"max-age="5""#,
            ]
            fuzz(corpus, seed: 1, iterations: Self.iterations) { value in
                let control = CacheControl(parsing: value)
                for name in ["max-age", "s-maxage", "stale-while-revalidate", "stale-if-error", "min-fresh", "max-stale"] {
                    if let seconds = control.seconds(name) {
                        found.check((0...CacheControl.deltaSecondsCap).contains(seconds), "\(value.debugDescription)")
                    }
                }
                for name in control.directives.keys {
                    found.check(!name.isEmpty && name == name.lowercased() && !name.contains(" ") && !name.contains(","))
                }
                _ = control.fieldNames("no-cache")
                _ = control.maxStale
                // Through HTTPFields too, as a response would bring it (several lines).
                if let field = HTTPField.Name("Cache-Control") {
                    var fields = HTTPFields()
                    fields.append(HTTPField(name: field, value: value))
                    fields.append(HTTPField(name: field, value: String(value.reversed())))
                    _ = CacheControl(fields).noStore
                }
            }
        }
        #expect(found.list.isEmpty, "\(found.list.prefix(20))")
    }

    @Test("Link: any input parses; relations are lowercased; targets never contain '>'")
    func linkHeader() async throws {
        let found = Findings()
        try await offPool {
            let corpus = [
                #"<https://api.github.com/repositories/1296269/events?page=2>; rel="next", <https://api.github.com/repositories/1296269/events?page=10>; rel="last""#,
                "<a>;rel=next", "  < a >  ;  rel = \"next\"  ", #"<b>; rel="prev", <a,with,commas>; rel="next""#,
                #"<a>; title="x; rel=prev, y"; rel="last next""#, "<a>; REL=NEXT", #"<x>; rel="next\"quoted""#, "<unterminated; rel=next",
            ]
            fuzz(corpus, seed: 2, iterations: Self.iterations) { value in
                for link in LinkHeader.parse(value) {
                    found.check(!link.target.contains(">"))
                    found.check(link.relations.allSatisfy { $0 == $0.lowercased() && !$0.isEmpty })
                }
                var fields = HTTPFields()
                fields.append(HTTPField(name: .link, value: value))
                if let next = LinkHeader.url("next", in: fields, relativeTo: URL(string: "https://api.github.com/x")) {
                    found.check(next.scheme != nil)
                }
            }
        }
        #expect(found.list.isEmpty, "\(found.list.prefix(20))")
    }

    @Test("Retry-After and HTTP-date: any input is nil or a sane value; parsed dates round-trip")
    func retryAfterAndHTTPDate() async throws {
        let found = Findings()
        try await offPool {
            let corpus = [
                "120", "0", "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
                "Mon, 29 Feb 2016 23:59:60 GMT", "Fri, 31 Dec 9999 23:59:59 GMT", "Thu, 01 Jan 0001 00:00:00 GMT", "-5",
                "99999999999999999999", "Sun, 06 Nov 1994 08:49:37 PST",
            ]
            let now = Date(timeIntervalSince1970: 1_700_000_000)
            fuzz(corpus, seed: 3, iterations: Self.iterations) { value in
                if let delay = RetryAfter.delay(value, now: now) {
                    found.check(delay >= .zero, "\(value.debugDescription)")
                }
                if let date = HTTPDate.parse(value) {
                    found.check(HTTPDate.parse(HTTPDate.format(date)) == date, "\(value.debugDescription)")
                }
            }
        }
        #expect(found.list.isEmpty, "\(found.list.prefix(20))")
    }

    @Test("HTML text: no tag is left, plain text is a fixed point, escaped text decodes back to itself")
    func htmlText() async throws {
        let found = Findings()
        try await offPool {
            let corpus = [
                "Q&amp;A &lt;b&gt; &#39;x&#39; &#x27;y&#x27; &nbsp;", "<p>One<p>Two<br>three <a href=\"x\">link</a>",
                "&#1114112; &#xD800; &#x; &#; &unknown; &amp", "<b>스위프트</b> &quot;RxSwift&quot;",
            ]
            fuzz(corpus, seed: 4, iterations: Self.iterations) { value in
                _ = HTMLText.decodeEntities(value)
                _ = HTMLText.plainText(value)
                // Without references (which may decode to '<' and '>'), no tag survives: a '<'
                // left in the text is one that no '>' closes.
                let unreferenced = value.replacingOccurrences(of: "&", with: "")
                let text = HTMLText.plainText(unreferenced)
                if let open = text.firstIndex(of: "<") {
                    found.check(!text[open...].contains(">"), "a tag is left: \(value.debugDescription) → \(text.debugDescription)")
                }
                // Plain text is plain text: a second pass changes nothing.
                found.check(HTMLText.plainText(text) == text, "not idempotent: \(value.debugDescription) → \(text.debugDescription)")
                // Any text, escaped as HTML, comes back exactly.
                let escaped = value.replacingOccurrences(of: "&", with: "&amp;")
                    .replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
                found.check(HTMLText.decodeEntities(escaped) == value, "escaped: \(value.debugDescription)")
                found.check(HTMLText.plainText(escaped) == value, "escaped, as HTML: \(value.debugDescription)")
            }
        }
        #expect(found.list.isEmpty, "\(found.list.prefix(20))")
    }

    @Test("Huge header values are handled in bounded time")
    func hugeValues() async throws {
        let found = Findings()
        try await offPool {
            let huge = String(repeating: "max-age=1, ", count: 50_000)
            found.check(CacheControl(parsing: huge).maxAge == 1)
            let quotes = "ext=\"" + String(repeating: "\\\"", count: 100_000)
            _ = CacheControl(parsing: quotes)
            let links = String(repeating: "<https://x/1>; rel=\"next\", ", count: 20_000)
            found.check(LinkHeader.parse(links).count == 20_000)
            found.check(RetryAfter.delay(String(repeating: "9", count: 100_000)) == .seconds(Int64(Int32.max)))
            found.check(HTTPDate.parse(String(repeating: "Sun, ", count: 100_000)) == nil)
            _ = HTMLText.plainText(String(repeating: "<", count: 100_000) + String(repeating: "&amp;", count: 100_000))
        }
        #expect(found.list.isEmpty, "\(found.list.prefix(20))")
    }

    // MARK: - JSON models

    /// Bodies exactly as the simulator serves them (real field sets), fetched once.
    static func fixtures() async throws -> [String: Data] {
        try await withSimClient { sim, client in
            var fixtures: [String: Data] = [:]
            fixtures["events"] = try await client.value(Endpoint<Data>.raw("repos", "ReactiveX", "RxSwift", "events",
                                                                           query: [QueryItem("per_page", "8")]))
            // GitHub sends event ids as strings, its documentation as numbers: both shapes are seeds.
            let events = String(decoding: fixtures["events"]!, as: UTF8.self)
            fixtures["eventsNumericID"] = Data(events.replacing(/"id":"(\d+)"/) { "\"id\":\($0.1)" }.utf8)
            fixtures["search"] = try await client.value(Endpoint<Data>.raw("search", "repositories",
                                                                           query: [QueryItem("q", "swift"), QueryItem("per_page", "3")]))
            fixtures["user"] = try await client.value(Endpoint<Data>.raw("users", "octocat"))
            let ids = try JSONDecoder().decode([Int].self, from: try await client.value(Endpoint<Data>.raw("v0", "topstories.json")))
            fixtures["story"] = try await client.value(Endpoint<Data>.raw("v0", "item", "\(ids[0]).json"))
            if let kid = (try JSONSerialization.jsonObject(with: fixtures["story"]!) as? [String: Any])?["kids"] as? [Int],
               let first = kid.first {
                fixtures["comment"] = try await client.value(Endpoint<Data>.raw("v0", "item", "\(first).json"))
            }
            var blog = Endpoint<Data>.raw("v2", "search", "blog", query: [QueryItem("query", "스위프트"), QueryItem("size", "3")])
            blog.headers[.authorization] = DaumSearch.authorizationValue(apiKey: sim.simulator.configuration.kakaoAPIKey)
            fixtures["blog"] = try await client.value(blog)
            fixtures["kakaoError"] = Data(#"{"errorType":"AccessDeniedError","message":"wrong appKey(null) format"}"#.utf8)
            return fixtures
        }
    }

    /// Decodes `data` as the model of `kind` and uses what the apps read from it. What decodes is
    /// written back and read again to the same value (a model round-trips); what fails, fails
    /// with a `DecodingError` (which `APIClient` turns into `APIError.decodingFailed`), never
    /// with an untyped error.
    static func decodeAndUse(_ kind: String, _ data: Data, _ found: Findings) {
        do {
            switch kind {
            case "events", "eventsNumericID":
                for event in try roundTrip([GitHubEvent].self, data, GitHub.decoder, GitHub.encoder, kind, found) {
                    _ = (event.summary, event.activity, event.type.isKnown)
                }
            case "search":
                _ = try roundTrip(RepositorySearchResult.self, data, GitHub.decoder, GitHub.encoder, kind, found)
            case "user":
                _ = try roundTrip(GitHubUser.self, data, GitHub.decoder, GitHub.encoder, kind, found)
            case "story", "comment":
                if let item = try roundTrip(HNItem?.self, data, HackerNews.decoder, HackerNews.encoder, kind, found) {
                    _ = (item.displayTitle, item.plainText, item.date, item.isVisible)
                }
            case "blog":
                let result = try roundTrip(BlogSearchResult.self, data, DaumSearch.decoder, DaumSearch.encoder, kind, found)
                for post in result.documents { _ = (post.date, post.displayTitle, post.displayContents, post.thumbnailURL) }
            default:
                _ = try roundTrip(KakaoErrorBody.self, data, DaumSearch.decoder, DaumSearch.encoder, kind, found).description
            }
        } catch let error as DecodingError {
            // The typed error a caller sees must describe itself.
            found.check(!APIError.decoding(error, type: kind).description.isEmpty, "\(kind): \(error)")
        } catch {
            found.check(false, "\(kind): an untyped decoding failure, \(type(of: error)): \(error)")
        }
        _ = (JSONMessageErrorBody().message(in: data), GitHubErrorBody().message(in: data), KakaoErrorBodyReader().message(in: data))
    }

    /// Decodes a `T`, writes it back and decodes that: the second value must equal the first.
    static func roundTrip<T: Codable & Equatable>(
        _ type: T.Type, _ data: Data, _ decoder: JSONDecoder, _ encoder: JSONEncoder, _ kind: String, _ found: Findings
    ) throws -> T {
        let value = try decoder.decode(T.self, from: data)
        let written: Data
        do {
            written = try encoder.encode(value)
        } catch is EncodingError {
            return value  // a value JSON cannot hold (a non-finite number) may be refused, typed
        } catch {
            found.check(false, "\(kind): an untyped encoding failure, \(Swift.type(of: error)): \(error)")
            return value
        }
        do {
            let again = try decoder.decode(T.self, from: written)
            found.check(again == value, "\(kind): written back and read again, the value changed: \(String(decoding: written.prefix(300), as: UTF8.self))")
        } catch {
            found.check(false, "\(kind): its own encoding does not decode: \(error)")
        }
        return value
    }

    @Test("Mutated JSON bodies of every model decode and round-trip, or fail with a DecodingError")
    func jsonModels() async throws {
        let fixtures = try await Self.fixtures()
        #expect(fixtures.count >= 8)
        let found = Findings()
        try await offPool {
            for (kind, data) in fixtures.sorted(by: { $0.key < $1.key }) {
                Self.decodeAndUse(kind, data, found)
                let seed = Array(data)
                var random = SplitMix64(seed: UInt64(bitPattern: Int64(kind.utf8.reduce(0) { $0 &* 31 &+ Int($1) })))
                for _ in 0..<600 {
                    Self.decodeAndUse(kind, Data(Mutator.mutate(seed, corpus: [seed], random: &random)), found)
                }
            }
        }
        #expect(found.list.isEmpty, "\(found.list.prefix(20))")
    }

    @Test("Structurally mutated JSON (wrong types, missing and extra keys, odd numbers) round-trips or fails typed")
    func structuralJSON() async throws {
        let fixtures = try await Self.fixtures()
        let found = Findings()
        try await offPool {
            let replacements: [Any] = [
                NSNull(), "", "🦉\u{0}\u{202E}", -1, 0, Int.max, Int.min, 1.5, -0.0, 1e300, true, [Any](), [String: Any](),
                [NSNull()], ["id": "x"], String(repeating: "x", count: 100_000),
            ]
            for (kind, data) in fixtures.sorted(by: { $0.key < $1.key }) {
                let root = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
                var random = SplitMix64(seed: 0xF00D ^ UInt64(kind.utf8.count))
                for _ in 0..<400 {
                    let mutated = Self.mutateStructure(root, replacements: replacements, random: &random, depth: 0)
                    guard JSONSerialization.isValidJSONObject(mutated),
                          let bytes = try? JSONSerialization.data(withJSONObject: mutated) else { continue }
                    Self.decodeAndUse(kind, bytes, found)
                }
            }
            // Nesting far deeper than any model: an error, not a stack overflow.
            let deep = Data((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8)
            for kind in fixtures.keys { Self.decodeAndUse(kind, deep, found) }
            let deepObject = Data((String(repeating: #"{"payload":"#, count: 20_000) + "1" + String(repeating: "}", count: 20_000)).utf8)
            Self.decodeAndUse("events", Data("[".utf8) + deepObject + Data("]".utf8), found)
        }
        #expect(found.list.isEmpty, "\(found.list.prefix(20))")
    }

    /// Replaces, removes or adds one value somewhere in a JSON tree.
    static func mutateStructure(_ value: Any, replacements: [Any], random: inout SplitMix64, depth: Int) -> Any {
        if depth > 0, random.below(6) == 0 { return random.pick(replacements) }
        if var object = value as? [String: Any], !object.isEmpty {
            let key = object.keys.sorted()[random.below(object.count)]
            switch random.below(4) {
            case 0: object[key] = nil
            case 1: object[key + "_extra"] = random.pick(replacements)
            default: object[key] = mutateStructure(object[key]!, replacements: replacements, random: &random, depth: depth + 1)
            }
            return object
        }
        if var array = value as? [Any], !array.isEmpty {
            let index = random.below(array.count)
            if random.below(5) == 0 {
                array.remove(at: index)
            } else {
                array[index] = mutateStructure(array[index], replacements: replacements, random: &random, depth: depth + 1)
            }
            return array
        }
        return random.pick(replacements)
    }

    // MARK: - Hostile names

    @Test("Random hostile names stay one path segment and reach the server exactly as given")
    func hostileSegments() async throws {
        try await withSimClient(.init(enforceRateLimits: false)) { sim, client in
            var random = SplitMix64(seed: 0xBAD_5EED)
            let alphabet = ["a", "Z", "0", "-", ".", "..", "/", "?", "#", "%", "%00", "%2F", "%2e%2e", " ", "+", "&", "=", ";",
                            "\\", "\u{0}", "\n", "\r\n", "스", "🦉", "\u{202E}", "\u{FEFF}", "~", "'", "\"", "<", ">"]
            var names: [String] = ["../../etc/passwd", "a/../b", "x?y=1#frag", "%00", "..", ".", String(repeating: "a", count: 10_000)]
            for _ in 0..<60 {
                names.append((0..<(1 + random.below(12))).map { _ in random.pick(alphabet) }.joined())
            }
            var sent: [String] = []
            for name in names {
                let endpoint = GitHub.repoEvents(owner: name, name: name + "!")
                let result = await Result { () async throws(APIError) in try await client.send(endpoint) }
                switch result {
                case .failure(.httpStatus(404, _, _, _)): sent.append(name)
                case .failure(.invalidRequest): Issue.record("a non-empty name was refused: \(name.debugDescription)")
                case .failure(let error): Issue.record("\(name.debugDescription): \(error)")
                case .success: Issue.record("\(name.debugDescription) found a repository")
                }
            }
            let log = await sim.simulator.requestLog()
            #expect(log.count == sent.count)
            for (entry, name) in zip(log, sent) {
                let target = entry.path
                #expect(!target.contains("#"), "\(target)")
                let (path, query) = target.split(separator: "?", maxSplits: 1).map(String.init).splitPair()
                #expect(query == "per_page=30", "\(name.debugDescription) → \(target)")
                let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
                #expect(segments.count == 4, "\(name.debugDescription) → \(target)")
                guard segments.count == 4 else { continue }
                #expect(segments[0] == "repos" && segments[3] == "events")
                #expect(percentDecoded(segments[1]) == name, "\(name.debugDescription) → \(target)")
                #expect(percentDecoded(segments[2]) == name + "!", "\(name.debugDescription) → \(target)")
            }
            // An empty name is refused before anything is sent.
            let empty = await Result { () async throws(APIError) in try await client.send(GitHub.user(login: "")) }
            guard case .failure(.invalidRequest) = empty else {
                Issue.record("an empty login must be refused, got \(empty)")
                return
            }
            #expect(await sim.simulator.requestLog().count == sent.count)
        }
    }
}

extension Array where Element == String {
    /// `(first, second)` of a one- or two-element split.
    fileprivate func splitPair() -> (String, String?) {
        (first ?? "", count > 1 ? self[1] : nil)
    }
}
