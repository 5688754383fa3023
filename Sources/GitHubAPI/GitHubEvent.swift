import Foundation

/// One event of `GET /repos/{owner}/{repo}/events`.
///
/// Decoding is lenient where GitHub is inconsistent: `id` may be a string (what GitHub sends)
/// or a number (what its documentation says), an unknown ``type`` decodes as itself, and the
/// ``payload`` never fails to decode. Encoding writes GitHub's field names.
public struct GitHubEvent: Codable, Sendable, Hashable, Identifiable {
    /// The event ID, as a string (a numeric ID is converted).
    public var id: String
    /// The event type, such as `PushEvent`; unknown types are kept as they are.
    public var type: Kind
    /// Who caused the event.
    public var actor: Actor
    /// The repository the event happened in.
    public var repo: Repo
    /// Type-specific details.
    public var payload: Payload
    /// Whether the event is public.
    public var isPublic: Bool
    /// When the event happened.
    public var createdAt: Date
    /// The organization, when the repository belongs to one.
    public var org: Organization?

    enum CodingKeys: String, CodingKey {
        case id, type, actor, repo, payload
        case isPublic = "public"
        case createdAt = "created_at"
        case org
    }

    /// Creates an event.
    public init(
        id: String, type: Kind, actor: Actor, repo: Repo, payload: Payload = Payload(),
        isPublic: Bool = true, createdAt: Date, org: Organization? = nil
    ) {
        self.id = id
        self.type = type
        self.actor = actor
        self.repo = repo
        self.payload = payload
        self.isPublic = isPublic
        self.createdAt = createdAt
        self.org = org
    }

    /// Decodes an event, accepting a string or numeric `id` and a missing `payload` or `public`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        do {
            id = try container.decode(String.self, forKey: .id)
        } catch DecodingError.typeMismatch(let type, let context) {
            if let number = try? container.decode(Int64.self, forKey: .id) {
                id = String(number)
            } else {
                throw DecodingError.typeMismatch(type, context)
            }
        }
        type = try container.decode(Kind.self, forKey: .type)
        actor = try container.decode(Actor.self, forKey: .actor)
        repo = try container.decode(Repo.self, forKey: .repo)
        payload = try container.decodeIfPresent(Payload.self, forKey: .payload) ?? Payload()
        isPublic = try container.decodeIfPresent(Bool.self, forKey: .isPublic) ?? true
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        org = try container.decodeIfPresent(Organization.self, forKey: .org)
    }

    /// What the actor did, in a few words and without naming actor or repository:
    /// `starred`, `pushed 3 commits to main`, `opened issue #42: Title`, `published release v6.8.0`,
    /// `forked to x/y`. An unknown type still gets a line (`sponsorship`).
    public var activity: String {
        let action = payload.action
        switch type {
        case .watch:
            return "starred"
        case .push:
            let branch = payload.ref.map { $0.hasPrefix("refs/heads/") ? String($0.dropFirst(11)) : $0 }
            let count = payload.size ?? payload.commits?.count
            let commits = count.map { $0 == 1 ? "1 commit" : "\($0) commits" } ?? "commits"
            return "pushed \(commits)\(branch.map { " to \($0)" } ?? "")"
        case .create:
            return "created \(payload.refType ?? "ref")\(payload.ref.map { " \($0)" } ?? "")"
        case .delete:
            return "deleted \(payload.refType ?? "ref")\(payload.ref.map { " \($0)" } ?? "")"
        case .fork:
            return "forked\(payload.forkee.map { " to \($0.fullName)" } ?? "")"
        case .issues:
            return "\(action ?? "updated") issue\(Self.issueText(payload.issue))"
        case .issueComment:
            return "commented on issue\(Self.issueText(payload.issue))"
        case .pullRequest:
            let number = payload.number ?? payload.pullRequest?.number
            let title = payload.pullRequest?.title.map { ": \($0)" } ?? ""
            return "\(action ?? "updated") pull request\(number.map { " #\($0)" } ?? "")\(title)"
        case .pullRequestReview:
            return "reviewed pull request\(payload.pullRequest.map { " #\($0.number)" } ?? "")"
        case .pullRequestReviewComment:
            return "commented on pull request\(payload.pullRequest.map { " #\($0.number)" } ?? "")"
        case .release:
            return "\(action ?? "published") release\(payload.release.map { " \($0.tagName)" } ?? "")"
        case .member:
            return "\(action ?? "added") member \(payload.member?.login ?? "")".trimmingCharacters(in: .whitespaces)
        case .public:
            return "made the repository public"
        case .commitComment:
            return "commented on a commit"
        case .gollum:
            return "edited the wiki"
        case .discussion:
            return "\(action ?? "updated") a discussion"
        default:
            return Self.words(type.shortName)
        }
    }

    /// A one-line description for people: `octocat starred (octocat/Hello-World)`.
    public var summary: String {
        "\(actor.displayLogin ?? actor.login) \(activity) (\(repo.name))"
    }

    /// `SponsorshipEvent` → `sponsorship`, `PullRequestReviewThread` → `pull request review thread`.
    static func words(_ camel: String) -> String {
        var out = ""
        for character in camel {
            if character.isUppercase, !out.isEmpty { out.append(" ") }
            out.append(Character(character.lowercased()))
        }
        return out
    }

    private static func issueText(_ issue: Payload.Issue?) -> String {
        guard let issue else { return "" }
        return " #\(issue.number): \(issue.title)"
    }
}

extension GitHubEvent {
    /// An event type such as `PushEvent`. Any string is a valid kind, so a type GitHub adds
    /// later decodes, displays and encodes back unchanged; ``isKnown`` tells the two apart.
    public struct Kind: RawRepresentable, Codable, Sendable, Hashable, ExpressibleByStringLiteral,
        CustomStringConvertible
    {
        /// The type name as GitHub sends it.
        public var rawValue: String

        /// Creates a kind from GitHub's type name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Creates a kind from GitHub's type name.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        /// Creates a kind from a literal type name.
        public init(stringLiteral value: String) { self.rawValue = value }

        /// The type name.
        public var description: String { rawValue }

        /// The type name without the `Event` suffix (`Push` for `PushEvent`).
        public var shortName: String {
            rawValue.hasSuffix("Event") && rawValue.count > 5 ? String(rawValue.dropLast(5)) : rawValue
        }

        /// Whether this is one of the types listed in ``known``.
        public var isKnown: Bool { Self.known.contains(self) }

        /// `CommitCommentEvent`
        public static let commitComment = Kind("CommitCommentEvent")
        /// `CreateEvent`: a branch or tag was created (`ref`, `ref_type`).
        public static let create = Kind("CreateEvent")
        /// `DeleteEvent`: a branch or tag was deleted (`ref`, `ref_type`).
        public static let delete = Kind("DeleteEvent")
        /// `DiscussionEvent`
        public static let discussion = Kind("DiscussionEvent")
        /// `ForkEvent` (`forkee.full_name`).
        public static let fork = Kind("ForkEvent")
        /// `GollumEvent`: wiki pages changed.
        public static let gollum = Kind("GollumEvent")
        /// `IssueCommentEvent` (`action`, `issue`, `comment.body`).
        public static let issueComment = Kind("IssueCommentEvent")
        /// `IssuesEvent` (`action`, `issue`).
        public static let issues = Kind("IssuesEvent")
        /// `MemberEvent` (`action`, `member.login`).
        public static let member = Kind("MemberEvent")
        /// `PublicEvent`: the repository was made public (empty payload).
        public static let `public` = Kind("PublicEvent")
        /// `PullRequestEvent` (`action`, `number`, `pull_request`).
        public static let pullRequest = Kind("PullRequestEvent")
        /// `PullRequestReviewEvent`
        public static let pullRequestReview = Kind("PullRequestReviewEvent")
        /// `PullRequestReviewCommentEvent`
        public static let pullRequestReviewComment = Kind("PullRequestReviewCommentEvent")
        /// `PushEvent` (`ref`, `size`, `commits`).
        public static let push = Kind("PushEvent")
        /// `ReleaseEvent` (`action`, `release.tag_name`).
        public static let release = Kind("ReleaseEvent")
        /// `WatchEvent`: the repository was starred (`action: started`).
        public static let watch = Kind("WatchEvent")

        /// The event types GitHub documents.
        public static let known: [Kind] = [
            .commitComment, .create, .delete, .discussion, .fork, .gollum, .issueComment, .issues,
            .member, .public, .pullRequest, .pullRequestReview, .pullRequestReviewComment, .push,
            .release, .watch,
        ]
    }

    /// The account that caused an event.
    public struct Actor: Codable, Sendable, Hashable {
        /// The account ID.
        public var id: Int
        /// The login.
        public var login: String
        /// The login as GitHub displays it, when it differs (e.g. bots).
        public var displayLogin: String?
        /// The avatar image URL.
        public var avatarURL: String
        /// The account's API URL.
        public var url: String?

        enum CodingKeys: String, CodingKey {
            case id, login
            case displayLogin = "display_login"
            case avatarURL = "avatar_url"
            case url
        }

        /// Creates an actor.
        public init(id: Int, login: String, displayLogin: String? = nil, avatarURL: String, url: String? = nil) {
            self.id = id
            self.login = login
            self.displayLogin = displayLogin
            self.avatarURL = avatarURL
            self.url = url
        }
    }

    /// The repository an event happened in.
    public struct Repo: Codable, Sendable, Hashable {
        /// The repository ID.
        public var id: Int
        /// `owner/name`.
        public var name: String
        /// The repository's API URL.
        public var url: String

        /// Creates a repository reference.
        public init(id: Int, name: String, url: String) {
            self.id = id
            self.name = name
            self.url = url
        }
    }

    /// The organization an event's repository belongs to.
    public struct Organization: Codable, Sendable, Hashable {
        /// The organization ID.
        public var id: Int
        /// The organization's login.
        public var login: String
        /// The avatar image URL.
        public var avatarURL: String?
        /// The organization's API URL.
        public var url: String?

        enum CodingKeys: String, CodingKey {
            case id, login
            case avatarURL = "avatar_url"
            case url
        }

        /// Creates an organization reference.
        public init(id: Int, login: String, avatarURL: String? = nil, url: String? = nil) {
            self.id = id
            self.login = login
            self.avatarURL = avatarURL
            self.url = url
        }
    }
}
