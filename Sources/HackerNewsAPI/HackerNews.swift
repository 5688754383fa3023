import Foundation
import Freshet

/// The Hacker News Firebase API endpoints, as Freshet `Endpoint` values.
///
/// There is no batch endpoint: a front page is one ``stories(_:)`` request followed by one
/// ``item(id:)`` request per story. Send those with bounded concurrency
/// (`APIClient.fanOut(_:maxConcurrent:)`).
///
/// ```swift
/// let client = APIClient(baseURL: HackerNews.defaultBaseURL, transport: transport)
/// let ids = try await client.value(HackerNews.stories(.top))
/// for await result in client.fanOut(ids.prefix(30).map(HackerNews.item(id:)), maxConcurrent: 30) { … }
/// ```
public enum HackerNews {
    /// `https://hacker-news.firebaseio.com/v0`. Endpoint paths are relative to it.
    public static let defaultBaseURL = URL(string: "https://hacker-news.firebaseio.com/v0")!

    /// One of the story lists on the front pages.
    public enum StoryList: String, CaseIterable, Codable, Sendable, Hashable {
        /// Top stories (up to 500).
        case top
        /// Newest stories (up to 500).
        case new
        /// Best stories (up to 500).
        case best
        /// Ask HN (up to 200).
        case ask
        /// Show HN (up to 200).
        case show
        /// Jobs (up to 200).
        case job

        /// The file the list is served from, e.g. `topstories.json`.
        public var fileName: String { "\(rawValue)stories.json" }

        /// The most IDs the list holds: 500 for top, new and best; 200 for the others.
        public var maxCount: Int {
            switch self {
            case .top, .new, .best: return 500
            case .ask, .show, .job: return 200
            }
        }
    }

    /// `GET /{list}stories.json`: the IDs of a story list, in rank order.
    public static func stories(_ list: StoryList) -> Endpoint<[Int]> {
        endpoint([list.fileName])
    }

    /// `GET /item/{id}.json`: a story, comment, job, poll or poll option.
    ///
    /// The value is `nil` when the API answers the JSON literal `null` (deleted items, item 0,
    /// some jobs).
    public static func item(id: Int) -> Endpoint<HNItem?> {
        endpoint(["item", "\(id).json"])
    }

    /// ``item(id:)`` with only `fields` decoded: ``HNItem/Fields/listing`` for a row of a story
    /// list, which never needs the item's comments.
    public static func item(id: Int, fields: HNItem.Fields) -> Endpoint<HNItem?> {
        guard fields == .listing else { return item(id: id) }
        return Endpoint(path: ["item", "\(id).json"]) { data, _ in try decoder.decode(HNItem.Listed?.self, from: data)?.item }
    }

    /// `GET /user/{id}.json`: a user; `nil` when the API answers `null` (no such user).
    ///
    /// User IDs are case-sensitive.
    public static func user(id: String) -> Endpoint<HNUser?> {
        endpoint(["user", "\(id).json"])
    }

    private static func endpoint<T: Decodable & Sendable>(_ path: [String]) -> Endpoint<T> {
        Endpoint(path: path) { data, _ in
            try HackerNews.decoder.decode(T.self, from: data)
        }
    }

    /// The decoder for Hacker News bodies (times stay Unix seconds). Treat it as read-only.
    public static let decoder = JSONDecoder()

    /// An encoder that writes models back with the API's field names, keys sorted and slashes
    /// unescaped. Treat it as read-only.
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
