import Foundation
import Hummingbird

/// Kakao's Daum blog search, `GET /v2/search/blog`, with its authentication and validation rules.
struct KakaoController {
    let simulator: Simulator

    func addRoutes(to routes: SimRoutes) {
        routes.get("/v2/search/blog", "?query=&sort=accuracy|recency&page=&size= (Authorization: KakaoAK <key>)", use: blogSearch)
    }

    /// `GET /v2/search/blog?query=&sort=&page=&size=`.
    @Sendable func blogSearch(_ request: Request, context: SimRequestContext) -> Response {
        let query = QueryItems(request.uri.query)
        let configuration = simulator.configuration
        let kakao = simulator.kakao
        let contentType = "application/json;charset=UTF-8"
        func error(_ status: Int, _ type: String, _ message: String) -> Response {
            HTTPSupport.json(status, obj(("errorType", .string(type)), ("message", .string(message))).rendered, contentType: contentType)
        }

        guard let auth = request.headers[.authorization] else {
            return error(401, "AccessDeniedError", "wrong appKey(null) format")
        }
        let parts = auth.split(separator: " ", maxSplits: 1).map(String.init)
        guard parts.count == 2, parts[0] == "KakaoAK", !parts[1].isEmpty else {
            return error(401, "AccessDeniedError", "wrong appKey(\(auth)) format")
        }
        guard parts[1].trimmingCharacters(in: .whitespaces) == configuration.kakaoAPIKey else {
            return error(401, "AccessDeniedError", "cannot find appKey")
        }

        guard let q = query["query"], !q.trimmingCharacters(in: .whitespaces).isEmpty else {
            return error(400, "MissingParameter", "query parameter required")
        }
        let sort = query["sort"] ?? "accuracy"
        guard sort == "accuracy" || sort == "recency" else {
            return error(400, "InvalidArgument", "sort is invalid")
        }
        var page = 1
        if let raw = query["page"] {
            guard let p = Int(raw) else { return error(400, "InvalidArgument", "page is not a number") }
            guard p >= 1 else { return error(400, "InvalidArgument", "page is less than min") }
            guard p <= 50 else { return error(400, "InvalidArgument", "page is more than max") }
            page = p
        }
        var size = 10
        if let raw = query["size"] {
            guard let s = Int(raw) else { return error(400, "InvalidArgument", "size is not a number") }
            guard s >= 1 else { return error(400, "InvalidArgument", "size is less than min") }
            guard s <= 50 else { return error(400, "InvalidArgument", "size is more than max") }
            size = s
        }

        let matches = kakao.search(query: q, sort: sort)
        // Like the live service, at most 800 documents can be paged through (and never
        // more than 50 pages, whatever the size).
        let pageable = min(matches.count, 800)
        let start = min((page - 1) * size, pageable, 50 * size)
        let end = min(start + size, pageable)
        let documents = matches[start..<end].map { kakao.documentJSON($0, query: q) }
        let isEnd = page * size >= pageable || page >= 50
        let body = obj(
            ("meta", obj(("total_count", .int(matches.count)), ("pageable_count", .int(pageable)), ("is_end", .bool(isEnd)))),
            ("documents", .array(documents))).rendered
        return HTTPSupport.json(200, body, contentType: contentType)
    }
}
