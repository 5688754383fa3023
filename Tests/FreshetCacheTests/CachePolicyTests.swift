import Foundation
import Freshet
@testable import FreshetCache
import HTTPTypes
import Testing

/// The RFC 9111 decisions of ``CachePolicy``, one table per rule, no store and no server.
@Suite("Cache policy: RFC 9111 decisions as values")
struct CachePolicyTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let url = URL(string: "https://api.example.com/items/1")!

    static func policy(_ mode: CacheMode = .private, serveStaleOnFailure: Bool = false,
                       lifetime: Double? = nil) -> CachePolicy {
        var override: (@Sendable (URL) -> Double?)?
        if let lifetime { override = { _ in lifetime } }
        return CachePolicy(options: .init(mode: mode, serveStaleOnFailure: serveStaleOnFailure, lifetimeOverride: override),
                           memo: StoredFacts())
    }

    /// A `200` received `age` seconds before ``now``, its `Date` then, with `fields` ("Name: value" lines).
    static func stored(_ fields: [String], age: Double, status: Int = 200) -> CachedResponse {
        let received = now.addingTimeInterval(-age)
        var headers = HTTPFields()
        headers[.date] = HTTPDate.format(received)
        for line in fields {
            let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            headers.append(HTTPField(name: HTTPField.Name(parts[0])!, value: parts[1]))
        }
        return CachedResponse(key: "k", variant: "", url: url.absoluteString, status: status, headers: headers,
                              body: Data("{}".utf8), requestTime: received, responseTime: received)
    }

    static func fields(_ lines: [String]) -> HTTPFields {
        var fields = HTTPFields()
        for line in lines {
            let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            fields.append(HTTPField(name: HTTPField.Name(parts[0])!, value: parts[1]))
        }
        return fields
    }

    // MARK: Reuse (§4.2, §5.2.1)

    static let reuseCases: [(response: [String], age: Double, request: String, mode: CacheMode, expected: CachePolicy.Reuse)] = [
        (["Cache-Control: max-age=60"], 10, "", .private, .fresh),
        (["Cache-Control: max-age=60"], 61, "", .private, .mustValidate),
        (["Cache-Control: max-age=60, s-maxage=5"], 10, "", .private, .fresh),        // s-maxage is for shared caches
        (["Cache-Control: max-age=60, s-maxage=5"], 10, "", .shared, .mustValidate),
        (["Cache-Control: max-age=60", "Age: 55"], 10, "", .private, .mustValidate),  // Age counts (§4.2.3)
        (["Cache-Control: no-cache, max-age=60"], 1, "", .private, .mustValidate),
        (["Cache-Control: max-age=60"], 10, "no-cache", .private, .mustValidate),
        (["Cache-Control: max-age=60"], 10, "max-age=0", .private, .mustValidate),
        (["Cache-Control: max-age=60, immutable"], 10, "max-age=0", .private, .fresh),
        (["Cache-Control: max-age=60"], 10, "min-fresh=55", .private, .mustValidate),
        (["Cache-Control: max-age=60"], 70, "max-stale=20", .private, .staleAllowed),
        (["Cache-Control: max-age=60"], 90, "max-stale=20", .private, .mustValidate),
        (["Cache-Control: max-age=60"], 900, "max-stale", .private, .staleAllowed),
        (["Cache-Control: max-age=60, must-revalidate"], 70, "max-stale", .private, .mustValidate),
        (["Cache-Control: max-age=60, proxy-revalidate"], 70, "max-stale", .shared, .mustValidate),
        (["Expires: Thu, 01 Jan 2099 00:00:00 GMT"], 10, "", .private, .fresh),
        (["Expires: 0"], 10, "", .private, .mustValidate),                           // invalid Expires: expired
        (["Last-Modified: Thu, 01 Jan 2026 00:00:00 GMT"], 10, "", .private, .fresh),  // heuristic: 10% of months
    ]

    @Test("Reuse: fresh, stale because the request allows it, or validate first", arguments: reuseCases.indices)
    func reuse(row: Int) {
        let (response, age, request, mode, expected) = Self.reuseCases[row]
        let policy = Self.policy(mode)
        let stored = Self.stored(response, age: age)
        let freshness = policy.freshness(of: stored, url: Self.url, now: Self.now)
        #expect(policy.reuse(stored, freshness: freshness, request: CacheControl(parsing: request)) == expected,
                "\(response) age \(age) request \(request) \(mode)")
    }

    @Test("A caller's lifetime override replaces the server's freshness and no-cache, in private mode only")
    func lifetimeOverride() {
        let stored = Self.stored(["Cache-Control: no-cache"], age: 30)
        let overriding = Self.policy(lifetime: 60)
        let freshness = overriding.freshness(of: stored, url: Self.url, now: Self.now)
        #expect(freshness.lifetime == 60)
        #expect(overriding.reuse(stored, freshness: freshness, request: CacheControl(parsing: ""),
                                 overridden: overriding.overrides(Self.url)) == .fresh)
        #expect(!Self.policy(.shared, lifetime: 60).overrides(Self.url))
    }

    // MARK: Stale on error (§4.2.4, RFC 5861)

    static let staleCases: [(response: [String], staleFor: Double, request: String, serveStaleOnFailure: Bool, expected: Bool)] = [
        (["Cache-Control: max-age=10, stale-if-error=60"], 30, "", false, true),
        (["Cache-Control: max-age=10, stale-if-error=60"], 90, "", false, false),
        (["Cache-Control: max-age=10"], 30, "stale-if-error=60", false, true),
        (["Cache-Control: max-age=10"], 30, "", false, false),
        (["Cache-Control: max-age=10"], 3_000, "", true, true),
        (["Cache-Control: max-age=10, must-revalidate"], 1, "", true, false),
        (["Cache-Control: max-age=10, no-cache"], 1, "stale-if-error=60", true, false),
    ]

    @Test("Stale on error: within stale-if-error, or always with serveStaleOnFailure, never when forbidden",
          arguments: staleCases.indices)
    func staleOnError(row: Int) {
        let (response, staleFor, request, always, expected) = Self.staleCases[row]
        let policy = Self.policy(serveStaleOnFailure: always)
        let stored = Self.stored(response, age: 10 + staleFor)
        let freshness = policy.freshness(of: stored, url: Self.url, now: Self.now)
        #expect(policy.mayServeStaleOnError(stored, freshness: freshness, request: CacheControl(parsing: request)) == expected,
                "\(response) stale for \(staleFor) request \(request)")
    }

    // MARK: Storing (§3)

    static let storeCases: [(status: Int, response: [String], request: [String], mode: CacheMode, expected: Bool)] = [
        (200, ["Cache-Control: max-age=60"], [], .private, true),
        (200, [], [], .private, true),                                   // heuristically cacheable status
        (302, [], [], .private, false),                                  // not without explicit freshness
        (302, ["Cache-Control: max-age=60"], [], .private, true),
        (200, ["Cache-Control: no-store"], [], .private, false),
        (200, ["Cache-Control: max-age=60"], ["Cache-Control: no-store"], .private, false),
        (200, ["Cache-Control: private, max-age=60"], [], .private, true),
        (200, ["Cache-Control: private, max-age=60"], [], .shared, false),
        (200, ["Cache-Control: max-age=60"], ["Authorization: Bearer t"], .shared, false),  // §3.5
        (200, ["Cache-Control: max-age=60"], ["Cookie: a=1"], .shared, false),
        (200, ["Cache-Control: public, max-age=60"], ["Authorization: Bearer t"], .shared, true),
        (200, ["Cache-Control: s-maxage=60"], ["Authorization: Bearer t"], .shared, true),
        (200, ["Cache-Control: max-age=60", "Vary: *"], [], .private, false),
        (200, ["Cache-Control: no-store, must-understand, max-age=60"], [], .private, true),  // §5.2.2.3
        (304, ["Cache-Control: max-age=60"], [], .private, false),
    ]

    @Test("Storability of a response to a GET", arguments: storeCases.indices)
    func storable(row: Int) {
        let (status, response, request, mode, expected) = Self.storeCases[row]
        let get = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/items/1",
                              headerFields: Self.fields(request))
        let answer = HTTPResponse(status: .init(code: status), headerFields: Self.fields(response))
        #expect(Self.policy(mode).isStorable(answer, request: get, requestControl: CacheControl(get.headerFields)) == expected,
                "\(status) \(response) to \(request) in \(mode)")
    }

    @Test("The names never stored are told apart by length first: the same set as unstoredFields")
    func unstoredNames() {
        for name in CachePolicy.unstoredFields { #expect(CachePolicy.isUnstored(name), "\(name)") }
        for name in ["t", "tf", "trailers", "upgrades", "connectio", "connection-x", "keep_alive", "proxy-connectior",
                     "transfer-encodinG", "proxy-authenticat", "proxy-authorizatio", "content-type", "date", "etag",
                     "x-ratelimit-remaining", "proxy-authorization2", ""] {
            #expect(!CachePolicy.isUnstored(name), "\(name)")
        }
    }

    @Test("Stored fields: no hop-by-hop field, none that Connection lists, none no-cache or (shared) private names")
    func storedFields() {
        let fields = Self.fields([
            "Cache-Control: max-age=60, no-cache=\"X-Secret\", private=\"X-User\"", "Connection: close, X-Hop",
            "Keep-Alive: timeout=5", "Transfer-Encoding: chunked", "X-Hop: 1", "X-Secret: s", "X-User: u",
            "ETag: \"1\"", "Set-Cookie: a=1", "Proxy-Authenticate: Basic",
        ])
        let control = CacheControl(fields)
        let names = { (mode: CacheMode) in CachePolicy.storableFields(fields, control: control, mode: mode).map(\.name.canonicalName) }
        #expect(names(.private) == ["cache-control", "x-user", "etag", "set-cookie"])
        #expect(names(.shared) == ["cache-control", "etag", "set-cookie"])
    }

    // MARK: Validation (§4.3)

    @Test("The conditional request carries the stored validators")
    func conditional() {
        let stored = Self.stored(["ETag: \"v1\"", "Last-Modified: Thu, 01 Jan 2026 00:00:00 GMT"], age: 1)
        let request = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/items/1")
        let conditional = CachePolicy.conditional(request, for: stored)
        #expect(conditional.headerFields[.ifNoneMatch] == "\"v1\"")
        #expect(conditional.headerFields[.ifModifiedSince] == "Thu, 01 Jan 2026 00:00:00 GMT")
        let bare = CachePolicy.conditional(request, for: Self.stored([], age: 1))
        #expect(bare.headerFields[.ifNoneMatch] == nil && bare.headerFields[.ifModifiedSince] == nil)
    }

    @Test("A 304 updates the stored fields it names (not Content-Length, not hop-by-hop) and the times")
    func updateFrom304() {
        let stored = Self.stored(["Cache-Control: max-age=60", "ETag: \"v1\"", "Content-Length: 2", "X-Kept: yes"], age: 100)
        let later = Self.now.addingTimeInterval(5)
        let updated = CachePolicy.updated(stored, with: Self.fields([
            "Cache-Control: max-age=120", "ETag: \"v1\"", "Content-Length: 0", "Connection: close", "X-New: 1",
        ]), requestTime: Self.now, responseTime: later)
        #expect(updated.headers[.cacheControl] == "max-age=120")
        #expect(updated.headers[.contentLength] == "2")
        #expect(updated.headers[HTTPField.Name("X-Kept")!] == "yes")
        #expect(updated.headers[HTTPField.Name("X-New")!] == "1")
        #expect(updated.headers[.connection] == nil)
        #expect(updated.requestTime == Self.now && updated.responseTime == later)
        #expect(updated.body == stored.body)
    }

    @Test("A 304 changes a stored field where it stands, and replaces every line of a name it repeats")
    func updateFrom304InPlace() {
        let stored = Self.stored(["Cache-Control: max-age=60", "Link: <a>", "Link: <b>", "ETag: \"v1\"", "X-Kept: yes"], age: 100)
        let date = HTTPDate.format(Self.now)
        let lines = { (response: CachedResponse) in response.headers.map { "\($0.name): \($0.value)" } }

        // Only `Date` changed: every other line stays where it was, a new name comes last.
        let same = CachePolicy.updated(stored, with: Self.fields(["ETag: \"v1\"", "Date: \(date)", "X-New: 1"]),
                                       requestTime: Self.now, responseTime: Self.now)
        #expect(lines(same) == ["Date: \(date)", "Cache-Control: max-age=60", "Link: <a>", "Link: <b>", "ETag: \"v1\"",
                                "X-Kept: yes", "X-New: 1"])

        // A name stored twice is replaced whole, as is one the 304 sends twice.
        let links = CachePolicy.updated(stored, with: Self.fields(["Link: <c>"]), requestTime: Self.now, responseTime: Self.now)
        #expect(links.headers[values: .link] == ["<c>"])
        let twice = CachePolicy.updated(stored, with: Self.fields(["X-Kept: 1", "X-Kept: 2"]),
                                        requestTime: Self.now, responseTime: Self.now)
        #expect(twice.headers[values: HTTPField.Name("X-Kept")!] == ["1", "2"])
        #expect(twice.headers[values: .link] == ["<a>", "<b>"])
    }

    @Test("A 304's Cache-Control sets the freshness of the updated response; without one, the stored directives hold")
    func revalidatedFreshness() {
        let stored = Self.stored(["Cache-Control: max-age=60", "ETag: \"v1\""], age: 100)
        let policy = Self.policy(.shared)
        var second = 0.0
        func lifetime(_ lines: [String]) -> Double {
            // Each update a version of its own (the memo keeps one per response time).
            second += 1
            let time = Self.now.addingTimeInterval(second)
            return policy.revalidated(stored, notModified: Self.fields(lines), requestTime: time, responseTime: time,
                                      url: Self.url, now: time).freshness.lifetime
        }
        #expect(lifetime(["Cache-Control: max-age=600"]) == 600)
        #expect(lifetime(["Cache-Control: s-maxage=30, max-age=600"]) == 30)
        #expect(lifetime(["ETag: \"v1\""]) == 60)
        // A Cache-Control the 304 asks not to keep (Connection names it) leaves the stored one.
        #expect(lifetime(["Connection: cache-control", "Cache-Control: max-age=600"]) == 60)
    }

    // MARK: Invalidation (§4.4)

    @Test("Safe methods never invalidate", arguments: [
        (HTTPRequest.Method.get, true), (.head, true), (.options, true), (.trace, true),
        (.post, false), (.put, false), (.patch, false), (.delete, false),
    ])
    func safeMethods(method: HTTPRequest.Method, safe: Bool) {
        #expect(CachePolicy.isSafe(method) == safe)
    }
}
