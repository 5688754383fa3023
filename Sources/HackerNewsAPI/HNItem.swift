import Foundation
import Freshet

/// A Hacker News item: a story, comment, job, poll or poll option.
///
/// Only ``id`` is guaranteed; a bare record such as `{"id":1,"time":2,"type":"story"}` decodes,
/// jobs can lack ``by``, and ``title`` arrives HTML-escaped (FreshetFeeds' `displayTitle` decodes it).
/// Skip items that are not ``isVisible``.
public struct HNItem: Codable, Sendable, Hashable, Identifiable {
    /// The item ID.
    public var id: Int
    /// `story`, `comment`, `job`, `poll` or `pollopt`.
    public var type: Kind?
    /// The author's user name.
    public var by: String?
    /// When the item was created, in Unix seconds (see ``date``).
    public var time: Int?
    /// The text of a comment, story, poll or job, as HTML.
    public var text: String?
    /// The story's URL.
    public var url: String?
    /// The story's score, or the poll option's votes.
    public var score: Int?
    /// The title of a story, poll or job, HTML-escaped, as Hacker News sends it.
    public var title: String?
    /// The total comment count of a story or poll.
    public var descendants: Int?
    /// The IDs of the direct replies, in ranked display order.
    public var kids: [Int]?
    /// The parent comment or story of a comment.
    public var parent: Int?
    /// The poll options of a poll, in display order.
    public var parts: [Int]?
    /// Whether the item is deleted.
    public var deleted: Bool?
    /// Whether the item is dead (flagged or killed).
    public var dead: Bool?
    /// The poll a poll option belongs to.
    public var poll: Int?

    /// Creates an item.
    public init(
        id: Int, type: Kind? = nil, by: String? = nil, time: Int? = nil, text: String? = nil,
        url: String? = nil, score: Int? = nil, title: String? = nil, descendants: Int? = nil,
        kids: [Int]? = nil, parent: Int? = nil, parts: [Int]? = nil, deleted: Bool? = nil,
        dead: Bool? = nil, poll: Int? = nil
    ) {
        self.id = id
        self.type = type
        self.by = by
        self.time = time
        self.text = text
        self.url = url
        self.score = score
        self.title = title
        self.descendants = descendants
        self.kids = kids
        self.parent = parent
        self.parts = parts
        self.deleted = deleted
        self.dead = dead
        self.poll = poll
    }

    enum CodingKeys: String, CodingKey {
        case id, type, by, time, text, url, score, title, descendants, kids, parent, parts, deleted, dead, poll
    }

    /// Decodes an item, each field through the container's own method for its type: the
    /// synthesized decoder takes ``type``, ``kids`` and ``parts`` through the generic one, which
    /// Foundation's JSON decoder runs unspecialized (a page of 500 stories decodes its items in
    /// 26.6M instructions this way against 32.0M).
    public init(from decoder: any Decoder) throws {
        try self.init(from: decoder, fields: .all)
    }

    /// An item with `fields` decoded; the others `nil`.
    init(from decoder: any Decoder, fields: Fields) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int.self, forKey: .id)
        type = try container.decodeIfPresent(String.self, forKey: .type).map(Kind.init(rawValue:))
        by = try container.decodeIfPresent(String.self, forKey: .by)
        time = try container.decodeIfPresent(Int.self, forKey: .time)
        text = try container.decodeIfPresent(String.self, forKey: .text)
        url = try container.decodeIfPresent(String.self, forKey: .url)
        score = try container.decodeIfPresent(Int.self, forKey: .score)
        title = try container.decodeIfPresent(String.self, forKey: .title)
        descendants = try container.decodeIfPresent(Int.self, forKey: .descendants)
        deleted = try container.decodeIfPresent(Bool.self, forKey: .deleted)
        dead = try container.decodeIfPresent(Bool.self, forKey: .dead)
        guard fields == .all else { return }
        kids = try Self.integers(in: container, forKey: .kids)
        parent = try container.decodeIfPresent(Int.self, forKey: .parent)
        parts = try Self.integers(in: container, forKey: .parts)
        poll = try container.decodeIfPresent(Int.self, forKey: .poll)
    }

    /// Which of an item's fields are decoded.
    public enum Fields: Sendable {
        /// Every field.
        case all
        /// What a row of a story list shows or filters on: not ``HNItem/kids``,
        /// ``HNItem/parent``, ``HNItem/parts`` or ``HNItem/poll`` (a story's `kids` are its
        /// whole list of top-level comments).
        case listing
    }

    /// An item decoded with ``Fields/listing``: a type of its own rather than a flag in the
    /// decoder's `userInfo`, which `JSONDecoder` copies into a new dictionary for every body.
    struct Listed: Decodable {
        var item: HNItem

        init(from decoder: any Decoder) throws {
            item = try HNItem(from: decoder, fields: .listing)
        }
    }

    /// Encodes the fields that are set, with the API's names, each through the container's own
    /// method for its type (see ``init(from:)``).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encodeIfPresent(type?.rawValue, forKey: .type)
        try container.encodeIfPresent(by, forKey: .by)
        try container.encodeIfPresent(time, forKey: .time)
        try container.encodeIfPresent(text, forKey: .text)
        try container.encodeIfPresent(url, forKey: .url)
        try container.encodeIfPresent(score, forKey: .score)
        try container.encodeIfPresent(title, forKey: .title)
        try container.encodeIfPresent(descendants, forKey: .descendants)
        try Self.encode(kids, in: &container, forKey: .kids)
        try container.encodeIfPresent(parent, forKey: .parent)
        try Self.encode(parts, in: &container, forKey: .parts)
        try container.encodeIfPresent(deleted, forKey: .deleted)
        try container.encodeIfPresent(dead, forKey: .dead)
        try container.encodeIfPresent(poll, forKey: .poll)
    }

    /// An array of integers written one by one as `Int`; nothing when `integers` is `nil`.
    private static func encode(_ integers: [Int]?, in container: inout KeyedEncodingContainer<CodingKeys>,
                               forKey key: CodingKeys) throws {
        guard let integers else { return }
        var elements = container.nestedUnkeyedContainer(forKey: key)
        for integer in integers { try elements.encode(integer) }
    }

    /// An array of integers, read one by one as `Int`; `nil` when the key is absent or `null`.
    private static func integers(in container: KeyedDecodingContainer<CodingKeys>, forKey key: CodingKeys) throws -> [Int]? {
        guard container.contains(key), try !container.decodeNil(forKey: key) else { return nil }
        var elements = try container.nestedUnkeyedContainer(forKey: key)
        var integers: [Int] = []
        if let count = elements.count { integers.reserveCapacity(count) }
        while !elements.isAtEnd { integers.append(try elements.decode(Int.self)) }
        return integers
    }

    /// ``time`` as a date.
    public var date: Date? {
        time.map { Date(timeIntervalSince1970: TimeInterval($0)) }
    }

    /// Whether the item should be shown: neither deleted nor dead.
    public var isVisible: Bool {
        deleted != true && dead != true
    }

    /// The kind of an item. Any string is accepted, so a new kind never breaks decoding.
    public struct Kind: RawRepresentable, Codable, Sendable, Hashable, ExpressibleByStringLiteral,
        CustomStringConvertible
    {
        /// The kind as the API sends it.
        public var rawValue: String

        /// Creates a kind.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Creates a kind from a literal.
        public init(stringLiteral value: String) { self.rawValue = value }

        /// The kind as the API sends it.
        public var description: String { rawValue }

        /// `story`
        public static let story = Kind(rawValue: "story")
        /// `comment`
        public static let comment = Kind(rawValue: "comment")
        /// `job`
        public static let job = Kind(rawValue: "job")
        /// `poll`
        public static let poll = Kind(rawValue: "poll")
        /// `pollopt`: one option of a poll.
        public static let pollOption = Kind(rawValue: "pollopt")
    }
}

/// A Hacker News user from `GET /user/{id}.json`.
public struct HNUser: Codable, Sendable, Hashable, Identifiable {
    /// The case-sensitive user name.
    public var id: String
    /// When the account was created, in Unix seconds (see ``createdDate``).
    public var created: Int
    /// The karma.
    public var karma: Int
    /// The self-description, as HTML.
    public var about: String?
    /// The IDs of the user's stories, polls and comments, newest first.
    public var submitted: [Int]?

    enum CodingKeys: String, CodingKey {
        case id, created, karma, about, submitted
    }

    /// Creates a user.
    public init(id: String, created: Int, karma: Int, about: String? = nil, submitted: [Int]? = nil) {
        self.id = id
        self.created = created
        self.karma = karma
        self.about = about
        self.submitted = submitted
    }

    /// ``created`` as a date.
    public var createdDate: Date {
        Date(timeIntervalSince1970: TimeInterval(created))
    }
}
