import Hummingbird

/// The Hacker News Firebase API under `/v0`: the story lists, items and users, as `.json` paths.
/// Firebase answers `null` (200) for any other `.json` path, and its `404` for a path without it.
struct HackerNewsController {
    let simulator: Simulator

    func addRoutes(to routes: SimRoutes) {
        routes.get("/v0/{list}.json", " (list: topstories, newstories, beststories, askstories, showstories, jobstories, maxitem;"
                   + " with Accept: text/event-stream, a 307 to the stream of put, patch and keep-alive events)") { request, context in
            let list = context.parameter("list")
            let value: @Sendable () -> String = {
                let hackerNews = simulator.hackerNews
                return simulator.hackerNewsListJSON(list) ?? (list == "maxitem" ? String(hackerNews.maxItemID) : "null")
            }
            if simulator.wantsEventStream(request) {
                return simulator.hackerNewsStream(request, value: value, list: simulator.hackerNews.lists[list] != nil ? list : nil)
            }
            return Self.answer(value())
        }
        routes.get("/v0/item/{id}.json") { request, context in
            let json = Int(context.parameter("id")).map(simulator.hackerNews.itemJSON) ?? "null"
            if simulator.wantsEventStream(request) { return simulator.hackerNewsStream(request, value: { json }, list: nil) }
            return Self.answer(json)
        }
        routes.get("/v0/user/{id}.json") { request, context in
            let json = simulator.hackerNews.userJSON(context.parameter("id"))
            if simulator.wantsEventStream(request) { return simulator.hackerNewsStream(request, value: { json }, list: nil) }
            return Self.answer(json)
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
