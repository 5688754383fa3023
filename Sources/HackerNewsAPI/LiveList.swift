import Foundation
import Freshet

extension HackerNews {
    /// The changes to a story list, streamed: Firebase's REST interface answers a `GET` with
    /// `Accept: text/event-stream` (`APIClient/events(_:options:)` sends it) with a `307` to its
    /// streaming server, then `put` and `patch` events whose data is a ``ListChange``, a
    /// `keep-alive` every 30 s, and `cancel` or `auth_revoked` when it stops serving the stream.
    /// Each connection starts with a `put` of the whole list.
    public static func listChanges(_ list: StoryList) -> Endpoint<ListChange> {
        Endpoint(path: [list.fileName]) { data, _ in
            try HackerNews.decoder.decode(ListChange.self, from: data)
        }.named("/\(list.fileName)")
    }

    /// The data of a Firebase `put` or `patch` event on a story list: where in the list
    /// (`path`: `/` for the whole list, `/12` for position 12) and what is there now.
    public struct ListChange: Decodable, Sendable, Equatable {
        /// The position the change is at: `/` or `/<index>`.
        public var path: String
        /// The ids by position: the whole list for a `put` at `/`, the changed positions for a
        /// `patch`, one position for a `put` at `/<index>`. `nil` removes a position.
        public var positions: [Int: Int?]

        /// Creates a change.
        public init(path: String, positions: [Int: Int?]) {
            self.path = path
            self.positions = positions
        }

        private enum CodingKeys: String, CodingKey { case path, data }

        /// Decodes `{"path": …, "data": …}`: `data` is an array of ids, an object of positions,
        /// one id, or `null`.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            path = try container.decode(String.self, forKey: .path)
            if try container.decodeNil(forKey: .data) {
                positions = [:]
            } else if let ids = try? container.decode([Int?].self, forKey: .data) {
                positions = Dictionary(uniqueKeysWithValues: ids.enumerated().map { ($0.offset, $0.element) })
            } else if let object = try? container.decode([String: Int?].self, forKey: .data) {
                positions = [:]
                for (key, id) in object {
                    guard let index = Int(key), index >= 0 else {
                        throw DecodingError.dataCorruptedError(forKey: .data, in: container,
                                                               debugDescription: "position \(key) is not a number")
                    }
                    positions[index] = id
                }
            } else {
                let id = try container.decode(Int.self, forKey: .data)
                positions = [0: id]
            }
        }
    }

    /// A story list kept up to date from its stream's events (``listChanges(_:)``).
    public struct LiveList: Sendable, Equatable {
        private var byPosition: [Int: Int] = [:]

        /// An empty list, before the first `put`.
        public init() {}

        /// The ids in rank order.
        public var ids: [Int] {
            byPosition.sorted { $0.key < $1.key }.map(\.value)
        }

        /// Applies a `put` (replaces what is at the path) or a `patch` (changes the positions
        /// named); other event types change nothing. Returns whether the list changed.
        @discardableResult
        public mutating func apply(_ type: String, _ change: ListChange) -> Bool {
            let before = byPosition
            let parts = change.path.split(separator: "/")
            switch (type, parts.count) {
            case ("put", 0):
                byPosition = change.positions.compactMapValues { $0 }
            case ("put", 1):
                guard let index = Int(parts[0]) else { return false }
                byPosition[index] = change.positions[0] ?? nil
            case ("patch", 0):
                for (index, id) in change.positions { byPosition[index] = id }
            case ("patch", 1):
                // A patch below a position: only a whole id makes sense there.
                guard let index = Int(parts[0]), let id = change.positions[0] else { return false }
                byPosition[index] = id
            default:
                return false
            }
            return byPosition != before
        }
    }
}
