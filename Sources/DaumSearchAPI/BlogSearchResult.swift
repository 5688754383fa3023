import Foundation
import Freshet

/// The answer of `GET /v2/search/blog`.
public struct BlogSearchResult: Codable, Sendable, Hashable {
    /// Counts and whether this is the last page.
    public var meta: Meta
    /// The posts on this page.
    public var documents: [BlogPost]

    /// Creates a result.
    public init(meta: Meta, documents: [BlogPost]) {
        self.meta = meta
        self.documents = documents
    }

    /// Whether a next page can be requested.
    public var hasNextPage: Bool { !meta.isEnd }

    /// The counts of a search.
    public struct Meta: Codable, Sendable, Hashable {
        /// How many posts match.
        public var totalCount: Int
        /// How many of them can be paged through.
        public var pageableCount: Int
        /// Whether this is the last page.
        public var isEnd: Bool

        enum CodingKeys: String, CodingKey {
            case totalCount = "total_count"
            case pageableCount = "pageable_count"
            case isEnd = "is_end"
        }

        /// Creates the counts.
        public init(totalCount: Int, pageableCount: Int, isEnd: Bool) {
            self.totalCount = totalCount
            self.pageableCount = pageableCount
            self.isEnd = isEnd
        }
    }
}

/// One blog post of a search result.
///
/// ``title`` and ``contents`` carry `<b>…</b>` highlights and HTML entities as sent
/// (FreshetFeeds' `displayTitle` and `displayContents` give plain text). ``datetime`` is kept as sent so the
/// post encodes back unchanged; ``date`` is the parsed instant.
public struct BlogPost: Codable, Sendable, Hashable {
    /// The title, with highlight tags and entities.
    public var title: String
    /// An excerpt, with highlight tags and entities.
    public var contents: String
    /// The post's URL.
    public var url: String
    /// The blog's name.
    public var blogname: String
    /// A thumbnail image URL; may be `""`.
    public var thumbnail: String
    /// When the post was written, as sent: `2017-06-14T00:00:00.000+09:00`.
    public var datetime: String

    enum CodingKeys: String, CodingKey {
        case title, contents, url, blogname, thumbnail, datetime
    }

    /// Creates a post.
    public init(title: String, contents: String, url: String, blogname: String, thumbnail: String = "", datetime: String) {
        self.title = title
        self.contents = contents
        self.url = url
        self.blogname = blogname
        self.thumbnail = thumbnail
        self.datetime = datetime
    }

    /// ``datetime`` as an instant; `nil` if it is not an ISO-8601 date-time with an offset.
    public var date: Date? { KakaoDateTime.parse(datetime) }

    /// The thumbnail URL, or `nil` when there is none.
    public var thumbnailURL: URL? { thumbnail.isEmpty ? nil : URL(string: thumbnail) }
}

/// A Kakao API error body, in either of its two shapes.
///
/// The reference documentation shows `{"code": -401, "msg": "…"}`; the live service answers
/// `{"errorType": "AccessDeniedError", "message": "…"}`. Both decode; ``message`` is the text to
/// show. Encoding writes the shape that was decoded.
public struct KakaoErrorBody: Codable, Sendable, Hashable, Error, CustomStringConvertible {
    /// The error text.
    public var message: String
    /// The live service's error type, e.g. `AccessDeniedError`, `MissingParameter`, `InvalidArgument`.
    public var errorType: String?
    /// The documented numeric code, e.g. `-401`.
    public var code: Int?

    enum CodingKeys: String, CodingKey {
        case message, errorType, code, msg
    }

    /// Creates an error body.
    public init(message: String, errorType: String? = nil, code: Int? = nil) {
        self.message = message
        self.errorType = errorType
        self.code = code
    }

    /// Decodes either shape (a `code` that is not an integer is ignored). A body with neither
    /// `message` nor `msg` fails to decode.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        errorType = try container.decodeIfPresent(String.self, forKey: .errorType)
        code = (try? container.decodeIfPresent(Int.self, forKey: .code)) ?? nil
        if let message = try container.decodeIfPresent(String.self, forKey: .message) {
            self.message = message
        } else if let message = try container.decodeIfPresent(String.self, forKey: .msg) {
            self.message = message
        } else {
            throw DecodingError.keyNotFound(
                CodingKeys.message,
                DecodingError.Context(codingPath: decoder.codingPath,
                                      debugDescription: "a Kakao error body has \"message\" or \"msg\""))
        }
    }

    /// Encodes `{"code", "msg"}` when there is a code and no error type, else `{"errorType", "message"}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if let code, errorType == nil {
            try container.encode(code, forKey: .code)
            try container.encode(message, forKey: .msg)
        } else {
            try container.encodeIfPresent(errorType, forKey: .errorType)
            try container.encode(message, forKey: .message)
            try container.encodeIfPresent(code, forKey: .code)
        }
    }

    /// `errorType: message`, or the message alone.
    public var description: String {
        errorType.map { "\($0): \(message)" } ?? message
    }
}

/// Reads Kakao's error bodies, in either shape (``KakaoErrorBody``): the message, with the live
/// service's error type after it (`wrong appKey(null) format (AccessDeniedError)`).
public struct KakaoErrorBodyReader: ErrorBodyReader {
    /// The reader.
    public init() {}

    /// The message of a Kakao error body, if `body` is one.
    public func message(in body: Data) -> String? {
        guard !body.isEmpty, let error = try? DaumSearch.decoder.decode(KakaoErrorBody.self, from: body.prefix(64 * 1024))
        else { return nil }
        return error.message + (error.errorType.map { " (\($0))" } ?? "")
    }
}

extension ErrorBodyReader where Self == KakaoErrorBodyReader {
    /// Kakao's error bodies (``KakaoErrorBodyReader``).
    public static var kakao: KakaoErrorBodyReader { KakaoErrorBodyReader() }
}
