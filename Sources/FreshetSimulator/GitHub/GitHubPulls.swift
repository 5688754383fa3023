import Foundation
import Hummingbird

/// `GET /repos/{owner}/{repo}/pulls`: a repository's open pull requests, newest first, as GitHub
/// lists them (`per_page`/`page`, `Link`). Generated from the seed and the repository's name, so
/// every request for a repository gets the same list; the larger a repository's open-issue count,
/// the more pull requests are open (at least 4, at most 150).
extension GitHubWorld {
    /// One open pull request of the list, before it is rendered.
    struct OpenPull: Sendable {
        var number: Int
        var id: Int
        var title: String
        var author: String
        var createdAt: Int
        var updatedAt: Int
        var draft: Bool
        var branch: String
        var headSHA: String
        var baseSHA: String
        var hasBody: Bool
    }

    static let pullTitles = [
        "Add async/await overloads", "Fix a leak when a request is cancelled", "Support Swift 6 strict concurrency",
        "Add a privacy manifest", "Build on Linux with Swift 6.1", "Docs: fix typos in the README",
        "Add Sendable conformances", "Retry with exponential backoff", "Add visionOS to the CI matrix",
        "Bump swift-nio from 2.70.0 to 2.81.0", "Make the decoder configurable", "Migrate the tests to Swift Testing",
    ]
    static let pullBranches = [
        "async-await", "fix-leak", "swift-6", "privacy-manifest", "linux-ci", "docs-typo", "sendable", "retry-backoff",
        "visionos", "dependabot/swift/swift-nio-2.81.0", "configurable-decoder", "swift-testing",
    ]

    /// The open pull requests of `repo`, newest first.
    func openPulls(_ repo: Repo) -> [OpenPull] {
        var r = SplitMix64(seed: seed, stream: "github.pulls", index: Hashing.fnv1a64(repo.fullName.lowercased()))
        let count = min(150, max(4, repo.openIssues / 5))
        var number = repo.firstIssueNumber + 300 + r.int(0...200)
        var age = r.int(300...6 * 3600)
        var pulls: [OpenPull] = []
        pulls.reserveCapacity(count)
        for _ in 0..<count {
            let author = r.chance(0.3) ? r.pick(repo.maintainers) : r.pick(actorPool)
            let created = anchor - age
            let pick = r.int(0..<Self.pullTitles.count)
            pulls.append(OpenPull(
                number: number, id: 1_500_000_000 + r.int(0..<900_000_000), title: Self.pullTitles[pick],
                author: user(author)?.login ?? "octocat", createdAt: created,
                updatedAt: min(anchor - 30, created + r.int(0...3 * 86_400)), draft: r.chance(0.1),
                branch: Self.pullBranches[pick], headSHA: r.hex(40), baseSHA: r.hex(40), hasBody: r.chance(0.85)))
            number -= r.int(1...12)
            age += r.int(600...2 * 86_400)
            if number < 1 { break }
        }
        return pulls
    }

    /// One pull request as `GET /repos/{owner}/{repo}/pulls` lists it (the `pull-request-simple` shape).
    func pullJSON(_ pull: OpenPull, repo: Repo) -> JSON {
        let url = "\(Self.api)/repos/\(repo.fullName)/pulls/\(pull.number)"
        let html = "https://github.com/\(repo.fullName)/pull/\(pull.number)"
        let author = user(pull.author) ?? user("octocat")!
        return obj(
            ("url", .string(url)), ("id", .int(pull.id)), ("node_id", .string(nodeID("011:PullRequest", pull.id))),
            ("html_url", .string(html)), ("diff_url", .string(html + ".diff")), ("patch_url", .string(html + ".patch")),
            ("issue_url", .string("\(Self.api)/repos/\(repo.fullName)/issues/\(pull.number)")),
            ("number", .int(pull.number)), ("state", "open"), ("locked", false), ("title", .string(pull.title)),
            ("user", simpleUserJSON(author)),
            ("body", pull.hasBody ? .string("Closes #\(max(1, pull.number - 7)).\n\n- [x] Tests added") : .null),
            ("created_at", .string(SimDate.iso8601(pull.createdAt))), ("updated_at", .string(SimDate.iso8601(pull.updatedAt))),
            ("closed_at", nil), ("merged_at", nil), ("draft", .bool(pull.draft)),
            ("head", obj(("label", .string("\(author.login):\(pull.branch)")), ("ref", .string(pull.branch)), ("sha", .string(pull.headSHA)))),
            ("base", obj(("label", .string("\(repo.owner):\(repo.defaultBranch)")), ("ref", .string(repo.defaultBranch)), ("sha", .string(pull.baseSHA)))),
            ("author_association", .string(repo.maintainers.contains(author.login) ? "MEMBER" : "CONTRIBUTOR")))
    }
}

extension Simulator {
    /// `GET /repos/{owner}/{repo}/pulls?per_page=&page=`: a page of the open pull requests (30 by
    /// default, at most 100), `Link` when there is more than one page, `[]` past the last one.
    func repoPulls(owner: String, name: String, query: QueryItems, request: Request, path: String) -> GitHubOutcome {
        guard let repo = github.repo("\(owner)/\(name)") else { return .notFound }
        let pulls = github.openPulls(repo)
        let perPage = Self.perPage(query)
        let page = Self.page(query)
        let lastPage = max(1, (pulls.count + perPage - 1) / perPage)
        let start = min((page - 1) * perPage, pulls.count)
        let end = min(start + perPage, pulls.count)
        let body = JSON.array(pulls[start..<end].map { github.pullJSON($0, repo: repo) }).rendered
        return .ok(body: body, lastModified: pulls.map(\.updatedAt).max(),
                   link: linkHeader(request: request, path: path, query: query, page: page, lastPage: lastPage), pollInterval: false)
    }
}
