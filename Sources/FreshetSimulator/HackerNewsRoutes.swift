import Hummingbird

extension Simulator {
    /// `/v0/…`: Firebase answers `null` (200) for anything it does not have.
    func hackerNewsRoute(segments: [String]) -> Response {
        var headers = HTTPFields()
        headers.set("Cache-Control", "no-cache")
        headers.set("Access-Control-Allow-Origin", "*")
        headers.set("Strict-Transport-Security", "max-age=31556926; includeSubDomains; preload")

        func body(_ text: String) -> Response {
            HTTPSupport.json(200, text, headers: headers)
        }
        guard let last = segments.last, last.hasSuffix(".json") else {
            return HTTPSupport.json(404, obj(("error", "Not Found")).rendered, headers: headers)
        }
        let stem = String(last.dropLast(5))
        switch segments.count {
        case 2:
            return body(hackerNews.listJSON(stem) ?? (stem == "maxitem" ? String(hackerNews.maxItemID) : "null"))
        case 3 where segments[1] == "item":
            return body(Int(stem).map(hackerNews.itemJSON) ?? "null")
        case 3 where segments[1] == "user":
            return body(hackerNews.userJSON(stem))
        default:
            return body("null")
        }
    }
}
