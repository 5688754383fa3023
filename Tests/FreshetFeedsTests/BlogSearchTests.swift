import DaumSearchAPI
import Foundation
import Freshet
import FreshetFeeds
import FreshetSimulator
import FreshetTestSupport
import HTTPTypes
import OpenAPIRuntime
import Synchronization
import Testing

/// A Kakao client for the simulator, with the key it accepts.
func simKakaoClient(_ sim: RunningSimulator) -> APIClient {
    var headers = APIClient.standardHeaders
    headers[.authorization] = DaumSearch.authorizationValue(apiKey: sim.simulator.configuration.kakaoAPIKey)
    return APIClient(baseURL: sim.baseURL, transport: liveTransport, defaultHeaders: headers)
}

func blogPost(_ title: String, _ datetime: String, blog: String = "블로그") -> BlogPost {
    BlogPost(title: title, contents: "", url: "https://example.com/\(title.hashValue)", blogname: blog, datetime: datetime)
}

@Suite("Blog search: sorting, paging, rendering", .timeLimit(.minutes(1)))
struct BlogSearchTests {
    // MARK: Sorting

    @Test("title sorts ascending by the displayed title (tags and entities ignored, case-insensitive), stable")
    func titleOrder() {
        let posts = [
            blogPost("<b>스위프트</b> 비동기", "2020-01-01T00:00:00.000+09:00"),
            blogPost("rxSwift 입문", "2020-01-02T00:00:00.000+09:00"),
            blogPost("&quot;Combine&quot; 정리", "2020-01-03T00:00:00.000+09:00"),
            blogPost("가나다", "2020-01-04T00:00:00.000+09:00"),
            blogPost("Alamofire 10편", "2020-01-05T00:00:00.000+09:00"),
            blogPost("Alamofire 9편", "2020-01-06T00:00:00.000+09:00"),
            blogPost("<b>Combine</b>", "2020-01-07T00:00:00.000+09:00"),
            blogPost("Combine", "2020-01-08T00:00:00.000+09:00"),
        ]
        let titles = BlogSortOrder.title.apply(to: posts).map(\.title)
        #expect(titles == [
            "&quot;Combine&quot; 정리", "Alamofire 9편", "Alamofire 10편", "<b>Combine</b>", "Combine",
            "rxSwift 입문", "가나다", "<b>스위프트</b> 비동기",
        ])
    }

    @Test("datetime sorts newest first by the instant, whatever the offset; unparsable dates go last")
    func datetimeOrder() {
        let posts = [
            blogPost("a", "2017-06-14T00:00:00.000+09:00"),   // 2017-06-13 15:00 UTC
            blogPost("b", "2017-06-13T16:00:00.000Z"),        // an hour later
            blogPost("c", "not a date"),
            blogPost("d", "2017-06-13T23:59:59.999+09:00"),   // 2017-06-13 14:59:59.999 UTC
            blogPost("e", "2024-01-01T09:00:00.000+09:00"),
        ]
        #expect(BlogSortOrder.datetime.apply(to: posts).map(\.title) == ["e", "b", "a", "d", "c"])
    }

    @Test("Server orders keep the server's order; the sort key cycles without leaving the fetched order")
    func serverOrdersAndCycle() {
        let posts = [blogPost("b", "2020-01-01T00:00:00.000+09:00"), blogPost("a", "2021-01-01T00:00:00.000+09:00")]
        #expect(BlogSortOrder.accuracy.apply(to: posts).map(\.title) == ["b", "a"])
        #expect(BlogSortOrder.recency.apply(to: posts).map(\.title) == ["b", "a"])
        #expect(BlogSortOrder.accuracy.next(fetchedWith: .accuracy) == .title)
        #expect(BlogSortOrder.title.next(fetchedWith: .accuracy) == .datetime)
        #expect(BlogSortOrder.datetime.next(fetchedWith: .accuracy) == .accuracy)
        #expect(BlogSortOrder.datetime.next(fetchedWith: .recency) == .recency)
        #expect(BlogSortOrder.title.serverSort == .accuracy && BlogSortOrder.recency.serverSort == .recency)
    }

    @Test("Each order against the simulator: recency is asked of the server, title and datetime sort on the client")
    func ordersAgainstTheSimulator() async throws {
        try await withSimulator(.init()) { sim in
            let client = simKakaoClient(sim)
            let control = SimControl(sim)
            var results: [BlogSortOrder: [BlogPost]] = [:]
            for order in BlogSortOrder.allCases {
                results[order] = try await BlogSearch.page(client: client, query: "RxSwift", order: order, size: 50).value.documents
            }
            let log = try await control.log()
            let sorts = log.map { URLComponents(string: "http://x" + $0.path)?.queryItems?.first { $0.name == "sort" }?.value }
            #expect(sorts == ["accuracy", "recency", "accuracy", "accuracy"])

            let accuracy = try #require(results[.accuracy])
            #expect(accuracy.count == 50)
            let recencyDates: [Date] = try #require(results[.recency]).map { $0.date ?? .distantPast }
            #expect(recencyDates == recencyDates.sorted(by: >), "the server sorted by recency")
            let byDate = try #require(results[.datetime])
            #expect(Set(byDate.map(\.url)) == Set(accuracy.map(\.url)), "datetime re-sorts the same page")
            let byDateDates: [Date] = byDate.map { $0.date ?? .distantPast }
            let accuracyDates: [Date] = accuracy.map { $0.date ?? .distantPast }
            #expect(byDateDates == accuracyDates.sorted(by: >))
            let byTitle = try #require(results[.title]).map(\.displayTitle)
            #expect(Set(byTitle) == Set(accuracy.map(\.displayTitle)))
            #expect(byTitle != accuracy.map(\.displayTitle), "the title order differs from the server's")
            for (a, b) in zip(byTitle, byTitle.dropFirst()) {
                #expect(a.compare(b, options: [.caseInsensitive, .numeric, .widthInsensitive]) != .orderedDescending)
            }
        }
    }

    // MARK: Paging

    @Test("--all follows pages until is_end, and no further")
    func pagingToIsEnd() async throws {
        try await withSimulator(.init()) { sim in
            let client = simKakaoClient(sim)
            let first = try await BlogSearch.page(client: client, query: "냉면", size: 10).value
            #expect(!first.meta.isEnd)
            let pageable = first.meta.pageableCount
            try #require(pageable > 20 && pageable <= 100, "the query needs a few pages (has \(pageable))")
            try await SimControl(sim).resetLog()

            let pagesSeen = Mutex<[Int]>([])
            let all = try await BlogSearch.allPages(client: client, query: "냉면", size: 10) { page, _ in
                pagesSeen.withLock { $0.append(page) }
            }.value
            let expectedPages = (pageable + 9) / 10
            #expect(all.meta.isEnd)
            #expect(all.documents.count == pageable)
            #expect(Set(all.documents.map(\.url)).count == pageable, "no post twice")
            #expect(pagesSeen.withLock { $0 } == Array(1...expectedPages))
            let requested = try await SimControl(sim).log().compactMap { entry in
                URLComponents(string: "http://x" + entry.path)?.queryItems?.first { $0.name == "page" }?.value.flatMap(Int.init)
            }
            #expect(requested == Array(1...expectedPages))
        }
    }

    @Test("--all stops at page 50, the API's cap, even if the server never says is_end")
    func pagingStopsAtTheCap() async throws {
        let pages = Mutex<[Int]>([])
        let transport = ClosureTransport { request, _, _ in
            let page = URLComponents(string: "http://x" + (request.path ?? ""))?.queryItems?
                .first { $0.name == "page" }?.value.flatMap(Int.init) ?? 0
            pages.withLock { $0.append(page) }
            let body = """
                {"meta":{"total_count":99999,"pageable_count":99999,"is_end":false},
                 "documents":[{"title":"t\(page)","contents":"","url":"https://x/\(page)","blogname":"b","thumbnail":"","datetime":"2020-01-01T00:00:00.000+09:00"}]}
                """
            return (HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"]), HTTPBody(body))
        }
        let client = APIClient(baseURL: URL(string: "http://kakao.invalid")!, transport: transport)
        let result = try await BlogSearch.allPages(client: client, query: "q", size: 1, startPage: 3).value
        #expect(pages.withLock { $0 } == Array(3...50))
        #expect(result.documents.count == 48)
        #expect(!result.meta.isEnd)
    }
}
