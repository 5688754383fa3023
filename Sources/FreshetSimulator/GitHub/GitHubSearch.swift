import Foundation
import Hummingbird

/// `GET /search/repositories`: GitHub's search syntax (qualifiers, ranges, `in:`), its limits
/// and its sort orders, over the generated repositories.
extension Simulator {
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
