import DaumSearchAPI
import Foundation
import Freshet
import Testing
import HTTPTypes

private let exampleJSON = """
{"meta": {"total_count": 8361, "pageable_count": 800, "is_end": false},
 "documents": [{"title": "스위프트 <b>비동기</b> 프로그래밍",
                "contents": "…<b>RxSwift</b>와 Combine을 비교하면 &quot;…&quot;",
                "url": "https://brunch.co.kr/@example/12",
                "blogname": "개발 일지",
                "thumbnail": "https://search1.kakaocdn.net/argon/130x130_85_c/abc",
                "datetime": "2017-06-14T00:00:00.000+09:00"}]}
"""

private func post(datetime: String, thumbnail: String = "") -> BlogPost {
    BlogPost(title: "t", contents: "c", url: "https://x.example", blogname: "b", thumbnail: thumbnail, datetime: datetime)
}

// MARK: - Search results

@Test func decodesTheBlogExample() throws {
    // Through the endpoint, with a plain decoder, as an APIClient would call it.
    let result = try DaumSearch.blog(query: "x").decode(Data(exampleJSON.utf8), JSONDecoder())
    #expect(result.meta == .init(totalCount: 8361, pageableCount: 800, isEnd: false))
    #expect(result.hasNextPage)
    let document = try #require(result.documents.first)
    #expect(document.title == "스위프트 <b>비동기</b> 프로그래밍")
    #expect(document.contents == "…<b>RxSwift</b>와 Combine을 비교하면 &quot;…&quot;")
    #expect(document.url == "https://brunch.co.kr/@example/12")
    #expect(document.blogname == "개발 일지")
    #expect(document.thumbnail == "https://search1.kakaocdn.net/argon/130x130_85_c/abc")
    #expect(document.thumbnailURL == URL(string: "https://search1.kakaocdn.net/argon/130x130_85_c/abc"))
    #expect(document.datetime == "2017-06-14T00:00:00.000+09:00")
}

@Test func datetimeWithMillisecondsAndOffsetIsTheExactInstant() throws {
    let document = post(datetime: "2017-06-14T00:00:00.000+09:00")
    let date = try #require(document.date)
    // 2017-06-14T00:00:00.000+09:00 == 2017-06-13T15:00:00Z
    #expect(date == Date(timeIntervalSince1970: 1_497_366_000))
    #expect(date == (try Date("2017-06-13T15:00:00Z", strategy: .iso8601)))
}

@Test func otherDatetimeForms() {
    #expect(post(datetime: "2017-06-14T00:00:00+09:00").date == Date(timeIntervalSince1970: 1_497_366_000))
    #expect(post(datetime: "2017-06-13T15:00:00Z").date == Date(timeIntervalSince1970: 1_497_366_000))
    #expect(post(datetime: "2017-06-13T15:00:00.000Z").date == Date(timeIntervalSince1970: 1_497_366_000))
    #expect(post(datetime: "2017-06-14T00:00:00+0900").date == Date(timeIntervalSince1970: 1_497_366_000))
    #expect(post(datetime: "2024-02-29T23:59:59.250-05:30").date == Date(timeIntervalSince1970: 1_709_270_999.25))
    #expect(post(datetime: "1970-01-01T00:00:00Z").date == Date(timeIntervalSince1970: 0))
    #expect(post(datetime: "2017-06-13T15:00:00.123456789123Z").date == Date(timeIntervalSince1970: 1_497_366_000.123456789))
    #expect(post(datetime: "1969-12-31T23:59:59Z").date == Date(timeIntervalSince1970: -1))
}

@Test func invalidDatetimesGiveNil() {
    for text in [
        "", "2017-06-14", "2017-06-14T00:00:00", "2017-06-14T00:00:00.000",  // no offset: no instant
        "2017-02-29T00:00:00Z", "2017-13-01T00:00:00Z", "2017-06-14T24:00:00Z", "2017-06-14T00:00:00.Z",
        "2017-06-14 00:00:00Z", "2017-06-14T00:00:00+9:00", "2017-06-14T00:00:00Zjunk", "14/06/2017",
    ] {
        #expect(post(datetime: text).date == nil, "\(text)")
    }
    #expect(post(datetime: "2016-02-29T00:00:00Z").date != nil)
}

@Test func emptyThumbnail() throws {
    let json = exampleJSON.replacingOccurrences(of: "https://search1.kakaocdn.net/argon/130x130_85_c/abc", with: "")
    let result = try DaumSearch.decoder.decode(BlogSearchResult.self, from: Data(json.utf8))
    let document = try #require(result.documents.first)
    #expect(document.thumbnail == "")
    #expect(document.thumbnailURL == nil)
    let encoded = String(decoding: try DaumSearch.encoder.encode(document), as: UTF8.self)
    #expect(encoded.contains(#""thumbnail":"""#))
}

@Test func lastPage() throws {
    let json = #"{"meta": {"total_count": 3, "pageable_count": 3, "is_end": true}, "documents": []}"#
    let result = try DaumSearch.decoder.decode(BlogSearchResult.self, from: Data(json.utf8))
    #expect(!result.hasNextPage)
    #expect(result.documents.isEmpty)
}

@Test func resultsEncodeWithKakaoNamesAndRoundTrip() throws {
    let result = try DaumSearch.decoder.decode(BlogSearchResult.self, from: Data(exampleJSON.utf8))
    let data = try DaumSearch.encoder.encode(result)
    let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    let meta = try #require(object["meta"] as? [String: Any])
    #expect(meta["total_count"] as? Int == 8361)
    #expect(meta["pageable_count"] as? Int == 800)
    #expect(meta["is_end"] as? Bool == false)
    let document = try #require((object["documents"] as? [[String: Any]])?.first)
    #expect(document["datetime"] as? String == "2017-06-14T00:00:00.000+09:00")
    #expect(Set(document.keys) == ["title", "contents", "url", "blogname", "thumbnail", "datetime"])
    #expect(try DaumSearch.decoder.decode(BlogSearchResult.self, from: data) == result)
}

// MARK: - Errors

@Test func documentedErrorShape() throws {
    let body = try DaumSearch.decoder.decode(KakaoErrorBody.self, from: Data(#"{"code": -401, "msg": "InvalidAccessToken"}"#.utf8))
    #expect(body.message == "InvalidAccessToken")
    #expect(body.code == -401)
    #expect(body.errorType == nil)
    #expect(body.description == "InvalidAccessToken")
    let encoded = try JSONSerialization.jsonObject(with: DaumSearch.encoder.encode(body)) as? [String: Any]
    #expect(encoded?["msg"] as? String == "InvalidAccessToken")
    #expect(encoded?["code"] as? Int == -401)
}

@Test(arguments: [
    ("AccessDeniedError", "wrong appKey(null) format"),
    ("MissingParameter", "query parameter required"),
    ("InvalidArgument", "page is more than max"),
])
func liveErrorShape(errorType: String, message: String) throws {
    let json = #"{"errorType": "\#(errorType)", "message": "\#(message)"}"#
    let body = try DaumSearch.decoder.decode(KakaoErrorBody.self, from: Data(json.utf8))
    #expect(body.errorType == errorType)
    #expect(body.message == message)
    #expect(body.code == nil)
    #expect(body.description == "\(errorType): \(message)")
    let again = try DaumSearch.decoder.decode(KakaoErrorBody.self, from: DaumSearch.encoder.encode(body))
    #expect(again == body)
}

@Test func errorBodyWithoutAMessageFails() {
    #expect(throws: DecodingError.self) {
        try DaumSearch.decoder.decode(KakaoErrorBody.self, from: Data(#"{"code": -1}"#.utf8))
    }
}

// MARK: - Endpoint

@Test func blogEndpointEncodesKoreanQueries() throws {
    let endpoint = DaumSearch.blog(query: "스위프트 비동기")
    #expect(endpoint.pathSegments == ["v2", "search", "blog"])
    #expect(try endpoint.encodedTarget() ==
        "/v2/search/blog?query=%EC%8A%A4%EC%9C%84%ED%94%84%ED%8A%B8%20%EB%B9%84%EB%8F%99%EA%B8%B0&sort=accuracy&page=1&size=10")
    #expect(try DaumSearch.blog(query: "a&b=c+d", sort: .recency, page: 3, size: 50).encodedTarget()
        == "/v2/search/blog?query=a%26b%3Dc%2Bd&sort=recency&page=3&size=50")
}

@Test func theKeyIsNotPartOfTheEndpoint() {
    #expect(DaumSearch.blog(query: "x").headers[.authorization] == nil)
    #expect(DaumSearch.authorizationValue(apiKey: "abc123") == "KakaoAK abc123")
    #expect(DaumSearch.defaultBaseURL.absoluteString == "https://dapi.kakao.com")
    #expect(BlogSort.allCases.map(\.rawValue) == ["accuracy", "recency"])
}
