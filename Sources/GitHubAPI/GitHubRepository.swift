import Foundation

/// The answer of `GET /search/repositories`.
public struct RepositorySearchResult: Codable, Sendable, Hashable {
    /// How many repositories match (GitHub returns at most 1000 of them).
    public var totalCount: Int
    /// Whether the search timed out before finding every match.
    public var incompleteResults: Bool
    /// This page of matches.
    public var items: [GitHubRepository]

    enum CodingKeys: String, CodingKey {
        case totalCount = "total_count"
        case incompleteResults = "incomplete_results"
        case items
    }

    /// Creates a search result.
    public init(totalCount: Int, incompleteResults: Bool = false, items: [GitHubRepository]) {
        self.totalCount = totalCount
        self.incompleteResults = incompleteResults
        self.items = items
    }
}

/// A repository, as returned by `GET /repos/{owner}/{repo}` and in search results.
///
/// `description`, `language` and `license` may be `null`. Search items carry a ``score``;
/// the single-repository endpoint adds ``subscribersCount``, ``networkCount`` and ``license``.
public struct GitHubRepository: Codable, Sendable, Hashable, Identifiable {
    /// The repository ID.
    public var id: Int
    /// The repository name.
    public var name: String
    /// `owner/name`.
    public var fullName: String
    /// The owning account.
    public var owner: Owner
    /// Whether the repository is private.
    public var isPrivate: Bool
    /// The repository's web page.
    public var htmlURL: String
    /// The description.
    public var description: String?
    /// Whether the repository is a fork.
    public var isFork: Bool
    /// When the repository was created.
    public var createdAt: Date
    /// When the repository (or its metadata) last changed.
    public var updatedAt: Date
    /// When something was last pushed; `nil` for an empty repository.
    public var pushedAt: Date?
    /// The number of stars.
    public var stargazersCount: Int
    /// The number of watchers (GitHub reports the star count here).
    public var watchersCount: Int
    /// The number of forks.
    public var forksCount: Int
    /// The number of open issues and pull requests.
    public var openIssuesCount: Int
    /// The main language.
    public var language: String?
    /// The topics; empty when GitHub leaves the field out.
    public var topics: [String]
    /// The default branch.
    public var defaultBranch: String
    /// The search relevance (search results only).
    public var score: Double?
    /// The number of subscribers (single-repository endpoint only).
    public var subscribersCount: Int?
    /// The number of repositories in the fork network (single-repository endpoint only).
    public var networkCount: Int?
    /// The license, when GitHub detected one.
    public var license: License?

    enum CodingKeys: String, CodingKey {
        case id, name
        case fullName = "full_name"
        case owner
        case isPrivate = "private"
        case htmlURL = "html_url"
        case description
        case isFork = "fork"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case pushedAt = "pushed_at"
        case stargazersCount = "stargazers_count"
        case watchersCount = "watchers_count"
        case forksCount = "forks_count"
        case openIssuesCount = "open_issues_count"
        case language, topics
        case defaultBranch = "default_branch"
        case score
        case subscribersCount = "subscribers_count"
        case networkCount = "network_count"
        case license
    }

    /// Creates a repository.
    public init(
        id: Int, name: String, fullName: String, owner: Owner, isPrivate: Bool = false, htmlURL: String,
        description: String? = nil, isFork: Bool = false, createdAt: Date, updatedAt: Date, pushedAt: Date? = nil,
        stargazersCount: Int = 0, watchersCount: Int = 0, forksCount: Int = 0, openIssuesCount: Int = 0,
        language: String? = nil, topics: [String] = [], defaultBranch: String = "main", score: Double? = nil,
        subscribersCount: Int? = nil, networkCount: Int? = nil, license: License? = nil
    ) {
        self.id = id
        self.name = name
        self.fullName = fullName
        self.owner = owner
        self.isPrivate = isPrivate
        self.htmlURL = htmlURL
        self.description = description
        self.isFork = isFork
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.pushedAt = pushedAt
        self.stargazersCount = stargazersCount
        self.watchersCount = watchersCount
        self.forksCount = forksCount
        self.openIssuesCount = openIssuesCount
        self.language = language
        self.topics = topics
        self.defaultBranch = defaultBranch
        self.score = score
        self.subscribersCount = subscribersCount
        self.networkCount = networkCount
        self.license = license
    }

    /// Decodes a repository; a missing or `null` `topics` becomes `[]`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int.self, forKey: .id)
        name = try container.decode(String.self, forKey: .name)
        fullName = try container.decode(String.self, forKey: .fullName)
        owner = try container.decode(Owner.self, forKey: .owner)
        isPrivate = try container.decode(Bool.self, forKey: .isPrivate)
        htmlURL = try container.decode(String.self, forKey: .htmlURL)
        description = try container.decodeIfPresent(String.self, forKey: .description)
        isFork = try container.decode(Bool.self, forKey: .isFork)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        updatedAt = try container.decode(Date.self, forKey: .updatedAt)
        pushedAt = try container.decodeIfPresent(Date.self, forKey: .pushedAt)
        stargazersCount = try container.decode(Int.self, forKey: .stargazersCount)
        watchersCount = try container.decode(Int.self, forKey: .watchersCount)
        forksCount = try container.decode(Int.self, forKey: .forksCount)
        openIssuesCount = try container.decode(Int.self, forKey: .openIssuesCount)
        language = try container.decodeIfPresent(String.self, forKey: .language)
        topics = try container.decodeIfPresent([String].self, forKey: .topics) ?? []
        defaultBranch = try container.decode(String.self, forKey: .defaultBranch)
        score = try container.decodeIfPresent(Double.self, forKey: .score)
        subscribersCount = try container.decodeIfPresent(Int.self, forKey: .subscribersCount)
        networkCount = try container.decodeIfPresent(Int.self, forKey: .networkCount)
        license = try container.decodeIfPresent(License.self, forKey: .license)
    }

    /// The account that owns a repository.
    public struct Owner: Codable, Sendable, Hashable {
        /// The login.
        public var login: String
        /// The account ID.
        public var id: Int
        /// The avatar image URL.
        public var avatarURL: String?

        enum CodingKeys: String, CodingKey {
            case login, id
            case avatarURL = "avatar_url"
        }

        /// Creates an owner.
        public init(login: String, id: Int, avatarURL: String? = nil) {
            self.login = login
            self.id = id
            self.avatarURL = avatarURL
        }
    }

    /// A repository's license.
    public struct License: Codable, Sendable, Hashable {
        /// GitHub's key, e.g. `mit`.
        public var key: String
        /// The full name, e.g. `MIT License`.
        public var name: String
        /// The SPDX identifier, e.g. `MIT`; `NOASSERTION` or `null` when unknown.
        public var spdxID: String?

        enum CodingKeys: String, CodingKey {
            case key, name
            case spdxID = "spdx_id"
        }

        /// Creates a license.
        public init(key: String, name: String, spdxID: String? = nil) {
            self.key = key
            self.name = name
            self.spdxID = spdxID
        }
    }
}
