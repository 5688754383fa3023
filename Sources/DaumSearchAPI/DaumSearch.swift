import Foundation
import Freshet
import HTTPTypes

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

    /// A blog post's thumbnail (``BlogPost/thumbnail``) as an image request: the image's origin
    /// (`https://search1.kakaocdn.net`) and the endpoint of its path, to send with a client on
    /// that origin that carries no Kakao key (the image host is not the API).
    public struct Thumbnail: Sendable {
        /// The image's origin: scheme, host and port.
        public var origin: URL
        /// The host alone (`search1.kakaocdn.net`).
        public var host: String
        /// The image's path and query, relative to ``origin``.
        public var endpoint: Endpoint<Data>
    }

    /// The request for a post's `thumbnail`, or `nil` when it is empty or not a plain
    /// `http(s)://host/path` URL (user info, an empty path or `.`/`..` segments are refused).
    public static func thumbnail(_ thumbnail: String) -> Thumbnail? {
        guard !thumbnail.isEmpty, let components = URLComponents(string: thumbnail),
              let scheme = components.scheme?.lowercased(), scheme == "https" || scheme == "http",
              let host = components.host?.lowercased(), !host.isEmpty, components.user == nil, components.password == nil
        else { return nil }
        let segments = components.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard !segments.isEmpty, !segments.contains(where: { $0 == "." || $0 == ".." }) else { return nil }
        var origin = URLComponents()
        origin.scheme = scheme
        origin.host = host
        origin.port = components.port
        guard let originURL = origin.url else { return nil }
        let query = (components.queryItems ?? []).map { QueryItem($0.name, $0.value) }
        let endpoint = Endpoint<Data>(path: segments, query: query, headers: [.accept: "image/png, image/*;q=0.8"]) { data, _ in data }
        return Thumbnail(origin: originURL, host: host, endpoint: endpoint)
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
