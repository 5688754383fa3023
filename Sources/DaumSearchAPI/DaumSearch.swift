import Foundation
import Freshet

/// The Kakao (Daum) search API endpoints, as Freshet `Endpoint` values.
///
/// Every request needs `Authorization: KakaoAK {REST_API_KEY}`. The endpoints do not carry the
/// key: the client adds the header (build it with ``authorizationValue(apiKey:)``), so an
/// endpoint value never holds a secret.
///
/// ```swift
/// var headers = APIClient.standardHeaders
/// headers[.authorization] = DaumSearch.authorizationValue(apiKey: key)
/// let client = APIClient(baseURL: DaumSearch.defaultBaseURL, transport: transport, defaultHeaders: headers)
/// let result = try await client.value(DaumSearch.blog(query: "스위프트", sort: .recency))
/// ```
public enum DaumSearch {
    /// `https://dapi.kakao.com`.
    public static let defaultBaseURL = URL(string: "https://dapi.kakao.com")!

    /// The valid `page` numbers: 1 through 50.
    public static let pageRange = 1...50

    /// The valid `size` (results per page): 1 through 50.
    public static let sizeRange = 1...50

    /// The `Authorization` header value for a REST API key: `KakaoAK {apiKey}`.
    public static func authorizationValue(apiKey: String) -> String {
        "KakaoAK \(apiKey)"
    }

    /// `GET /v2/search/blog`: blog posts matching `query`.
    ///
    /// The service answers `400` (`InvalidArgument`) for a page or size outside 1…50; when
    /// ``BlogSearchResult/Meta/isEnd`` is `false` there is a next page.
    /// - Parameters:
    ///   - query: the search text (any language; it is percent-encoded as UTF-8).
    ///   - sort: ``BlogSort/accuracy`` (default) or ``BlogSort/recency``.
    ///   - page: the page, 1…50.
    ///   - size: results per page, 1…50.
    public static func blog(query: String, sort: BlogSort = .accuracy, page: Int = 1, size: Int = 10)
        -> Endpoint<BlogSearchResult>
    {
        Endpoint(
            path: ["v2", "search", "blog"],
            query: [
                QueryItem("query", query), QueryItem("sort", sort.rawValue),
                QueryItem("page", String(page)), QueryItem("size", String(size)),
            ]
        ) { data, _ in
            try DaumSearch.decoder.decode(BlogSearchResult.self, from: data)
        }
    }

    /// The decoder for Kakao bodies (`datetime` stays a string; see ``BlogPost/date``).
    /// Treat it as read-only.
    public static let decoder = JSONDecoder()

    /// An encoder that writes models back with Kakao's field names, keys sorted and slashes
    /// unescaped. Treat it as read-only.
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}

/// The order of blog search results.
public enum BlogSort: String, CaseIterable, Codable, Sendable, Hashable {
    /// Most relevant first (the service's default).
    case accuracy
    /// Newest first.
    case recency
}
