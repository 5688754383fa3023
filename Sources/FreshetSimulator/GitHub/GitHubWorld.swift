import Foundation

/// The simulated GitHub: users and a pool of repositories generated from the seed.
/// Event feeds are generated lazily per repository (see `GitHubEvents.swift`).
struct GitHubWorld: Sendable {
    struct User: Sendable {
        var login: String
        var id: Int
        var isOrganization: Bool
        var name: String?
        var company: String?
        var blog: String
        var location: String?
        var email: String?
        var bio: String?
        var twitter: String?
        var hireable: Bool?
        var publicRepos: Int
        var publicGists: Int
        var followers: Int
        var following: Int
        var createdAt: Int
        var updatedAt: Int
    }

    struct Repo: Sendable {
        var index: Int
        var id: Int
        var owner: String
        var name: String
        var fullName: String { owner + "/" + name }
        var description: String?
        var language: String?
        var stars: Int
        var forks: Int
        var openIssues: Int
        var subscribers: Int
        var topics: [String]
        var license: String?
        var defaultBranch: String
        var homepage: String?
        var size: Int
        var createdAt: Int
        var updatedAt: Int
        var pushedAt: Int
        var maintainers: [String]
        var firstIssueNumber: Int
    }

    let seed: UInt64
    let anchor: Int
    private(set) var users: [User] = []
    private(set) var usersByKey: [String: Int] = [:]
    private(set) var repos: [Repo] = []
    private(set) var reposByKey: [String: Int] = [:]
    /// Generated people who show up as event actors.
    private(set) var actorPool: [String] = []

    init(seed: UInt64, anchor: Int, configuredRepos: [String]) {
        self.seed = seed
        self.anchor = anchor
        var usedUserIDs = Set<Int>()

        func newUserID(_ rng: inout SplitMix64, large: Bool = false) -> Int {
            while true {
                let id = large ? rng.int(20_000_000...190_000_000) : rng.int(1_000...150_000_000)
                if usedUserIDs.insert(id).inserted { return id }
            }
        }

        // Known people and organisations.
        for id in GitHubCatalog.fixedUserIDs.values { usedUserIDs.insert(id) }
        for known in GitHubCatalog.users {
            var r = SplitMix64(seed: seed, stream: "github.user", index: Hashing.fnv1a64(known.login.lowercased()))
            let id = GitHubCatalog.fixedUserIDs[known.login] ?? newUserID(&r)
            var user = makeUser(login: known.login, id: id, isOrganization: known.isOrganization, name: known.name,
                                company: known.company, location: known.location, blog: known.blog, bio: known.bio,
                                famous: true, rng: &r)
            // Known people keep exactly the profile written down (nulls included).
            user.company = known.company
            user.location = known.location
            user.bio = known.bio
            user.blog = known.blog
            addUser(user)
        }

        // The generated crowd of contributors.
        var crowd: [String] = []
        var nameRng = SplitMix64(seed: seed, stream: "github.crowd")
        var attempts = 0
        while crowd.count < 140 && attempts < 10_000 {
            attempts += 1
            let first = nameRng.pick(GitHubCatalog.firstNames)
            let last = nameRng.pick(GitHubCatalog.lastNames)
            let f = Self.asciiLogin(first)
            let l = Self.asciiLogin(last)
            let login: String
            switch nameRng.int(0..<6) {
            case 0: login = f + l
            case 1: login = f + "-" + l
            case 2: login = String(f.prefix(1)) + l
            case 3: login = f + l + String(nameRng.int(7...99))
            case 4: login = l + "-" + f + "-dev"
            default: login = f.capitalizedFirst + l.capitalizedFirst
            }
            guard usersByKey[login.lowercased()] == nil else { continue }
            var r = SplitMix64(seed: seed, stream: "github.user", index: Hashing.fnv1a64(login.lowercased()))
            let id = newUserID(&r, large: true)
            var user = makeUser(login: login, id: id, isOrganization: false, name: nil, company: nil, location: nil,
                                blog: "", bio: nil, famous: false, rng: &r)
            if r.chance(0.75) { user.name = first + " " + last }
            addUser(user)
            crowd.append(login)
        }
        actorPool = crowd

        // Repositories: configured first, then the catalog, then generated ones.
        var seenRepo = Set<String>()
        var repoIDs = Set(GitHubCatalog.fixedRepoIDs.values)
        func newRepoID(_ r: inout SplitMix64, year: Int) -> Int {
            // Repository ids grow with time, roughly like GitHub's.
            let base = max(1, (year - 2008)) * 60_000_000
            while true {
                let id = base + r.int(0..<50_000_000)
                if repoIDs.insert(id).inserted { return id }
            }
        }

        func ensureOwner(_ owner: String, organization: Bool) {
            guard usersByKey[owner.lowercased()] == nil else { return }
            var r = SplitMix64(seed: seed, stream: "github.user", index: Hashing.fnv1a64(owner.lowercased()))
            let id = newUserID(&r)
            addUser(makeUser(login: owner, id: id, isOrganization: organization, name: organization ? owner : nil,
                             company: nil, location: nil, blog: "", bio: nil, famous: organization, rng: &r))
        }

        let catalog = Dictionary(GitHubCatalog.repos.map { ($0.fullName.lowercased(), $0) }, uniquingKeysWith: { a, _ in a })
        var ordered: [(String, GitHubCatalog.KnownRepo?)] = []
        for full in configuredRepos {
            let key = full.lowercased()
            let parts = full.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty, seenRepo.insert(key).inserted else { continue }
            ordered.append((full, catalog[key]))
        }
        for known in GitHubCatalog.repos where seenRepo.insert(known.fullName.lowercased()).inserted {
            ordered.append((known.fullName, known))
        }

        for (full, known) in ordered {
            let parts = full.split(separator: "/").map(String.init)
            let (owner, name) = (parts[0], parts[1])
            var r = SplitMix64(seed: seed, stream: "github.repo", index: Hashing.fnv1a64(full.lowercased()))
            ensureOwner(owner, organization: known != nil)
            let year = known?.createdYear ?? r.int(2014...2023)
            let stars = known?.stars ?? r.heavyTail(min: 3, median: 400, max: 12_000)
            var repo = Repo(
                index: repos.count, id: GitHubCatalog.fixedRepoIDs[full] ?? newRepoID(&r, year: year), owner: canonicalLogin(owner), name: name,
                description: known?.description ?? "\(name): a Swift package", language: known == nil ? "Swift" : known!.language,
                stars: stars, forks: known?.forks ?? max(0, stars / r.int(6...20)), openIssues: 0, subscribers: 0,
                topics: known?.topics ?? ["swift"], license: known == nil ? "mit" : known!.license,
                defaultBranch: known?.defaultBranch ?? "main", homepage: known?.homepage, size: 0, createdAt: 0,
                updatedAt: 0, pushedAt: 0, maintainers: [], firstIssueNumber: 0)
            finishRepo(&repo, year: year, rng: &r, crowd: crowd)
            addRepo(repo)
        }

        // Generated long tail so that searches have plenty to return.
        var genRng = SplitMix64(seed: seed, stream: "github.pool")
        var orgs: [String] = []
        for _ in 0..<12 {
            let stem = genRng.pick(GitHubCatalog.nameStems)
            let org = genRng.chance(0.5) ? "\(stem)Labs" : "swift-\(stem.lowercased())-community"
            if !orgs.contains(org) { orgs.append(org) }
        }
        var guardCount = 0
        while repos.count < 240 && guardCount < 20_000 {
            guardCount += 1
            let stem = genRng.pick(GitHubCatalog.nameStems)
            let stem2 = genRng.pick(GitHubCatalog.nameStems)
            let name: String
            switch genRng.int(0..<5) {
            case 0: name = genRng.pick(GitHubCatalog.namePrefixes) + stem
            case 1: name = genRng.pick(GitHubCatalog.kebabPrefixes) + stem.lowercased() + "-" + stem2.lowercased()
            case 2: name = stem + stem2 + "Kit"
            case 3: name = genRng.pick(GitHubCatalog.kebabPrefixes) + stem.lowercased()
            default: name = stem + (genRng.chance(0.5) ? "Swift" : ".swift")
            }
            let isOrg = genRng.chance(0.2)
            let owner = isOrg ? genRng.pick(orgs) : genRng.pick(crowd)
            let full = owner + "/" + name
            guard seenRepo.insert(full.lowercased()).inserted else { continue }
            ensureOwner(owner, organization: isOrg)
            var r = SplitMix64(seed: seed, stream: "github.repo", index: Hashing.fnv1a64(full.lowercased()))
            let year = r.int(2014...2024)
            let stars = r.heavyTail(min: 0, median: 120, max: 9_000)
            let languages: [String?] = ["Swift", "Objective-C", "C++", "Kotlin", "Rust", "Go", "TypeScript", nil]
            let language = languages[r.weighted([76, 7, 3, 3, 2, 2, 2, 5])]
            let template = r.pick(GitHubCatalog.descriptionTemplates)
            let thing = r.chance(0.5) ? stem.lowercased() : "\(stem.lowercased()) \(stem2.lowercased())"
            let description: String? = r.chance(0.1) ? nil : template.replacingFirst("%@", with: thing).capitalizedFirst
            var topics: [String] = []
            for _ in 0..<r.int(0...4) {
                let t = r.pick(GitHubCatalog.topicPool)
                if !topics.contains(t) { topics.append(t) }
            }
            if language == "Swift" && !topics.isEmpty && !topics.contains("swift") { topics.insert("swift", at: 0) }
            let licenses: [String?] = ["mit", "apache-2.0", "bsd-3-clause", "mpl-2.0", "gpl-3.0", nil]
            var repo = Repo(
                index: repos.count, id: newRepoID(&r, year: year), owner: canonicalLogin(owner), name: name,
                description: description, language: language, stars: stars, forks: stars / r.int(5...25),
                openIssues: 0, subscribers: 0, topics: topics, license: licenses[r.weighted([55, 20, 5, 3, 5, 12])],
                defaultBranch: r.chance(0.8) ? "main" : "master", homepage: r.chance(0.2) ? "https://\(owner.lowercased()).github.io/\(name)" : nil,
                size: 0, createdAt: 0, updatedAt: 0, pushedAt: 0, maintainers: [], firstIssueNumber: 0)
            finishRepo(&repo, year: year, rng: &r, crowd: crowd)
            addRepo(repo)
        }

        // Public repo counts reflect the pool.
        for repo in repos {
            if let i = usersByKey[repo.owner.lowercased()] {
                users[i].publicRepos = max(users[i].publicRepos, 1)
            }
        }
    }

    private mutating func finishRepo(_ repo: inout Repo, year: Int, rng r: inout SplitMix64, crowd: [String]) {
        let created = SimDate.epoch(year: year, month: r.int(1...12), day: r.int(1...28), hour: r.int(0...23), minute: r.int(0...59), second: r.int(0...59))
        repo.createdAt = min(created, anchor - 40 * 86_400)
        repo.pushedAt = anchor - r.int(60...(repo.stars > 1000 ? 6 * 3600 : 20 * 86_400))
        repo.updatedAt = max(repo.pushedAt, anchor - r.int(30...3 * 3600))
        repo.openIssues = min(repo.stars / 20 + r.int(0...40), 2_500)
        repo.subscribers = max(1, repo.stars / r.int(20...45))
        repo.size = r.int(120...(repo.stars > 5000 ? 900_000 : 40_000))
        repo.firstIssueNumber = max(1, repo.stars / 8 + r.int(1...400))
        var maintainers = GitHubCatalog.maintainers[repo.fullName.lowercased()] ?? []
        if let owner = usersByKey[repo.owner.lowercased()], !users[owner].isOrganization, !maintainers.contains(repo.owner) {
            maintainers.append(repo.owner)
        }
        while maintainers.count < 3 {
            let login = r.pick(crowd)
            if !maintainers.contains(login) { maintainers.append(login) }
        }
        repo.maintainers = maintainers
    }

    private func makeUser(
        login: String, id: Int, isOrganization: Bool, name: String?, company: String?, location: String?,
        blog: String, bio: String?, famous: Bool, rng r: inout SplitMix64
    ) -> User {
        let created = SimDate.epoch(year: r.int(2009...2021), month: r.int(1...12), day: r.int(1...28), hour: r.int(0...23), minute: r.int(0...59), second: r.int(0...59))
        let followers = famous ? r.heavyTail(min: 300, median: 3_000, max: 60_000) : r.heavyTail(min: 0, median: 25, max: 4_000)
        return User(
            login: login, id: id, isOrganization: isOrganization,
            name: name,
            company: isOrganization ? nil : (company ?? (r.chance(0.45) ? r.pick(GitHubCatalog.companies) : nil)),
            blog: blog.isEmpty && r.chance(0.3) ? "https://\(login.lowercased()).dev" : blog,
            location: location ?? (r.chance(0.6) ? r.pick(GitHubCatalog.locations) : nil),
            email: r.chance(0.25) ? "\(login.lowercased())@users.noreply.github.com" : nil,
            bio: bio ?? (isOrganization ? nil : (r.chance(0.4) ? r.pick(GitHubCatalog.bios) : nil)),
            twitter: r.chance(0.2) ? login.lowercased() : nil,
            hireable: isOrganization ? nil : (r.chance(0.2) ? true : nil),
            publicRepos: isOrganization ? r.int(5...300) : r.int(0...180),
            publicGists: isOrganization ? 0 : r.int(0...60),
            followers: followers,
            following: isOrganization ? 0 : r.int(0...300),
            createdAt: min(created, anchor - 60 * 86_400),
            updatedAt: anchor - r.int(3_600...200 * 86_400))
    }

    private mutating func addUser(_ user: User) {
        usersByKey[user.login.lowercased()] = users.count
        users.append(user)
    }

    private mutating func addRepo(_ repo: Repo) {
        reposByKey[repo.fullName.lowercased()] = repos.count
        repos.append(repo)
    }

    private func canonicalLogin(_ login: String) -> String {
        usersByKey[login.lowercased()].map { users[$0].login } ?? login
    }

    func user(_ login: String) -> User? {
        usersByKey[login.lowercased()].map { users[$0] }
    }

    func repo(_ fullName: String) -> Repo? {
        reposByKey[fullName.lowercased()].map { repos[$0] }
    }

    static func asciiLogin(_ name: String) -> String {
        let map: [Character: String] = ["á": "a", "é": "e", "ü": "u", "ö": "o", "ä": "a", "ç": "c", "í": "i", "ó": "o", "ñ": "n", "ø": "o", "å": "a"]
        var out = ""
        for c in name.lowercased() {
            if let m = map[c] { out += m } else if c.isASCII && (c.isLetter || c.isNumber) { out.append(c) }
        }
        return out
    }

    // MARK: - JSON

    static let api = "https://api.github.com"

    func nodeID(_ prefix: String, _ id: Int) -> String {
        Base64.encode(prefix + String(id))
    }

    func userNodeID(_ user: User) -> String {
        user.isOrganization ? nodeID("012:Organization", user.id) : nodeID("04:User", user.id)
    }

    func avatarURL(_ user: User) -> String {
        "https://avatars.githubusercontent.com/u/\(user.id)?v=4"
    }

    /// The `simple-user` object embedded in repositories, issues, pull requests.
    func simpleUserJSON(_ user: User) -> JSON {
        let url = "\(Self.api)/users/\(user.login)"
        return obj(
            ("login", .string(user.login)), ("id", .int(user.id)), ("node_id", .string(userNodeID(user))),
            ("avatar_url", .string(avatarURL(user))), ("gravatar_id", ""), ("url", .string(url)),
            ("html_url", .string("https://github.com/\(user.login)")),
            ("followers_url", .string(url + "/followers")),
            ("following_url", .string(url + "/following{/other_user}")),
            ("gists_url", .string(url + "/gists{/gist_id}")),
            ("starred_url", .string(url + "/starred{/owner}{/repo}")),
            ("subscriptions_url", .string(url + "/subscriptions")),
            ("organizations_url", .string(url + "/orgs")),
            ("repos_url", .string(url + "/repos")),
            ("events_url", .string(url + "/events{/privacy}")),
            ("received_events_url", .string(url + "/received_events")),
            ("type", .string(user.isOrganization ? "Organization" : "User")),
            ("user_view_type", "public"),
            ("site_admin", false))
    }

    /// `GET /users/{login}`.
    func userJSON(_ user: User) -> JSON {
        guard case .object(var pairs) = simpleUserJSON(user) else { return .null }
        pairs.append(contentsOf: [
            ("name", JSON(user.name)), ("company", JSON(user.company)), ("blog", .string(user.blog)),
            ("location", JSON(user.location)), ("email", JSON(user.email)),
            ("hireable", user.hireable.map(JSON.bool) ?? .null), ("bio", JSON(user.bio)),
            ("twitter_username", JSON(user.twitter)), ("public_repos", .int(user.publicRepos)),
            ("public_gists", .int(user.publicGists)), ("followers", .int(user.followers)),
            ("following", .int(user.following)), ("created_at", .string(SimDate.iso8601(user.createdAt))),
            ("updated_at", .string(SimDate.iso8601(user.updatedAt))),
        ])
        return .object(pairs)
    }

    /// A repository as search returns it (`score` included) or as `GET /repos/{o}/{r}`
    /// returns it (`license`, `subscribers_count`, `network_count` included), with `permissions`
    /// (what the request's token may do; authenticated requests only) after `default_branch`,
    /// where GitHub puts it.
    func repoJSON(_ repo: Repo, forSearch: Bool, permissions: RepoPermissions? = nil) -> JSON {
        let owner = user(repo.owner)!
        let url = "\(Self.api)/repos/\(repo.fullName)"
        let html = "https://github.com/\(repo.fullName)"
        var pairs: [(String, JSON)] = [
            ("id", .int(repo.id)), ("node_id", .string(nodeID("010:Repository", repo.id))), ("name", .string(repo.name)),
            ("full_name", .string(repo.fullName)), ("private", false), ("owner", simpleUserJSON(owner)),
            ("html_url", .string(html)), ("description", JSON(repo.description)), ("fork", false), ("url", .string(url)),
            ("forks_url", .string(url + "/forks")), ("keys_url", .string(url + "/keys{/key_id}")),
            ("collaborators_url", .string(url + "/collaborators{/collaborator}")), ("teams_url", .string(url + "/teams")),
            ("hooks_url", .string(url + "/hooks")), ("issue_events_url", .string(url + "/issues/events{/number}")),
            ("events_url", .string(url + "/events")), ("assignees_url", .string(url + "/assignees{/user}")),
            ("branches_url", .string(url + "/branches{/branch}")), ("tags_url", .string(url + "/tags")),
            ("blobs_url", .string(url + "/git/blobs{/sha}")), ("git_tags_url", .string(url + "/git/tags{/sha}")),
            ("git_refs_url", .string(url + "/git/refs{/sha}")), ("trees_url", .string(url + "/git/trees{/sha}")),
            ("statuses_url", .string(url + "/statuses/{sha}")), ("languages_url", .string(url + "/languages")),
            ("stargazers_url", .string(url + "/stargazers")), ("contributors_url", .string(url + "/contributors")),
            ("subscribers_url", .string(url + "/subscribers")), ("subscription_url", .string(url + "/subscription")),
            ("commits_url", .string(url + "/commits{/sha}")), ("git_commits_url", .string(url + "/git/commits{/sha}")),
            ("comments_url", .string(url + "/comments{/number}")), ("issue_comment_url", .string(url + "/issues/comments{/number}")),
            ("contents_url", .string(url + "/contents/{+path}")), ("compare_url", .string(url + "/compare/{base}...{head}")),
            ("merges_url", .string(url + "/merges")), ("archive_url", .string(url + "/{archive_format}{/ref}")),
            ("downloads_url", .string(url + "/downloads")), ("issues_url", .string(url + "/issues{/number}")),
            ("pulls_url", .string(url + "/pulls{/number}")), ("milestones_url", .string(url + "/milestones{/number}")),
            ("notifications_url", .string(url + "/notifications{?since,all,participating}")),
            ("labels_url", .string(url + "/labels{/name}")), ("releases_url", .string(url + "/releases{/id}")),
            ("deployments_url", .string(url + "/deployments")),
            ("created_at", .string(SimDate.iso8601(repo.createdAt))), ("updated_at", .string(SimDate.iso8601(repo.updatedAt))),
            ("pushed_at", .string(SimDate.iso8601(repo.pushedAt))), ("git_url", .string("git://github.com/\(repo.fullName).git")),
            ("ssh_url", .string("git@github.com:\(repo.fullName).git")), ("clone_url", .string(html + ".git")),
            ("svn_url", .string(html)), ("homepage", JSON(repo.homepage)), ("size", .int(repo.size)),
            ("stargazers_count", .int(repo.stars)), ("watchers_count", .int(repo.stars)), ("language", JSON(repo.language)),
            ("has_issues", true), ("has_projects", true), ("has_downloads", true), ("has_wiki", .bool(repo.stars % 3 != 0)),
            ("has_pages", .bool(repo.homepage?.contains("github.io") ?? false)), ("has_discussions", .bool(repo.stars > 2_000)),
            ("forks_count", .int(repo.forks)), ("mirror_url", nil), ("archived", false), ("disabled", false),
            ("open_issues_count", .int(repo.openIssues)),
        ]
        if !forSearch {
            pairs.append(("license", licenseJSON(repo.license)))
        }
        pairs.append(contentsOf: [
            ("allow_forking", true), ("is_template", false), ("web_commit_signoff_required", false),
            ("topics", .array(repo.topics.map(JSON.string))), ("visibility", "public"), ("forks", .int(repo.forks)),
            ("open_issues", .int(repo.openIssues)), ("watchers", .int(repo.stars)),
            ("default_branch", .string(repo.defaultBranch)),
        ])
        if let permissions {
            pairs.append(("permissions", permissions.json))
        }
        if forSearch {
            pairs.append(("score", .double(1.0)))
        } else {
            pairs.append(contentsOf: [
                ("temp_clone_token", nil), ("network_count", .int(repo.forks)), ("subscribers_count", .int(repo.subscribers)),
            ])
        }
        return .object(pairs)
    }

    func licenseJSON(_ key: String?) -> JSON {
        guard let key, let license = GitHubCatalog.licenses[key] else { return .null }
        let index = GitHubCatalog.licenses.keys.sorted().firstIndex(of: key) ?? 0
        return obj(
            ("key", .string(license.key)), ("name", .string(license.name)), ("spdx_id", .string(license.spdx)),
            ("url", license.key == "other" ? .null : .string("\(Self.api)/licenses/\(license.key)")),
            ("node_id", .string(nodeID("07:License", index + 1))))
    }
}

enum Base64 {
    static func encode(_ string: String) -> String {
        let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        let bytes = Array(string.utf8)
        var out = ""
        var i = 0
        while i < bytes.count {
            let b0 = Int(bytes[i])
            let b1 = i + 1 < bytes.count ? Int(bytes[i + 1]) : 0
            let b2 = i + 2 < bytes.count ? Int(bytes[i + 2]) : 0
            out.append(table[b0 >> 2])
            out.append(table[((b0 & 3) << 4) | (b1 >> 4)])
            out.append(i + 1 < bytes.count ? table[((b1 & 15) << 2) | (b2 >> 6)] : "=")
            out.append(i + 2 < bytes.count ? table[b2 & 63] : "=")
            i += 3
        }
        return out
    }
}

extension String {
    var capitalizedFirst: String {
        guard let f = first else { return self }
        return f.uppercased() + dropFirst()
    }

    func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let r = range(of: target) else { return self }
        return replacingCharacters(in: r, with: replacement)
    }
}
