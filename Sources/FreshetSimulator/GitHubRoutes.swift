import Foundation
import Hummingbird
import Synchronization

enum GitHubResponses {
    static let docs = "https://docs.github.com/rest"
    static let notFound = obj(("message", "Not Found"), ("documentation_url", .string(docs))).rendered

    static func validationFailed(_ error: JSON, docs: String = "https://docs.github.com/v3/search/") -> String {
        obj(("message", "Validation Failed"), ("errors", [error]), ("documentation_url", .string(docs))).rendered
    }

    static func rateLimited(authenticated: Bool) -> String {
        let message = authenticated
            ? "API rate limit exceeded for user ID 1."
            : "API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)"
        return obj(
            ("message", .string(message)),
            ("documentation_url", "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting")).rendered
    }
}

/// What a GitHub route produced before the conditional-request and rate-limit layer.
enum GitHubOutcome {
    case ok(body: String, lastModified: Int?, link: String?, pollInterval: Bool)
    case error(status: Int, body: String)
}

extension Simulator {
    func github(_ request: Request, segments: [String], query: QueryItems) -> Response {
        let resource: RateLimitResource = segments.first == "search" ? .search : .core

        // Authorization: any `Bearer …` / `token …` counts as authenticated.
        var token: String?
        if let auth = request.headers[.authorization] {
            let parts = auth.split(separator: " ", maxSplits: 1).map(String.init)
            let scheme = parts.first?.lowercased() ?? ""
            guard parts.count == 2, scheme == "bearer" || scheme == "token", !parts[1].trimmingCharacters(in: .whitespaces).isEmpty else {
                return HTTPSupport.json(401, obj(("message", "Bad credentials"), ("documentation_url", .string(GitHubResponses.docs)), ("status", "401")).rendered)
            }
            token = parts[1]
        }
        let authenticated = token != nil
        let now = Self.now()
        let enforce = configuration.enforceRateLimits

        // Take one request from the budget up front (refunded on 304).
        let bucket: RateLimitBucket
        if enforce {
            let (taken, current) = state.withLock { state -> (RateLimitBucket?, RateLimitBucket) in
                let taken = state.consume(resource, authenticated: authenticated, now: now)
                return (taken, state.bucket(resource, authenticated: authenticated, now: now))
            }
            guard let taken else {
                var headers = rateLimitHeaders(current, resource: resource)
                headers.set("X-RateLimit-Remaining", "0")
                return HTTPSupport.json(403, GitHubResponses.rateLimited(authenticated: authenticated), headers: headers)
            }
            bucket = taken
        } else {
            let limit = RateLimitBucket.limit(resource, authenticated: authenticated)
            bucket = RateLimitBucket(limit: limit, remaining: limit, reset: now + RateLimitBucket.window(resource))
        }

        let outcome: GitHubOutcome
        let isGet = request.method == .get || request.method == .head
        switch (isGet, segments.count, segments.first) {
        case (true, 4, "repos") where segments[3] == "events":
            outcome = repoEvents(owner: segments[1], name: segments[2], query: query, request: request, path: request.uri.path)
        case (true, 3, "repos"):
            outcome = github.repo("\(segments[1])/\(segments[2])").map {
                .ok(body: github.repoJSON($0, forSearch: false).rendered, lastModified: $0.updatedAt, link: nil, pollInterval: false)
            } ?? .error(status: 404, body: GitHubResponses.notFound)
        case (true, 2, "users"):
            outcome = github.user(segments[1]).map {
                .ok(body: github.userJSON($0).rendered, lastModified: $0.updatedAt, link: nil, pollInterval: false)
            } ?? .error(status: 404, body: GitHubResponses.notFound)
        case (true, 2, "search") where segments[1] == "repositories":
            outcome = searchRepositories(query: query, request: request, path: request.uri.path)
        default:
            outcome = .error(status: 404, body: GitHubResponses.notFound)
        }

        var headers = HTTPFields()
        headers.set("Cache-Control", resource == .search ? "no-cache" : (authenticated ? "private, max-age=60, s-maxage=60" : "public, max-age=60, s-maxage=60"))
        headers.set("Vary", authenticated ? "Accept, Authorization, Cookie, X-GitHub-OTP" : "Accept, Accept-Encoding, Accept, X-Requested-With")
        headers.set("X-GitHub-Media-Type", "github.v3; format=json")
        headers.set("X-GitHub-Api-Version-Selected", "2022-11-28")

        switch outcome {
        case .error(let status, let body):
            headers.append(contentsOf: rateLimitHeaders(bucket, resource: resource))
            return HTTPSupport.json(status, body, headers: headers)

        case .ok(let body, let lastModified, let link, let pollInterval):
            let etag = "W/\"" + Hashing.hex128(body + "\u{0}" + (token ?? "")) + "\""
            headers.set("ETag", etag)
            if let lastModified { headers.set("Last-Modified", SimDate.rfc1123(lastModified)) }
            if pollInterval { headers.set("X-Poll-Interval", String(configuration.pollInterval)) }
            if let link { headers.set("Link", link) }

            var notModified = false
            if let inm = request.headers[.ifNoneMatch] {
                notModified = HTTPSupport.ifNoneMatch(inm, matches: etag)
            } else if let ims = request.headers[.ifModifiedSince], let lastModified, let since = SimDate.parseHTTPDate(ims) {
                notModified = lastModified <= since
            }
            if notModified {
                var current = bucket
                if enforce, let refunded = state.withLock({ $0.refund(resource, authenticated: authenticated) }) {
                    current = refunded
                }
                headers.append(contentsOf: rateLimitHeaders(current, resource: resource))
                return HTTPSupport.empty(304, headers: headers)
            }
            headers.append(contentsOf: rateLimitHeaders(bucket, resource: resource))
            return HTTPSupport.json(200, body, headers: headers)
        }
    }

    func rateLimitHeaders(_ bucket: RateLimitBucket, resource: RateLimitResource) -> HTTPFields {
        var h = HTTPFields()
        h.set("X-RateLimit-Limit", String(bucket.limit))
        h.set("X-RateLimit-Remaining", String(bucket.remaining))
        h.set("X-RateLimit-Reset", String(bucket.reset))
        h.set("X-RateLimit-Used", String(bucket.used))
        h.set("X-RateLimit-Resource", resource.rawValue)
        return h
    }

    /// `<http://host/path?…&page=N>; rel="next", …` (prev, next, last, first), or `nil`
    /// when everything fits in one page.
    func linkHeader(request: Request, path: String, query: QueryItems, page: Int, lastPage: Int) -> String? {
        guard lastPage > 1 else { return nil }
        let host = request.head.authority ?? "127.0.0.1"
        func url(_ p: Int) -> String { "<http://\(host)\(path)?\(query.replacingPage(p))>" }
        var links: [String] = []
        if page > 1 { links.append("\(url(min(page - 1, lastPage))); rel=\"prev\"") }
        if page < lastPage {
            links.append("\(url(page + 1)); rel=\"next\"")
            links.append("\(url(lastPage)); rel=\"last\"")
        }
        if page > 1 { links.append("\(url(1)); rel=\"first\"") }
        return links.isEmpty ? nil : links.joined(separator: ", ")
    }

    static func perPage(_ query: QueryItems) -> Int {
        guard let n = query.int("per_page"), n > 0 else { return 30 }
        return min(n, 100)
    }

    static func page(_ query: QueryItems) -> Int {
        max(1, query.int("page") ?? 1)
    }

    // MARK: - Events

    func repoEvents(owner: String, name: String, query: QueryItems, request: Request, path: String) -> GitHubOutcome {
        guard let repo = github.repo("\(owner)/\(name)") else { return .error(status: 404, body: GitHubResponses.notFound) }
        let events = feedEvents(repo)
        let perPage = Self.perPage(query)
        let page = Self.page(query)
        if (page - 1) * perPage >= 300 {
            return .error(status: 422, body: obj(
                ("message", "In order to keep the API fast for everyone, pagination is limited for this resource. Check the rel=last link relation in the Link response header to see how far back you can traverse."),
                ("documentation_url", "https://docs.github.com/v3/#pagination")).rendered)
        }
        let total = min(events.count, 300)
        let lastPage = max(1, (total + perPage - 1) / perPage)
        let start = min((page - 1) * perPage, total)
        let end = min(start + perPage, total)
        var body = "["
        for i in start..<end {
            if i > start { body += "," }
            body += events[i].json
        }
        body += "]"
        return .ok(body: body, lastModified: events.first?.createdAt, link: linkHeader(request: request, path: path, query: query, page: page, lastPage: lastPage), pollInterval: true)
    }

    // MARK: - Search

    struct SearchQuery {
        var words: [String] = []
        var language: String?
        var owner: String?
        var topic: String?
        var stars: ClosedRange<Int>?
        var forks: ClosedRange<Int>?
        var inFields: Set<String> = []
        var operators = 0
    }

    static func parseRange(_ s: String) -> ClosedRange<Int>? {
        if s.hasPrefix(">="), let n = Int(s.dropFirst(2)) { return n...Int.max }
        if s.hasPrefix("<="), let n = Int(s.dropFirst(2)) { return Int.min...n }
        if s.hasPrefix(">"), let n = Int(s.dropFirst()) { return (n + 1)...Int.max }
        if s.hasPrefix("<"), let n = Int(s.dropFirst()) { return Int.min...(n - 1) }
        let parts = s.components(separatedBy: "..")
        if parts.count == 2 {
            let lo = parts[0] == "*" ? Int.min : Int(parts[0])
            let hi = parts[1] == "*" ? Int.max : Int(parts[1])
            if let lo, let hi, lo <= hi { return lo...hi }
        }
        if let n = Int(s) { return n...n }
        return nil
    }

    static func parseSearch(_ q: String) -> SearchQuery {
        var result = SearchQuery()
        var tokens: [String] = []
        var current = ""
        var inQuotes = false
        for c in q {
            if c == "\"" {
                inQuotes.toggle()
            } else if c.isWhitespace && !inQuotes {
                if !current.isEmpty { tokens.append(current) }
                current = ""
            } else {
                current.append(c)
            }
        }
        if !current.isEmpty { tokens.append(current) }
        for token in tokens {
            if ["AND", "OR", "NOT"].contains(token) {
                result.operators += 1
                continue
            }
            if let colon = token.firstIndex(of: ":") {
                let key = token[..<colon].lowercased()
                let value = String(token[token.index(after: colon)...])
                switch key {
                case "language": result.language = value.lowercased(); continue
                case "user", "org": result.owner = value.lowercased(); continue
                case "topic": result.topic = value.lowercased(); continue
                case "stars": result.stars = parseRange(value); continue
                case "forks": result.forks = parseRange(value); continue
                case "in": result.inFields.formUnion(value.lowercased().split(separator: ",").map(String.init)); continue
                case "fork", "archived", "is", "pushed", "created", "size", "license", "mirror", "template": continue
                default: break
                }
            }
            result.words.append(token.lowercased())
        }
        return result
    }

    func searchRepositories(query: QueryItems, request: Request, path: String) -> GitHubOutcome {
        let q = (query["q"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard !q.isEmpty else {
            return .error(status: 422, body: GitHubResponses.validationFailed(obj(("resource", "Search"), ("field", "q"), ("code", "missing"))))
        }
        guard q.count <= 256 else {
            return .error(status: 422, body: GitHubResponses.validationFailed(obj(
                ("message", "The search is longer than 256 characters."), ("resource", "Search"), ("field", "q"), ("code", "invalid"))))
        }
        let parsed = Self.parseSearch(q)
        guard parsed.operators <= 5 else {
            return .error(status: 422, body: GitHubResponses.validationFailed(obj(
                ("message", "The search contains more than 5 AND / OR / NOT operators."), ("resource", "Search"), ("field", "q"), ("code", "invalid"))))
        }
        let perPage = Self.perPage(query)
        let page = Self.page(query)
        if (page - 1) * perPage >= 1000 {
            return .error(status: 422, body: obj(
                ("message", "Only the first 1000 search results are available"),
                ("documentation_url", "https://docs.github.com/v3/search/")).rendered)
        }

        var matches: [(repo: GitHubWorld.Repo, score: Int)] = []
        for repo in github.repos {
            if let language = parsed.language, repo.language?.lowercased() != language { continue }
            if let owner = parsed.owner, repo.owner.lowercased() != owner { continue }
            if let topic = parsed.topic, !repo.topics.contains(topic) { continue }
            if let stars = parsed.stars, !stars.contains(repo.stars) { continue }
            if let forks = parsed.forks, !forks.contains(repo.forks) { continue }
            let name = repo.name.lowercased()
            let description = repo.description?.lowercased() ?? ""
            let useName = parsed.inFields.isEmpty || parsed.inFields.contains("name")
            let useDescription = parsed.inFields.isEmpty || parsed.inFields.contains("description")
            let useTopics = parsed.inFields.isEmpty || parsed.inFields.contains("topics")
            var score = 0
            var all = true
            for word in parsed.words {
                var s = 0
                if useName && name == word { s += 100 } else if useName && (name.contains(word) || repo.fullName.lowercased().contains(word)) { s += 20 }
                if useTopics && repo.topics.contains(where: { $0.contains(word) }) { s += 8 }
                if useDescription && description.contains(word) { s += 5 }
                if s == 0 { all = false; break }
                score += s
            }
            if all { matches.append((repo, score)) }
        }

        let order = (query["order"] ?? "desc").lowercased() == "asc" ? "asc" : "desc"
        let sortKey: (GitHubWorld.Repo) -> Int
        switch query["sort"]?.lowercased() {
        case "stars": sortKey = { $0.stars }
        case "forks": sortKey = { $0.forks }
        case "updated": sortKey = { $0.updatedAt }
        default: sortKey = { _ in 0 }
        }
        let bestMatch = !["stars", "forks", "updated"].contains(query["sort"]?.lowercased() ?? "")
        matches.sort { a, b in
            if bestMatch {
                if a.score != b.score { return a.score > b.score }
                if a.repo.stars != b.repo.stars { return a.repo.stars > b.repo.stars }
                return a.repo.id < b.repo.id
            }
            let ka = sortKey(a.repo), kb = sortKey(b.repo)
            if ka != kb { return order == "asc" ? ka < kb : ka > kb }
            return a.repo.id < b.repo.id
        }

        let reachable = min(matches.count, 1000)
        let lastPage = max(1, (reachable + perPage - 1) / perPage)
        let start = min((page - 1) * perPage, reachable)
        let end = min(start + perPage, reachable)
        let items = matches[start..<end].map { github.repoJSON($0.repo, forSearch: true) }
        let body = obj(("total_count", .int(matches.count)), ("incomplete_results", false), ("items", .array(items))).rendered
        return .ok(body: body, lastModified: nil, link: linkHeader(request: request, path: path, query: query, page: page, lastPage: lastPage), pollInterval: false)
    }
}
