import Foundation

extension GitHubEvent {
    /// The type-specific part of an event.
    ///
    /// The whole payload is kept in ``raw`` and encoded back unchanged; the typed properties
    /// are read from it leniently: a field that is missing or has an unexpected shape is `nil`,
    /// and never makes the event fail to decode. Which fields are set depends on the event
    /// type (see ``GitHubEvent/Kind``).
    public struct Payload: Codable, Sendable, Hashable {
        /// The payload exactly as GitHub sent it.
        public private(set) var raw: JSONValue

        /// What happened (`started`, `opened`, `closed`, `created`, `published`, …).
        public private(set) var action: String?
        /// The git ref (`refs/heads/main` for pushes, the branch or tag name for create/delete).
        public private(set) var ref: String?
        /// `branch`, `tag` or `repository` (create/delete events).
        public private(set) var refType: String?
        /// The number of commits in a push.
        public private(set) var size: Int?
        /// The number of distinct commits in a push.
        public private(set) var distinctSize: Int?
        /// The SHA of the most recent commit after a push.
        public private(set) var head: String?
        /// The pushed commits (at most 20).
        public private(set) var commits: [Commit]?
        /// The issue of an issue or issue-comment event.
        public private(set) var issue: Issue?
        /// The comment of a comment event.
        public private(set) var comment: Comment?
        /// The pull request of a pull-request event.
        public private(set) var pullRequest: PullRequest?
        /// The pull request number.
        public private(set) var number: Int?
        /// The release of a release event.
        public private(set) var release: Release?
        /// The new repository of a fork event.
        public private(set) var forkee: Forkee?
        /// The user added to a repository.
        public private(set) var member: Member?

        enum CodingKeys: String, CodingKey {
            case action, ref
            case refType = "ref_type"
            case size
            case distinctSize = "distinct_size"
            case head, commits, issue, comment
            case pullRequest = "pull_request"
            case number, release, forkee, member
        }

        /// A payload made of `raw`, with the typed properties read from it: the same as decoding
        /// `raw`'s JSON text.
        ///
        /// - Parameter raw: the payload JSON; an empty object by default (as a `PublicEvent` has).
        public init(raw: JSONValue = .object([:])) {
            if let data = try? JSONEncoder().encode(raw),
               let decoded = try? JSONDecoder().decode(Payload.self, from: data) {
                self = decoded
            } else {
                self.raw = raw
            }
        }

        /// Decodes any JSON as a payload; this never fails on well-formed JSON. The whole value
        /// is kept in ``raw``; each typed property is read on its own, and one that is missing or
        /// has another shape (its type's own `Decodable` rules) is `nil`.
        public init(from decoder: any Decoder) throws {
            raw = try JSONValue(from: decoder)
            guard case .object = raw, let container = try? decoder.container(keyedBy: CodingKeys.self) else { return }
            func lenient<T: Decodable>(_ key: CodingKeys) -> T? {
                (try? container.decodeIfPresent(T.self, forKey: key)) ?? nil
            }
            action = lenient(.action)
            ref = lenient(.ref)
            refType = lenient(.refType)
            size = lenient(.size)
            distinctSize = lenient(.distinctSize)
            head = lenient(.head)
            commits = lenient(.commits)
            issue = lenient(.issue)
            comment = lenient(.comment)
            pullRequest = lenient(.pullRequest)
            number = lenient(.number)
            release = lenient(.release)
            forkee = lenient(.forkee)
            member = lenient(.member)
        }

        /// Encodes ``raw``, so the payload round-trips unchanged.
        public func encode(to encoder: any Encoder) throws {
            try raw.encode(to: encoder)
        }

        /// Whether the payload is empty (`{}` or `null`).
        public var isEmpty: Bool {
            switch raw {
            case .null: return true
            case .object(let members): return members.isEmpty
            default: return false
            }
        }
    }
}

extension GitHubEvent.Payload {
    /// One commit of a push.
    public struct Commit: Codable, Sendable, Hashable {
        /// The commit SHA.
        public var sha: String
        /// The commit message.
        public var message: String
        /// The commit author, as recorded in git.
        public var author: Author?
        /// Whether the commit is new to the repository.
        public var distinct: Bool?
        /// The commit's API URL.
        public var url: String?

        /// The first line of ``message``.
        public var subject: String {
            String(message.prefix { $0 != "\n" && $0 != "\r" })
        }

        /// Creates a commit.
        public init(sha: String, message: String, author: Author? = nil, distinct: Bool? = nil, url: String? = nil) {
            self.sha = sha
            self.message = message
            self.author = author
            self.distinct = distinct
            self.url = url
        }

        /// A git author.
        public struct Author: Codable, Sendable, Hashable {
            /// The author's name.
            public var name: String?
            /// The author's e-mail address.
            public var email: String?

            /// Creates an author.
            public init(name: String? = nil, email: String? = nil) {
                self.name = name
                self.email = email
            }
        }
    }

    /// The issue of an issue or issue-comment event.
    public struct Issue: Codable, Sendable, Hashable {
        /// The issue number.
        public var number: Int
        /// The issue title.
        public var title: String
        /// The issue's web page.
        public var htmlURL: String?

        enum CodingKeys: String, CodingKey {
            case number, title
            case htmlURL = "html_url"
        }

        /// Creates an issue reference.
        public init(number: Int, title: String, htmlURL: String? = nil) {
            self.number = number
            self.title = title
            self.htmlURL = htmlURL
        }
    }

    /// The comment of a comment event.
    public struct Comment: Codable, Sendable, Hashable {
        /// The comment text (Markdown).
        public var body: String
        /// The comment's web page.
        public var htmlURL: String?

        enum CodingKeys: String, CodingKey {
            case body
            case htmlURL = "html_url"
        }

        /// Creates a comment.
        public init(body: String, htmlURL: String? = nil) {
            self.body = body
            self.htmlURL = htmlURL
        }
    }

    /// The pull request of a pull-request event.
    public struct PullRequest: Codable, Sendable, Hashable {
        /// The pull request number.
        public var number: Int
        /// The title (GitHub may leave it out of event payloads).
        public var title: String?
        /// The pull request's web page.
        public var htmlURL: String?

        enum CodingKeys: String, CodingKey {
            case number, title
            case htmlURL = "html_url"
        }

        /// Creates a pull request reference.
        public init(number: Int, title: String? = nil, htmlURL: String? = nil) {
            self.number = number
            self.title = title
            self.htmlURL = htmlURL
        }
    }

    /// The release of a release event.
    public struct Release: Codable, Sendable, Hashable {
        /// The tag, e.g. `v1.2.0`.
        public var tagName: String
        /// The release name.
        public var name: String?
        /// The release's web page.
        public var htmlURL: String?

        enum CodingKeys: String, CodingKey {
            case tagName = "tag_name"
            case name
            case htmlURL = "html_url"
        }

        /// Creates a release reference.
        public init(tagName: String, name: String? = nil, htmlURL: String? = nil) {
            self.tagName = tagName
            self.name = name
            self.htmlURL = htmlURL
        }
    }

    /// The repository created by a fork event.
    public struct Forkee: Codable, Sendable, Hashable {
        /// `owner/name` of the fork.
        public var fullName: String
        /// The fork's web page.
        public var htmlURL: String?

        enum CodingKeys: String, CodingKey {
            case fullName = "full_name"
            case htmlURL = "html_url"
        }

        /// Creates a fork reference.
        public init(fullName: String, htmlURL: String? = nil) {
            self.fullName = fullName
            self.htmlURL = htmlURL
        }
    }

    /// The user of a member event.
    public struct Member: Codable, Sendable, Hashable {
        /// The user's login.
        public var login: String

        /// Creates a member reference.
        public init(login: String) {
            self.login = login
        }
    }
}
