import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// GitHub's REST API: repositories, their events and open pull requests, users and repository search. Every path under
/// `/repos`, `/users` and `/search` goes through the same door (``Simulator/gitHubAnswer(_:outcome:)``:
/// credentials, rate limit, headers, conditional requests), so what the API does not know is a
/// `404` with GitHub's headers, counted against the rate limit, as upstream.
struct GitHubController {
    let simulator: Simulator

    func addRoutes(to routes: SimRoutes) {
        routes.get("/repos/{owner}/{repo}/events", "?per_page=&page=") { request, context in
            simulator.gitHubAnswer(request) { _ in
                simulator.repoEvents(
                    owner: context.parameter("owner"), name: context.parameter("repo"), query: QueryItems(request.uri.query),
                    request: request, path: request.uri.path)
            }
        }
        routes.get("/repos/{owner}/{repo}/pulls", "?per_page=&page= (the open pull requests)") { request, context in
            simulator.gitHubAnswer(request) { _ in
                simulator.repoPulls(
                    owner: context.parameter("owner"), name: context.parameter("repo"), query: QueryItems(request.uri.query),
                    request: request, path: request.uri.path)
            }
        }
        routes.get("/repos/{owner}/{repo}") { request, context in
            simulator.gitHubAnswer(request) { token in
                simulator.github.repo("\(context.parameter("owner"))/\(context.parameter("repo"))").map {
                    let permissions = token.map(RepoPermissions.init(token:))
                    let body = simulator.github.repoJSON($0, forSearch: false, permissions: permissions).rendered
                    return .ok(body: body, lastModified: $0.updatedAt, link: nil, pollInterval: false)
                } ?? .notFound
            }
        }
        routes.get("/users/{login}") { request, context in
            simulator.gitHubAnswer(request) { _ in
                simulator.github.user(context.parameter("login")).map {
                    .ok(body: simulator.github.userJSON($0).rendered, lastModified: $0.updatedAt, link: nil, pollInterval: false)
                } ?? .notFound
            }
        }
        routes.get("/search/repositories", "?q=&sort=stars|forks|updated&order=asc|desc&per_page=&page=") { request, _ in
            simulator.gitHubAnswer(request) { _ in
                simulator.searchRepositories(query: QueryItems(request.uri.query), request: request, path: request.uri.path)
            }
        }
        routes.otherwise(
            ["/repos/{owner}/{repo}/**", "/users/{login}/**", "/search/**"],
            " (anything else: GitHub's 404, counted against the rate limit)"
        ) { request, _ in
            simulator.gitHubAnswer(request) { _ in .notFound }
        }
    }
}

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

    /// GitHub's `404`.
    static let notFound = GitHubOutcome.error(status: 404, body: GitHubResponses.notFound)
}

extension Simulator {
    /// A GitHub answer: checks the credentials, charges one request to the budget of the path's
    /// resource (`search` under `/search`, `core` elsewhere) of the request's credential (each
    /// token has its own budgets, all anonymous requests share one; refunded on `304`), then
    /// answers what `route` makes for the request's token with GitHub's headers, an `ETag` per
    /// body and credential, and `304` when the request's validators match.
    func gitHubAnswer(_ request: Request, outcome route: (_ token: String?) -> GitHubOutcome) -> Response {
        let resource: RateLimitResource = HTTPSupport.segments(request.uri.path).first == "search" ? .search : .core

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
        let key = RateLimitKey(credential: RateLimitCredential(token: token), resource: resource)
        let now = Self.now()
        let enforce = configuration.enforceRateLimits

        // Charge one request up front (refunded on 304). Unenforced, the budget still counts
        // (`GET /_sim/ratelimits`) but never refuses, and the headers announce a full budget.
        let (taken, current) = state.withLock { state -> (RateLimitBucket?, RateLimitBucket) in
            let taken = state.consume(key, now: now, enforce: enforce)
            return (taken, state.bucket(key, now: now))
        }
        let bucket: RateLimitBucket
        if enforce {
            guard let taken else {
                var headers = rateLimitHeaders(current, resource: resource)
                headers.set("X-RateLimit-Remaining", "0")
                return HTTPSupport.json(403, GitHubResponses.rateLimited(authenticated: authenticated), headers: headers)
            }
            bucket = taken
        } else {
            bucket = RateLimitBucket(limit: current.limit, reset: current.reset)
        }

        let outcome = route(token)

        var headers = HTTPFields()
        headers.set("Cache-Control", resource == .search ? "no-cache" : (authenticated ? "private, max-age=60, s-maxage=60" : "public, max-age=60, s-maxage=60"))
        if authenticated {
            // Two lines, as GitHub sends them to a token.
            headers.append(HTTPField(name: .vary, value: "Accept, Authorization, Cookie, X-GitHub-OTP"))
            headers.append(HTTPField(name: .vary, value: "Accept-Encoding, Accept, X-Requested-With"))
        } else {
            headers.set("Vary", "Accept, Accept-Encoding, Accept, X-Requested-With")
        }
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
                // A 304 is free, for every credential.
                var current = bucket
                if let refunded = state.withLock({ $0.refund(key) }), enforce {
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
}
