import Foundation
import Freshet
import FreshetTestSupport
import Testing

/// The proxy's hit path: stored responses written with a head made once per stored response.
@Suite("freshet proxy: the hit path")
struct ProxyHitPathTests {
    /// One response read off the wire.
    struct WireResponse {
        var statusLine: String
        var fields: [(name: String, value: String)]
        var body: String

        func values(_ name: String) -> [String] {
            fields.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
        }
    }

    /// Splits `text` into responses; `bodiless[i]` says response `i` answers a `HEAD` (no body
    /// whatever its `Content-Length`). `nil` while `text` does not hold them all yet.
    static func responses(_ text: String, bodiless: [Bool]) -> [WireResponse]? {
        parse(text, bodiless: bodiless)?.answers
    }

    /// Like ``responses(_:bodiless:)``, with what follows the last answer.
    static func parse(_ text: String, bodiless: [Bool]) -> (answers: [WireResponse], rest: Substring)? {
        var rest = Substring(text)
        var found: [WireResponse] = []
        for headOnly in bodiless {
            guard let end = rest.range(of: "\r\n\r\n") else { return nil }
            var lines = rest[..<end.lowerBound].components(separatedBy: "\r\n")
            let statusLine = lines.removeFirst()
            let fields = lines.compactMap { line -> (String, String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            rest = rest[end.upperBound...]
            let length = headOnly ? 0 : fields.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) } ?? 0
            guard rest.utf8.count >= length else { return nil }
            let bodyEnd = rest.utf8.index(rest.startIndex, offsetBy: length)
            found.append(WireResponse(statusLine: statusLine, fields: fields, body: String(rest[..<bodyEnd])))
            rest = rest[bodyEnd...]
        }
        return (found, rest)
    }

    @Test("Pipelined GET, HEAD, GET hits on one connection: in order, one Content-Length for a chunked origin answer, no body to HEAD")
    func pipelinedHits() async throws {
        let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\nCache-Control: public, max-age=600\r\n"
            + "ETag: \"v1\"\r\nDate: \(HTTPDate.format(Date()))\r\nContent-Type: application/json\r\n\r\n"
            + "4\r\n{\"v\"\r\n3\r\n:1}\r\n0\r\n\r\n"
        let origin = try RawOrigin(responses: [chunked])
        defer { origin.stop() }
        try await withFreshetCLI { cli in
            try await withProxy(cli, origin: origin.url.absoluteString) { _, base in
                let miss = try await curl([base + "/hit/path"])
                #expect(miss.header("X-Cache") == "MISS")
                #expect(miss.body == #"{"v":1}"#)

                let client = try RawClient(port: try #require(URL(string: base)?.port))
                defer { client.close() }
                let request = { (method: String) in "\(method) /hit/path HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: t\r\n\r\n" }
                // A fourth request, a HEAD, asks the proxy to close the connection after it: all
                // the proxy wrote is read, to the end, so a stray byte after any answer shows.
                let closing = "HEAD /hit/path HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: t\r\nConnection: close\r\n\r\n"
                client.send(request("GET") + request("HEAD") + request("GET") + closing)
                let shape = [false, true, false, true]
                let text = await client.read()
                let (all, rest) = try #require(Self.parse(text, bodiless: shape), "four answers: \(text.prefix(1500))")
                #expect(rest.isEmpty, "nothing after the fourth answer: \(rest.prefix(300).debugDescription)")
                #expect(all[3].statusLine == "HTTP/1.1 200 OK", "\(all[3])")
                let answers = Array(all.prefix(3))
                for (index, answer) in answers.enumerated() {
                    #expect(answer.statusLine == "HTTP/1.1 200 OK", "answer \(index)")
                    #expect(answer.values("X-Cache") == ["HIT"], "answer \(index): \(answer.fields)")
                    #expect(answer.values("Content-Length") == ["7"], "answer \(index): \(answer.fields)")
                    #expect(answer.values("Transfer-Encoding").isEmpty, "answer \(index): \(answer.fields)")
                    #expect(answer.values("Age").count == 1 && Int(answer.values("Age")[0]) != nil, "answer \(index)")
                    #expect(answer.values("Via") == ["1.1 freshet"], "answer \(index)")
                    #expect(answer.values("ETag") == ["\"v1\""], "answer \(index)")
                    #expect(answer.values("Connection").isEmpty, "answer \(index)")
                }
                #expect(answers[0].body == #"{"v":1}"#)
                #expect(answers[1].body.isEmpty)
                #expect(answers[2].body == #"{"v":1}"#)
                #expect(origin.received.count == 1, "the hits made no origin request")
            }
        }
    }

    @Test("A stored response replaced after a revalidation is answered with its new head and body, not the prepared old one")
    func replacedStoredResponse() async throws {
        let answer = { (etag: String, body: String) in
            "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n"
                + "Cache-Control: public, max-age=600\r\nETag: \"\(etag)\"\r\nDate: \(HTTPDate.format(Date()))\r\n\r\n" + body
        }
        let origin = try RawOrigin(responses: [answer("v1", "first"), answer("v2", "second!")])
        defer { origin.stop() }
        try await withFreshetCLI { cli in
            try await withProxy(cli, origin: origin.url.absoluteString) { _, base in
                #expect(try await curl([base + "/replaced"]).header("X-Cache") == "MISS")
                let hit = try await curl([base + "/replaced"])
                #expect(hit.header("X-Cache") == "HIT")
                #expect(hit.body == "first")

                // no-cache makes the proxy validate; the origin answers a new representation.
                let refreshed = try await curl(["-H", "Cache-Control: no-cache", base + "/replaced"])
                #expect(refreshed.body == "second!")
                #expect(origin.received.count == 2)
                #expect(origin.received.last?.values("If-None-Match") == ["\"v1\""])

                let again = try await curl([base + "/replaced"])
                #expect(again.header("X-Cache") == "HIT")
                #expect(again.body == "second!")
                #expect(again.header("ETag") == "\"v2\"")
                #expect(again.header("Content-Length") == "7")
                #expect(origin.received.count == 2)
            }
        }
    }
}
