import Foundation
import Freshet
@testable import FreshetCache
import FreshetTestSupport
import HTTPTypes
import Testing

extension CacheHarness {
    /// Sends `method` to `/scripted/<name>` and returns the body as text, with the response metadata.
    func send(_ method: HTTPRequest.Method, _ name: String, headers: HTTPFields = [:], body: Data? = nil)
        async throws -> Response<String>
    {
        let endpoint = Endpoint<String>(method: method, path: ["scripted", name], headers: headers, body: body) { data, _ in
            String(decoding: data, as: UTF8.self)
        }
        return try await client.send(endpoint)
    }
}

@Suite("RFC 9111 cache: ranges, HEAD, POST, normalised variants")
struct RangeAndMethodTests {
    @Test("Single byte ranges are cut from a stored complete response: FIRST-LAST, FIRST-, -SUFFIX; others go to the origin")
    func rangesFromCompleteResponse() async throws {
        try await withCache { h in
            try await h.control.script("r", headers: [("Cache-Control", "max-age=60"), ("ETag", #""v1""#)],
                                       body: "0123456789A")
            #expect(try await h.get("r").cache == .miss)
            for (range, text, contentRange) in [
                ("bytes=0-1", "01", "bytes 0-1/11"), ("bytes=1-", "123456789A", "bytes 1-10/11"),
                ("bytes=-1", "A", "bytes 10-10/11"), ("bytes=9-99", "9A", "bytes 9-10/11"),
            ] {
                let partial = try await h.get("r", headers: [.range: range])
                #expect(partial.status.code == 206, "\(range)")
                #expect(partial.cache == .hit, "\(range)")
                #expect(partial.value == text, "\(range)")
                #expect(partial.headers[.contentRange] == contentRange, "\(range)")
                #expect(partial.headers[.contentLength] == String(text.utf8.count), "\(range)")
            }
            #expect(try await h.requests("r").count == 1, "every range came from the store")

            // If-Range with another entity tag: the whole stored response, still from the store.
            let whole = try await h.get("r", headers: [.range: "bytes=0-1", .ifRange: #""v0""#])
            #expect(whole.status.code == 200)
            #expect(whole.value == "0123456789A")
            #expect(whole.cache == .hit)
            let matching = try await h.get("r", headers: [.range: "bytes=0-1", .ifRange: #""v1""#])
            #expect(matching.status.code == 206)
            #expect(matching.value == "01")

            // Several ranges, an unsatisfiable one, another unit: the origin answers.
            for range in ["bytes=0-1,3-4", "bytes=20-", "items=0-1"] {
                _ = try await h.get("r", headers: [.range: range])
            }
            let log = try await h.requests("r")
            #expect(log.count == 4)
            #expect(log.dropFirst().map { $0.headers["range"] } == ["bytes=0-1,3-4", "bytes=20-", "items=0-1"])
        }
    }

    @Test("A stored 206 answers the ranges inside it and nothing else; a 206 whose body disagrees with Content-Range is not stored")
    func storedPartialContent() async throws {
        try await withCache { h in
            try await h.control.script("p", status: 206, headers: [
                ("Cache-Control", "max-age=60"), ("Content-Range", "bytes 4-8/10"),
            ], body: "45678")
            let first = try await h.get("p", headers: [.range: "bytes=4-8"])
            #expect(first.status.code == 206)
            #expect(first.cache == .miss)
            let inside = try await h.get("p", headers: [.range: "bytes=5-6"])
            #expect(inside.cache == .hit)
            #expect(inside.value == "56")
            #expect(inside.headers[.contentRange] == "bytes 5-6/10")
            let tail = try await h.get("p", headers: [.range: "bytes=-2"])
            #expect(tail.cache == .miss, "bytes 8-9: byte 9 is not held")
            #expect(try await h.get("p", headers: [.range: "bytes=0-3"]).cache == .miss)
            #expect(try await h.get("p").cache == .miss, "a request for the whole is never answered with a part")
            #expect(try await h.requests("p").count == 4)

            // The complete response replaces the part and answers every range after it.
            try await h.control.script("p", headers: [("Cache-Control", "max-age=60")], body: "0123456789")
            #expect(try await h.get("p").cache == .miss)
            let cut = try await h.get("p", headers: [.range: "bytes=-2"])
            #expect(cut.cache == .hit)
            #expect(cut.value == "89")

            // Content-Range says six bytes, the body has five: not stored.
            try await h.control.script("q", status: 206, headers: [
                ("Cache-Control", "max-age=60"), ("Content-Range", "bytes 4-9/10"),
            ], body: "01234")
            _ = try await h.get("q", headers: [.range: "bytes=-5"])
            #expect(try await h.get("q", headers: [.range: "bytes=-5"]).cache == .miss)
            #expect(try await h.requests("q").count == 2)
        }
    }

    @Test("A 206 never replaces a stored complete response: the stale whole is still revalidated afterwards")
    func partialKeepsComplete() async throws {
        try await withCache { h in
            try await h.control.script("c", headers: [("Cache-Control", "max-age=1"), ("ETag", #""c1""#)],
                                       body: "0123456789")
            _ = try await h.get("c")
            try await h.advance(5)
            try await h.control.script("c", status: 206, headers: [
                ("Cache-Control", "max-age=60"), ("ETag", #""c1""#), ("Content-Range", "bytes 0-1/10"),
            ], body: "01")
            let part = try await h.get("c", headers: [.range: "bytes=0-1"])
            #expect(part.status.code == 206)
            #expect(part.cache == .miss, "a stale whole is not cut: the origin answers the range")
            try await h.control.script("c", headers: [("Cache-Control", "max-age=60"), ("ETag", #""c1""#)],
                                       body: "0123456789")
            let whole = try await h.get("c")
            #expect(whole.cache == .revalidated)
            #expect(whole.value == "0123456789")
            #expect(try await h.requests("c").last?.headers["if-none-match"] == #""c1""#)
        }
    }

    @Test("§4.3.5 a 200 to HEAD with the stored validators freshens the stored GET response; other validators do not")
    func headFreshens() async throws {
        try await withCache { h in
            try await h.control.script("h", headers: [
                ("Cache-Control", "max-age=1"), ("ETag", #""h1""#), ("X-A", "1"),
            ], body: "hello")
            _ = try await h.get("h")
            try await h.advance(5)
            try await h.control.script("h", headers: [
                ("Cache-Control", "max-age=100"), ("ETag", #""h1""#), ("X-A", "2"),
            ], body: "hello")
            let head = try await h.send(.head, "h")
            #expect(head.cache == .revalidated)
            #expect(head.headers[HTTPField.Name("X-A")!] == "2")
            #expect(head.value.isEmpty)
            let get = try await h.get("h")
            #expect(get.cache == .hit, "the HEAD's max-age=100 is in force")
            #expect(get.value == "hello")
            #expect(get.headers[HTTPField.Name("X-A")!] == "2")
            #expect(try await h.requests("h").map(\.method) == ["GET", "HEAD"])

            try await h.advance(200)
            try await h.control.script("h", headers: [
                ("Cache-Control", "max-age=100"), ("ETag", #""h2""#), ("X-A", "3"),
            ], body: "world")
            #expect(try await h.send(.head, "h").cache == .miss)
            let after = try await h.get("h")
            #expect(after.cache == .miss, "a HEAD describing another representation does not freshen the stored one")
            #expect(after.value == "world")
        }
    }

    @Test("RFC 9110 §9.3.3 a POST response with explicit freshness and Content-Location = its URI answers later GETs")
    func cacheablePost() async throws {
        try await withCache { h in
            try await h.control.script("post", headers: [("Cache-Control", "max-age=60")], body: "from-get",
                                       unsafeHeaders: [("Cache-Control", "max-age=60"), ("Content-Location", "/scripted/post"),
                                                       ("X-From", "post")])
            _ = try await h.send(.post, "post", body: Data("12345".utf8))
            let get = try await h.get("post")
            #expect(get.cache == .hit)
            #expect(get.headers[HTTPField.Name("X-From")!] == "post")
            #expect(try await h.requests("post").map(\.method) == ["POST"])

            // Another Content-Location, or no explicit freshness: nothing is stored.
            for (name, headers) in [
                ("other", [("Cache-Control", "max-age=60"), ("Content-Location", "/scripted/elsewhere")]),
                ("implicit", [("Content-Location", "/scripted/implicit")]),
            ] {
                try await h.control.script(name, headers: [("Cache-Control", "max-age=60")], body: "from-get",
                                           unsafeHeaders: headers)
                _ = try await h.send(.post, name, body: Data("12345".utf8))
                let answer = try await h.get(name)
                #expect(answer.cache == .miss, "\(name)")
                #expect(answer.value == "from-get", "\(name)")
            }
        }
    }

    @Test("§4.1 Vary: Accept-Language matches regardless of the order, case and spacing of the languages")
    func normalisedLanguages() async throws {
        try await withCache { h in
            try await h.control.script("v", headers: [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")],
                                       body: "hallo")
            _ = try await h.get("v", headers: [.acceptLanguage: "en, de"])
            #expect(try await h.get("v", headers: [.acceptLanguage: "DE,EN"]).cache == .hit)
            #expect(try await h.get("v", headers: [.acceptLanguage: " en ,   de"]).cache == .hit)
            #expect(try await h.get("v", headers: [.acceptLanguage: "en, fr"]).cache == .miss)
            #expect(try await h.get("v", headers: [.acceptLanguage: "en;q=0.5, de"]).cache == .miss)
        }
    }
}

@Suite("Byte-range grammar")
struct ByteRangeGrammarTests {
    @Test("Range values: one byte range or nothing")
    func parsing() {
        func cut(_ value: String) -> ClosedRange<Int>? {
            ByteRangeRequest(value)?.resolve(length: 10)
        }
        #expect(cut("bytes=0-1") == 0...1)
        #expect(cut("BYTES=2-") == 2...9)
        #expect(cut("bytes=-3") == 7...9)
        #expect(cut("bytes=-30") == 0...9)
        #expect(cut("bytes=5-50") == 5...9)
        for invalid in ["bytes=", "bytes=-", "bytes=-0", "bytes=3-2", "bytes=a-b", "bytes=0-1,2-3", "items=0-1",
                        "bytes=10-", "bytes=+1-2", "bytes=1-+2"] {
            #expect(cut(invalid) == nil, "\(invalid)")
        }
        #expect(ContentRange("bytes 4-8/10") == ContentRange(range: 4...8, completeLength: 10))
        #expect(ContentRange("bytes 4-8/*") == ContentRange(range: 4...8, completeLength: nil))
        for invalid in ["bytes 4-8/8", "bytes 8-4/10", "bytes */10", "items 0-1/2", "bytes 4-8"] {
            #expect(ContentRange(invalid) == nil, "\(invalid)")
        }
    }
}
