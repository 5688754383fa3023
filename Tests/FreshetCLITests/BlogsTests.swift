import Foundation
import Freshet
import FreshetSimulator
import FreshetTestSupport
import HTTPTypes
import Testing

@Suite("freshet blogs: end to end", .timeLimit(.minutes(2)))
struct BlogsTests {
    static let key = "sim-kakao-key"

    /// The posts of a `--json` answer.
    func documents(_ stdout: String) throws -> [[String: Any]] {
        try #require(try jsonDictionary(stdout)["documents"] as? [[String: Any]])
    }

    @Test("blogs QUERY --sort title: KakaoAK header sent, rows sorted by title, highlights stripped without a terminal")
    func titleSorted() async throws {
        try await withFreshetCLI { cli in
            let result = try await cli.run("blogs", "스위프트", "--sort", "title")
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("116 posts for “스위프트” (showing 10) · sorted by title") == true)
            let rows = stride(from: 1, to: lines.count, by: 2).map { lines[$0] }
            let urls = stride(from: 2, to: lines.count, by: 2).map { lines[$0] }
            #expect(rows.count == 10 && urls.count == 10)
            let titles = rows.map(BlogRow.title)
            #expect(titles.allSatisfy { $0.contains("스위프트") })
            for (a, b) in zip(titles, titles.dropFirst() ) {
                #expect(a.compare(b, options: [.caseInsensitive, .numeric, .widthInsensitive]) != .orderedDescending, "\(a) before \(b)")
            }
            #expect(urls.allSatisfy { $0.trimmingCharacters(in: .whitespaces).hasPrefix("http") })
            #expect(!result.stdout.contains("<b>") && !result.stdout.contains("\u{1B}"), "no tags, no escapes off a terminal")

            let log = try await SimControl(cli.sim).log()
            #expect(log.count == 1)
            #expect(log[0].headers["authorization"] == "KakaoAK \(Self.key)")
            #expect(loggedQueryItems(log[0].path) == ["query": "스위프트", "sort": "accuracy", "page": "1", "size": "10"])
        }
    }

    @Test("--json: the documents with Kakao's field names plus meta; title and contents as the rows show them")
    func json() async throws {
        try await withFreshetCLI { cli in
            let result = try await cli.run("blogs", "RxSwift", "--json", "--size", "5")
            #expect(result.status == 0, "\(result.stderr)")
            let body = try jsonDictionary(result.stdout)
            let meta = try #require(body["meta"] as? [String: Any])
            #expect(meta["total_count"] is Int && meta["pageable_count"] is Int && meta["is_end"] as? Bool == false)
            let documents = try documents(result.stdout)
            #expect(documents.count == 5)
            for document in documents {
                for key in ["title", "contents", "url", "blogname", "thumbnail", "datetime"] { #expect(document[key] is String, "\(key)") }
            }
            #expect((documents[0]["datetime"] as? String)?.hasSuffix("+09:00") == true)

            // Text values as the rows show them: no `<b>` highlights, entities decoded.
            var search = Endpoint<Data>.raw("v2", "search", "blog", query: [.init("query", "RxSwift"), .init("size", "5")])
            search.headers[.authorization] = "KakaoAK \(cli.sim.simulator.configuration.kakaoAPIKey)"
            let raw = try await APIClient(baseURL: cli.sim.baseURL, transport: liveTransport).value(search)
            let upstream = try #require(try jsonDictionary(String(decoding: raw, as: UTF8.self))["documents"] as? [[String: Any]])
            #expect(upstream.contains { ($0["title"] as? String)?.contains("<b>") == true }, "Kakao highlights matches")
            let rows = try await cli.run("blogs", "RxSwift", "--size", "5", "--contents", environment: ["COLUMNS": "400"])
            for (document, sent) in zip(documents, upstream) {
                for key in ["title", "contents"] {
                    // Kakao marks matches with <b>…</b> only; then the entities, `&amp;` last.
                    let plain = try #require(sent[key] as? String).replacingOccurrences(of: "<b>", with: "")
                        .replacingOccurrences(of: "</b>", with: "").replacingOccurrences(of: "&lt;", with: "<")
                        .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&quot;", with: "\"")
                        .replacingOccurrences(of: "&#39;", with: "'").replacingOccurrences(of: "&amp;", with: "&")
                    #expect(document[key] as? String == plain, "\(key): \(sent[key] ?? "")")
                }
                let title = try #require(document["title"] as? String)
                #expect(rows.stdout.contains(title), "the row shows “\(title)”")
            }
        }
    }

    @Test("--sort recency is asked of the server; --sort datetime sorts newest first on the client")
    func dateOrders() async throws {
        try await withFreshetCLI { cli in
            func dates(_ stdout: String) throws -> [String] {
                try documents(stdout).compactMap { $0["datetime"] as? String }
            }
            let recency = try await cli.run("blogs", "RxSwift Combine", "--sort", "recency", "--size", "20", "--json")
            #expect(recency.status == 0, "\(recency.stderr)")
            let byDate = try await cli.run("blogs", "RxSwift Combine", "--sort", "datetime", "--size", "20", "--json")
            #expect(byDate.status == 0, "\(byDate.stderr)")
            let accuracy = try await cli.run("blogs", "RxSwift Combine", "--size", "20", "--json")
            let parse = { (text: String) in try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) }
            let recencyDates = try dates(recency.stdout).map(parse)
            #expect(recencyDates.count > 10 && recencyDates == recencyDates.sorted(by: >))
            let datetimeDates = try dates(byDate.stdout).map(parse)
            #expect(datetimeDates == datetimeDates.sorted(by: >))
            #expect(Set(try dates(byDate.stdout)) == Set(try dates(accuracy.stdout)), "the same page, re-sorted")
            #expect(try dates(byDate.stdout) != (try dates(accuracy.stdout)), "accuracy is not by date for this query")
            let sorts = try await SimControl(cli.sim).log().map { loggedQueryItems($0.path)["sort"] }
            #expect(sorts == ["recency", "accuracy", "accuracy"])
        }
    }

    @Test("--all follows pages until is_end")
    func allPages() async throws {
        try await withFreshetCLI { cli in
            let result = try await cli.run("blogs", "냉면", "--all", "--size", "10", "--json")
            #expect(result.status == 0, "\(result.stderr)")
            let body = try jsonDictionary(result.stdout)
            let meta = try #require(body["meta"] as? [String: Any])
            let pageable = try #require(meta["pageable_count"] as? Int)
            #expect(meta["is_end"] as? Bool == true)
            #expect(try documents(result.stdout).count == pageable)
            let pages = try await SimControl(cli.sim).log().compactMap { loggedQueryItems($0.path)["page"].flatMap { Int($0) } }
            #expect(pages == Array(1...((pageable + 9) / 10)))
        }
    }

    @Test("--contents adds each post's snippet under its URL")
    func contents() async throws {
        try await withFreshetCLI { cli in
            let result = try await cli.run("blogs", "냉면", "--size", "3", "--contents")
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 1 + 3 * 3)
            #expect(lines[3].trimmingCharacters(in: .whitespaces).contains("냉면"))
        }
    }

    @Test("Missing key: the message names KAKAO_REST_API_KEY, nothing is sent, exit 1")
    func missingKey() async throws {
        try await withFreshetCLI { cli in
            let result = try await cli.run("blogs", "스위프트", environment: ["KAKAO_REST_API_KEY": ""])
            #expect(result.status == 1)
            #expect(result.stderr.contains("set KAKAO_REST_API_KEY"))
            #expect(result.stdout.isEmpty)
            #expect(try await SimControl(cli.sim).log().isEmpty)
        }
    }

    @Test("A refused key (live error shape): Kakao's message and what to set; exit 2")
    func refusedKey() async throws {
        try await withFreshetCLI { cli in
            let result = try await cli.run("blogs", "스위프트", environment: ["KAKAO_REST_API_KEY": "not-the-key"])
            #expect(result.status == 2)
            #expect(result.stderr.contains("cannot find appKey"))
            #expect(result.stderr.contains("KAKAO_REST_API_KEY"))
        }
    }

    @Test("Both error body shapes are shown with their message")
    func errorShapes() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            try await control.fault(route: "/v2/search/blog", status: 401, body: #"{"code":-401,"msg":"invalid app key (documented shape)"}"#)
            let documented = try await cli.run("blogs", "스위프트")
            #expect(documented.status == 2)
            #expect(documented.stderr.contains("invalid app key (documented shape)"))

            try await control.fault(route: "/v2/search/blog", status: 400, body: #"{"errorType":"InvalidArgument","message":"page is more than max"}"#)
            let live = try await cli.run("blogs", "스위프트")
            #expect(live.status == 2)
            #expect(live.stderr.contains("page is more than max"))
            #expect(live.stderr.contains("InvalidArgument"))

            let missing = try await cli.run("blogs", " ")
            #expect(missing.status == 2)
            #expect(missing.stderr.contains("query parameter required"))
        }
    }

    @Test("The key never appears in output or logs, even when an error body echoes it")
    func keyNeverShown() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            let verbose = ["FRESHET_LOG": "trace"]
            let ok = try await cli.run("blogs", "스위프트", "--verbose", environment: verbose)
            #expect(ok.status == 0, "\(ok.stderr)")
            #expect(ok.stderr.contains("/v2/search/blog"), "the exchange was logged")
            try await control.fault(route: "/v2/search/blog", status: 401,
                                    body: #"{"errorType":"AccessDeniedError","message":"wrong appKey(KakaoAK sim-kakao-key) format"}"#)
            let echoed = try await cli.run("blogs", "스위프트", "--verbose", environment: verbose)
            #expect(echoed.status == 2)
            #expect(echoed.stderr.contains("wrong appKey("))
            try await control.fault(route: "/v2/search/blog", status: 401,
                                    body: #"{"errorType":"AccessDeniedError","message":"wrong appKey(KakaoAK sim-kakao-key) format"}"#)
            let piped = try await cli.run(["blogs", "--verbose"], stdin: "스위프트\n", environment: verbose)
            #expect(piped.status == 2)
            for result in [ok, echoed, piped] {
                #expect(!result.stdout.contains(Self.key) && !result.stderr.contains(Self.key))
            }
        }
    }

    @Test("An empty result says \"no posts found\"; exit 0")
    func noPosts() async throws {
        try await withFreshetCLI { cli in
            let result = try await cli.run("blogs", "zzqqxx없는말")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("no posts found"))
        }
    }

    @Test("A network failure is a clear message; exit 2")
    func networkFailure() async throws {
        let closed = try await closedLoopbackURL()
        try await withFreshetCLI { cli in
            let result = try await cli.run("blogs", "스위프트", environment: ["FRESHET_KAKAO_URL": closed.absoluteString])
            #expect(result.status == 2)
            #expect(result.stderr.contains("could not connect"))
            #expect(!result.stderr.contains(Self.key))
        }
    }

    @Test("blogs without a terminal: one query per line from stdin; --json gives one document per line")
    func queriesFromStdin() async throws {
        try await withFreshetCLI { cli in
            let text = try await cli.run(["blogs", "--size", "2", "--sort", "datetime"], stdin: "냉면\n\n경주 냉면\n")
            #expect(text.status == 0, "\(text.stderr)")
            let blocks = text.stdout.components(separatedBy: "\n\n")
            #expect(blocks.count == 2)
            #expect(blocks[0].hasPrefix("49 posts for “냉면” (showing 2) · sorted by datetime"))
            #expect(blocks[1].contains("posts for “경주 냉면”"))

            let json = try await cli.run(["blogs", "--size", "2", "--json"], stdin: "냉면\n경주 냉면\n")
            #expect(json.status == 0, "\(json.stderr)")
            let lines = json.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 2)
            #expect(try lines.allSatisfy { try documents($0).count == 2 })
            let queries = try await SimControl(cli.sim).log().map { loggedQueryItems($0.path)["query"] }
            #expect(queries == ["냉면", "경주 냉면", "냉면", "경주 냉면"])
        }
    }
}

/// Reading `freshet blogs` rows: `yyyy-MM-dd HH:mm`, two spaces, the blog name padded by
/// display width, two or more spaces, the title.
enum BlogRow {
    static func title(_ row: String) -> String {
        guard let match = row.firstMatch(of: /^.{16}  (.+?) {2,}(\S.*)$/) else { return "" }
        return String(match.output.2)
    }
}
