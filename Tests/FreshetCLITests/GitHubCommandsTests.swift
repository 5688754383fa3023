import Foundation
import FreshetSimulator
import FreshetTestSupport
import Testing

extension FreshetCLI {
    /// Runs `freshet ARGUMENTS…` with `stdin` as its standard input (not a terminal).
    func run(_ arguments: [String], stdin: String, environment extra: [String: String] = [:]) async throws -> ProcessResult {
        let executable = try #require(builtProduct("freshet"), "the freshet executable was not built")
        let env = baseEnvironment.merging(environment) { _, new in new }.merging(extra) { _, new in new }
        return try await runProcess(executable, arguments, environment: env, timeout: 60, stdin: stdin)
    }
}

/// The query items of a logged request path.
func loggedQueryItems(_ path: String) -> [String: String] {
    var items: [String: String] = [:]
    for item in URLComponents(string: "http://x" + path)?.queryItems ?? [] { items[item.name] = item.value ?? "" }
    return items
}

func jsonDictionary(_ text: String) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not a JSON object: \(text.prefix(200))")
}

@Suite("freshet user, repo, repos: end to end", .timeLimit(.minutes(2)))
struct GitHubCommandsTests {
    // MARK: user

    @Test("user: the profile's fields, one labelled line each")
    func userProfile() async throws {
        try await withFreshetCLI { cli in
            let result = try await cli.run("user", "octocat")
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first == "The Octocat (octocat)")
            #expect(lines.contains("company      @github"))
            #expect(lines.contains("location     San Francisco"))
            #expect(lines.contains("blog         https://github.blog"))
            #expect(lines.contains { $0.hasPrefix("followers    ") && $0.contains(" · following ") && $0.contains(" · public repos ") })
            let joined = try #require(lines.first { $0.hasPrefix("joined       ") })
            #expect(joined.range(of: #"^joined       \d{4}-\d{2}-\d{2}, \d+ years? ago$"#, options: .regularExpression) != nil, "\(joined)")
            #expect(lines.contains { $0.hasPrefix("updated      ") })
            #expect(!lines.contains { $0.hasPrefix("bio") }, "a null bio is left out")
            #expect(try await SimControl(cli.sim).log().map(\.path) == ["/users/octocat"])
        }
    }

    @Test("user --json: GitHub's field names and values")
    func userJSON() async throws {
        try await withFreshetCLI { cli in
            let result = try await cli.run("user", "octocat", "--json")
            #expect(result.status == 0, "\(result.stderr)")
            let user = try jsonDictionary(result.stdout)
            #expect(user["login"] as? String == "octocat")
            #expect(user["name"] as? String == "The Octocat")
            #expect(user["location"] as? String == "San Francisco")
            for key in ["id", "public_repos", "followers", "following"] { #expect(user[key] is Int, "\(key)") }
            for key in ["avatar_url", "html_url", "type", "created_at", "updated_at"] { #expect(user[key] is String, "\(key)") }
            #expect((user["created_at"] as? String)?.hasSuffix("Z") == true)
            #expect(user["publicRepos"] == nil && user["avatarURL"] == nil)
        }
    }

    @Test("user: an unknown login is \"not found\", naming it; exit 2")
    func unknownUser() async throws {
        try await withFreshetCLI { cli in
            let result = try await cli.run("user", "no-such-person-42")
            #expect(result.status == 2)
            #expect(result.stderr.contains("no-such-person-42"))
            #expect(result.stderr.contains("not found"))
            #expect(result.stdout.isEmpty)
        }
    }

    // MARK: repo

    @Test("repo: description, counts, language, license, topics, branch, dates")
    func repository() async throws {
        try await withFreshetCLI { cli in
            let result = try await cli.run("repo", "ReactiveX/RxSwift")
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(lines.prefix(2) == ["ReactiveX/RxSwift", "Reactive Programming in Swift"])
            #expect(lines.contains { $0.hasPrefix("stars        ") && $0.contains(" · forks ") && $0.contains(" · open issues ") })
            #expect(lines.contains("language     Swift"))
            #expect(lines.contains("license      MIT License (MIT)"))
            #expect(lines.contains { $0.hasPrefix("topics       ") && $0.contains("rxswift") })
            #expect(lines.contains { $0.hasPrefix("branch       ") })
            #expect(lines.contains { $0.hasPrefix("created      2015-") && $0.hasSuffix(" years ago") })
            #expect(lines.contains { $0.hasPrefix("pushed       ") })
            #expect(lines.contains("url          https://github.com/ReactiveX/RxSwift"))
        }
    }

    @Test("repo --json: GitHub's field names, including license and subscribers")
    func repositoryJSON() async throws {
        try await withFreshetCLI { cli in
            let result = try await cli.run("repo", "ReactiveX/RxSwift", "--json")
            #expect(result.status == 0, "\(result.stderr)")
            let repo = try jsonDictionary(result.stdout)
            #expect(repo["full_name"] as? String == "ReactiveX/RxSwift")
            #expect((repo["owner"] as? [String: Any])?["login"] as? String == "ReactiveX")
            #expect((repo["license"] as? [String: Any])?["spdx_id"] as? String == "MIT")
            for key in ["stargazers_count", "forks_count", "open_issues_count", "subscribers_count", "network_count"] {
                #expect(repo[key] is Int, "\(key)")
            }
            #expect(repo["default_branch"] is String)
            #expect(repo["topics"] is [String])
            #expect(repo["pushed_at"] is String)
        }
    }

    @Test("repo: an unknown repository is \"not found\", naming it; a malformed name is a usage error")
    func unknownRepository() async throws {
        try await withFreshetCLI { cli in
            let missing = try await cli.run("repo", "ReactiveX/NoSuchThing")
            #expect(missing.status == 2)
            #expect(missing.stderr.contains("repository ReactiveX/NoSuchThing not found"))
            let malformed = try await cli.run("repo", "just-a-name")
            #expect(malformed.status == 1)
            #expect(malformed.stderr.contains("OWNER/REPO"))
            #expect(try await SimControl(cli.sim).log().map(\.path) == ["/repos/ReactiveX/NoSuchThing"])
        }
    }

    // MARK: repos

    @Test("repos QUERY --limit 5: a summary line and five aligned rows")
    func search() async throws {
        try await withFreshetCLI { cli in
            let result = try await cli.run("repos", "language:swift networking", "--limit", "5")
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 6)
            #expect(lines.first?.hasSuffix("repositories match “language:swift networking” (showing 5)") == true)
            #expect(lines.dropFirst().allSatisfy { $0.contains("★") && $0.contains("Swift") })
            #expect(lines.contains { $0.contains("Alamofire/Alamofire") && $0.contains("Elegant HTTP Networking in Swift") })
            // The star column is right-aligned: the names start at the same column on every row.
            let nameStarts = Set(lines.dropFirst().compactMap { line in
                line.range(of: #"^ *★ \S+  "#, options: .regularExpression).map { line.distance(from: line.startIndex, to: $0.upperBound) }
            })
            #expect(nameStarts.count == 1, "\(lines)")
            let log = try await SimControl(cli.sim).log()
            #expect(log.count == 1)
            #expect(loggedQueryItems(log[0].path) == ["q": "language:swift networking", "per_page": "5"])
        }
    }

    @Test("repos --sort stars --json: GitHub's fields, sorted by the server")
    func searchJSON() async throws {
        try await withFreshetCLI { cli in
            let result = try await cli.run("repos", "swift", "--sort", "stars", "--limit", "10", "--json")
            #expect(result.status == 0, "\(result.stderr)")
            let body = try jsonDictionary(result.stdout)
            #expect(body["total_count"] is Int)
            #expect(body["incomplete_results"] as? Bool == false)
            let items = try #require(body["items"] as? [[String: Any]])
            #expect(items.count == 10)
            let stars = items.compactMap { $0["stargazers_count"] as? Int }
            #expect(stars.count == 10 && stars == stars.sorted(by: >))
            #expect(items.allSatisfy { $0["full_name"] is String && $0["score"] is Double })
            let log = try await SimControl(cli.sim).log()
            #expect(loggedQueryItems(log[0].path) == ["q": "swift", "sort": "stars", "order": "desc", "per_page": "10"])
        }
    }

    @Test("repos: a 422 shows GitHub's own message; exit 2")
    func validationMessage() async throws {
        try await withFreshetCLI { cli in
            let tooMany = try await cli.run("repos", "a AND b AND c AND d AND e AND f AND g")
            #expect(tooMany.status == 2)
            #expect(tooMany.stderr.contains("The search contains more than 5 AND / OR / NOT operators."))
            let empty = try await cli.run("repos", "")
            #expect(empty.status == 2)
            #expect(empty.stderr.contains("Validation Failed: Search q missing"))
        }
    }

    @Test("repos: the search rate limit says when it resets")
    func rateLimited() async throws {
        try await withFreshetCLI { cli in
            let reset = Int(Date().timeIntervalSince1970) + 600
            try await SimControl(cli.sim).post("ratelimit", ["resource": "search", "remaining": 0, "reset": reset])
            let result = try await cli.run("repos", "swift")
            #expect(result.status == 2)
            #expect(result.stderr.contains("rate limit reached: API rate limit exceeded for 127.0.0.1. It resets at"), "\(result.stderr)")
            #expect(result.stderr.contains("Set GITHUB_TOKEN to raise GitHub's search limit from 10 to 30 requests a minute."))
            #expect(!result.stderr.contains("(But here's") && !result.stderr.contains("60 to 5000"), "\(result.stderr)")
        }
    }

    @Test("repo: the core rate limit, in one sentence, names the core budget")
    func coreRateLimited() async throws {
        try await withFreshetCLI { cli in
            let reset = Int(Date().timeIntervalSince1970) + 600
            try await SimControl(cli.sim).post("ratelimit", ["resource": "core", "remaining": 0, "reset": reset])
            let result = try await cli.run("repo", "apple/swift")
            #expect(result.status == 2)
            #expect(result.stderr.contains("rate limit reached: API rate limit exceeded for 127.0.0.1. It resets at"), "\(result.stderr)")
            #expect(result.stderr.hasSuffix("Set GITHUB_TOKEN to raise GitHub's limit from 60 to 5000 requests an hour.\n"), "\(result.stderr)")
        }
    }

    @Test("repos without a terminal: one query per line from stdin, blank lines skipped, results in order")
    func queriesFromStdin() async throws {
        try await withFreshetCLI { cli in
            let result = try await cli.run(["repos", "--limit", "3"], stdin: "rxswift\n\n   \nalamofire\n")
            #expect(result.status == 0, "\(result.stderr)")
            let blocks = result.stdout.components(separatedBy: "\n\n")
            #expect(blocks.count == 2)
            #expect(blocks[0].contains("match “rxswift” (showing 3)"))
            #expect(blocks[0].contains("ReactiveX/RxSwift"))
            #expect(blocks[1].contains("match “alamofire”"))
            #expect(blocks[1].contains("Alamofire/Alamofire"))
            #expect(blocks.map { $0.split(separator: "\n").count } == [4, 3], "3 of 40 for rxswift, both of 2 for alamofire")
            let queries = try await SimControl(cli.sim).log().map { loggedQueryItems($0.path)["q"] }
            #expect(queries == ["rxswift", "alamofire"])
        }
    }

    @Test("repos --json without a terminal: one JSON document per query line; a failed query exits 2, the others print")
    func jsonLinesFromStdin() async throws {
        try await withFreshetCLI { cli in
            try await SimControl(cli.sim).fault(route: "/search/repositories", status: 422, times: 1, body: """
                {"message":"Validation Failed","errors":[{"message":"The search is longer than 256 characters.","resource":"Search","field":"q","code":"invalid"}]}
                """)
            let result = try await cli.run(["repos", "--json", "--limit", "2"], stdin: "first\nvapor\nkingfisher\n")
            #expect(result.status == 2)
            #expect(result.stderr.contains("“first”"))
            #expect(result.stderr.contains("The search is longer than 256 characters."))
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 2)
            let names = try lines.map { line in
                try #require(try jsonDictionary(line)["items"] as? [[String: Any]]).compactMap { $0["full_name"] as? String }
            }
            #expect(names[0].contains("vapor/vapor"))
            #expect(names[1].contains("onevcat/Kingfisher"))
        }
    }
}
