import Hummingbird

/// The Hacker News Firebase API under `/v0`: the story lists, items and users, as `.json` paths.
/// Firebase answers `null` (200) for any other `.json` path, and its `404` for a path without it.
struct HackerNewsController {
    let simulator: Simulator

    func addRoutes(to routes: SimRoutes) {
        routes.get("/v0/{list}.json", " (list: topstories, newstories, beststories, askstories, showstories, jobstories, maxitem)") { _, context in
            let list = context.parameter("list")
            let hackerNews = simulator.hackerNews
            return Self.answer(hackerNews.listJSON(list) ?? (list == "maxitem" ? String(hackerNews.maxItemID) : "null"))
        }
        routes.get("/v0/item/{id}.json") { _, context in
            Self.answer(Int(context.parameter("id")).map(simulator.hackerNews.itemJSON) ?? "null")
        }
        routes.get("/v0/user/{id}.json") { _, context in
            Self.answer(simulator.hackerNews.userJSON(context.parameter("id")))
        }
        routes.otherwise(["/v0/**"], methods: [.get, .head], " (anything else: null for a .json path, else Firebase's 404)") { request, _ in
            HTTPSupport.segments(request.uri.path).last?.hasSuffix(".json") == true
                ? Self.answer("null")
                : HTTPSupport.json(404, obj(("error", "Not Found")).rendered, headers: Self.headers)
        }
    }

    /// Firebase's headers.
    static let headers: HTTPFields = {
        var headers = HTTPFields()
        headers.set("Cache-Control", "no-cache")
        headers.set("Access-Control-Allow-Origin", "*")
        headers.set("Strict-Transport-Security", "max-age=31556926; includeSubDomains; preload")
        return headers
    }()

    /// `200` with `json` and Firebase's headers.
    static func answer(_ json: String) -> Response {
        HTTPSupport.json(200, json, headers: headers)
    }
}
