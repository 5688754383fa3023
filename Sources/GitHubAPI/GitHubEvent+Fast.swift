import Foundation

// Reading events from a parsed JSON tree instead of through `JSONDecoder`.
//
// The rules mirror what the synthesized `Decodable` conformances do with `GitHub.decoder`:
// a required field must be present, non-null and of the right type; an optional one may be
// missing or null, but a value of the wrong type fails the whole value; unknown keys are
// ignored. A tree whose values came from `JSONDecoder` (``JSONValue/init(from:)``) or from
// ``FastJSON`` (which only vouches for input `JSONDecoder` reads the same way) gives the same
// result as decoding the JSON text.

extension JSONValue {
    /// The members of an object value.
    fileprivate var members: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }
}

/// How an optional field reads: missing or `null` is `nil`; a value of the wrong type fails.
private enum Field<T> {
    case value(T?)
    case mismatch
}

private func optional<T>(_ value: JSONValue?, _ read: (JSONValue) -> T?) -> Field<T> {
    guard let value, value != .null else { return .value(nil) }
    guard let typed = read(value) else { return .mismatch }
    return .value(typed)
}

/// Readers of one JSON value as a field type: `nil` when it has another type.
enum TreeField {
    static func string(_ value: JSONValue) -> String? { value.stringValue }
    static func int(_ value: JSONValue) -> Int? { value.intValue }
    static func bool(_ value: JSONValue) -> Bool? {
        if case .bool(let flag) = value { return flag }
        return nil
    }
}

/// Reads an optional field into `target`; returns `false` on a type mismatch.
private func read<T>(_ members: [String: JSONValue], _ key: String, _ reader: (JSONValue) -> T?, into target: inout T?)
    -> Bool
{
    switch optional(members[key], reader) {
    case .value(let value):
        target = value
        return true
    case .mismatch:
        return false
    }
}

extension GitHubEvent.Payload.Commit {
    init?(tree: JSONValue) {
        guard let members = tree.members, let sha = members["sha"]?.stringValue,
              let message = members["message"]?.stringValue else { return nil }
        var author: Author?
        var distinct: Bool?
        var url: String?
        guard read(members, "author", Author.init(tree:), into: &author), read(members, "distinct", TreeField.bool, into: &distinct),
              read(members, "url", TreeField.string, into: &url) else { return nil }
        self.init(sha: sha, message: message, author: author, distinct: distinct, url: url)
    }
}

extension GitHubEvent.Payload.Commit.Author {
    init?(tree: JSONValue) {
        guard let members = tree.members else { return nil }
        var name: String?
        var email: String?
        guard read(members, "name", TreeField.string, into: &name), read(members, "email", TreeField.string, into: &email) else { return nil }
        self.init(name: name, email: email)
    }
}

extension GitHubEvent.Payload.Issue {
    init?(tree: JSONValue) {
        guard let members = tree.members, let number = members["number"]?.intValue,
              let title = members["title"]?.stringValue else { return nil }
        var htmlURL: String?
        guard read(members, "html_url", TreeField.string, into: &htmlURL) else { return nil }
        self.init(number: number, title: title, htmlURL: htmlURL)
    }
}

extension GitHubEvent.Payload.Comment {
    init?(tree: JSONValue) {
        guard let members = tree.members, let body = members["body"]?.stringValue else { return nil }
        var htmlURL: String?
        guard read(members, "html_url", TreeField.string, into: &htmlURL) else { return nil }
        self.init(body: body, htmlURL: htmlURL)
    }
}

extension GitHubEvent.Payload.PullRequest {
    init?(tree: JSONValue) {
        guard let members = tree.members, let number = members["number"]?.intValue else { return nil }
        var title: String?
        var htmlURL: String?
        guard read(members, "title", TreeField.string, into: &title), read(members, "html_url", TreeField.string, into: &htmlURL) else {
            return nil
        }
        self.init(number: number, title: title, htmlURL: htmlURL)
    }
}

extension GitHubEvent.Payload.Release {
    init?(tree: JSONValue) {
        guard let members = tree.members, let tagName = members["tag_name"]?.stringValue else { return nil }
        var name: String?
        var htmlURL: String?
        guard read(members, "name", TreeField.string, into: &name), read(members, "html_url", TreeField.string, into: &htmlURL) else {
            return nil
        }
        self.init(tagName: tagName, name: name, htmlURL: htmlURL)
    }
}

extension GitHubEvent.Payload.Forkee {
    init?(tree: JSONValue) {
        guard let members = tree.members, let fullName = members["full_name"]?.stringValue else { return nil }
        var htmlURL: String?
        guard read(members, "html_url", TreeField.string, into: &htmlURL) else { return nil }
        self.init(fullName: fullName, htmlURL: htmlURL)
    }
}

extension GitHubEvent.Payload.Member {
    init?(tree: JSONValue) {
        guard let members = tree.members, let login = members["login"]?.stringValue else { return nil }
        self.init(login: login)
    }
}

extension GitHubEvent.Actor {
    init?(tree: JSONValue) {
        guard let members = tree.members, let id = members["id"]?.intValue, let login = members["login"]?.stringValue,
              let avatarURL = members["avatar_url"]?.stringValue else { return nil }
        var displayLogin: String?
        var url: String?
        guard read(members, "display_login", TreeField.string, into: &displayLogin), read(members, "url", TreeField.string, into: &url) else {
            return nil
        }
        self.init(id: id, login: login, displayLogin: displayLogin, avatarURL: avatarURL, url: url)
    }
}

extension GitHubEvent.Repo {
    init?(tree: JSONValue) {
        guard let members = tree.members, let id = members["id"]?.intValue, let name = members["name"]?.stringValue,
              let url = members["url"]?.stringValue else { return nil }
        self.init(id: id, name: name, url: url)
    }
}

extension GitHubEvent.Organization {
    init?(tree: JSONValue) {
        guard let members = tree.members, let id = members["id"]?.intValue, let login = members["login"]?.stringValue
        else { return nil }
        var avatarURL: String?
        var url: String?
        guard read(members, "avatar_url", TreeField.string, into: &avatarURL), read(members, "url", TreeField.string, into: &url) else {
            return nil
        }
        self.init(id: id, login: login, avatarURL: avatarURL, url: url)
    }
}

extension GitHubEvent {
    /// The event in `tree` (an object as GitHub or ``GitHub/encoder`` writes it), or `nil` when
    /// it is not one: the caller then decodes with `JSONDecoder` to get the error.
    init?(tree: JSONValue) {
        guard let members = tree.members else { return nil }
        switch members["id"] {
        case .string(let text)?: id = text
        case .int(let number)?: id = String(number)
        default: return nil
        }
        guard let type = members["type"]?.stringValue, let actor = members["actor"].flatMap(Actor.init(tree:)),
              let repo = members["repo"].flatMap(Repo.init(tree:)),
              let created = members["created_at"]?.stringValue, let createdAt = GitHub.parseDate(created)
        else { return nil }
        self.type = Kind(type)
        self.actor = actor
        self.repo = repo
        self.createdAt = createdAt
        switch members["payload"] {
        case nil, .null?: payload = Payload()
        case let value?: payload = Payload(tree: value)
        }
        var isPublic: Bool?
        var org: Organization?
        guard read(members, "public", TreeField.bool, into: &isPublic), read(members, "org", Organization.init(tree:), into: &org)
        else { return nil }
        self.isPublic = isPublic ?? true
        self.org = org
    }

    /// Decodes one event from GitHub's JSON (or ``GitHub/encoder``'s), like
    /// `GitHub.decoder.decode(GitHubEvent.self, from: data)` but several times faster: the
    /// common shapes are read by a small JSON reader, anything else by `JSONDecoder`.
    /// - Throws: `DecodingError`, as `JSONDecoder` would.
    public static func decode(from data: Data) throws -> GitHubEvent {
        if let tree = FastJSON.parse(data), let event = GitHubEvent(tree: tree) { return event }
        return try GitHub.decoder.decode(GitHubEvent.self, from: data)
    }

    /// Decodes a JSON array of events (the body of `GET /repos/{owner}/{repo}/events`), like
    /// `GitHub.decoder.decode([GitHubEvent].self, from: data)`, but faster (see ``decode(from:)``).
    /// - Throws: `DecodingError`, as `JSONDecoder` would.
    public static func decodeList(from data: Data) throws -> [GitHubEvent] {
        var events: [GitHubEvent] = []
        let complete = FastJSON.forEachElement(data) { element in
            guard let event = GitHubEvent(tree: element) else { return false }
            events.append(event)
            return true
        }
        if complete { return events }
        return try GitHub.decoder.decode([GitHubEvent].self, from: data)
    }
}
