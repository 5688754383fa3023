import Foundation
import Freshet
import FreshetCache
import HackerNewsAPI

/// One comment of a thread with its replies.
///
/// Encodes as the item with its upstream field names plus `comments`, the replies in the
/// same shape.
public struct CommentNode: Sendable, Hashable, Identifiable, Encodable {
    /// The comment. When it is deleted or dead (not `HNItem.isVisible`), the node is a
    /// placeholder kept only because some of its replies are visible.
    public var item: HNItem
    /// 0 for a direct reply to the story, 1 for a reply to that, …
    public var depth: Int
    /// The replies, in ranked order.
    public var children: [CommentNode]

    /// The comment ID.
    public var id: Int { item.id }

    /// Creates a node.
    public init(item: HNItem, depth: Int, children: [CommentNode] = []) {
        self.item = item
        self.depth = depth
        self.children = children
    }

    /// The node and all its descendants, depth first, in display order.
    public var flattened: [CommentNode] {
        [self] + children.flatMap(\.flattened)
    }

    private enum CommentsKey: String, CodingKey { case comments }

    /// The item's fields, then `comments`.
    public func encode(to encoder: any Encoder) throws {
        try item.encode(to: encoder)
        var container = encoder.container(keyedBy: CommentsKey.self)
        try container.encode(children, forKey: .comments)
    }
}

/// A story (or any item) with its whole comment tree.
public struct CommentThread: Sendable, Encodable {
    /// The item asked for: usually a story, but a comment, poll or job works too.
    public var root: HNItem
    /// The replies to ``root``, in ranked order, each with its own replies.
    public var comments: [CommentNode]
    /// The options of a poll, in display order (empty for anything else).
    public var pollOptions: [HNItem]
    /// IDs of replies left out: the API answered `null`, or they are deleted or dead with no
    /// visible reply below them.
    public var skipped: [Int]
    /// Replies that could not be loaded (after retries); their own replies are missing too.
    public var failures: [ItemFailure]
    /// Why stored responses were served although they were stale (the refresh failed), if any were.
    public var staleReasons: [StaleReason]
    /// Item requests made (the root included), cache hits included.
    public var requests: Int

    /// Every comment, depth first, in display order.
    public var flattened: [CommentNode] {
        comments.flatMap(\.flattened)
    }

    private enum Keys: String, CodingKey { case comments, poll_options }

    /// The root item's fields, then `comments` (and `poll_options` for a poll).
    public func encode(to encoder: any Encoder) throws {
        try root.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(comments, forKey: .comments)
        if !pollOptions.isEmpty { try container.encode(pollOptions, forKey: .poll_options) }
    }
}

/// Loads an item and its comment tree level by level: the item, then all its replies, then all
/// their replies, … each level fanned out with at most ``concurrency`` requests in flight (so
/// the bound holds for the whole tree, and a wide level is fetched at full width).
///
/// Deleted and dead comments are left out unless a visible reply hangs below them; then they
/// stay as placeholders so the thread keeps its shape. A reply that fails (after the client's
/// retries) is collected in ``CommentThread/failures``; the rest of the tree is still loaded.
public struct CommentTreeLoader: Sendable {
    /// The Hacker News client.
    public let client: APIClient
    /// The most item requests in flight at once.
    public var concurrency: Int

    /// A loader over `client` with at most `concurrency` requests in flight (clamped to
    /// ``StoryLoader/concurrencyRange``).
    public init(client: APIClient, concurrency: Int = StoryLoader.defaultConcurrency) {
        self.client = client
        let range = StoryLoader.concurrencyRange
        self.concurrency = min(max(concurrency, range.lowerBound), range.upperBound)
    }

    /// A loader over the context's Hacker News client.
    public init(context: AppContext, concurrency: Int = StoryLoader.defaultConcurrency) {
        self.init(client: context.hackerNews(), concurrency: concurrency)
    }

    /// Loads item `id` and every reply below it.
    ///
    /// - Parameters:
    ///   - id: the Hacker News item ID of the story (or comment, poll, job) at the root.
    ///   - force: revalidate with the server even what is fresh in the cache.
    ///   - progress: called after each reply request finishes, on the caller's task; `total`
    ///     grows as each level reveals the next.
    /// - Returns: the thread, or `nil` when the API answers `null` for `id` (no such item).
    /// - Throws: the root request's error. Reply failures do not throw.
    public func load(
        id: Int, force: Bool = false, progress: (LoadProgress) -> Void = { _ in }
    ) async throws(APIError) -> CommentThread? {
        let rootResponse = try await client.sendOrStored(StoryLoader.forced(HackerNews.item(id: id), force))
        guard let root = rootResponse.value else { return nil }
        var staleReasons: [StaleReason] = []
        if let reason = rootResponse.staleReason { staleReasons.append(reason) }

        var items: [Int: HNItem] = [:]
        var failures: [ItemFailure] = []
        var nulls: Set<Int> = []
        var visited: Set<Int> = [root.id]
        var completed = 0
        var total = 0
        var requests = 1

        /// Fetches `ids` with the bound; returns the ones that loaded.
        func fetch(_ ids: [Int]) async -> [HNItem] {
            total += ids.count
            requests += ids.count
            var loaded = [HNItem?](repeating: nil, count: ids.count)
            let endpoints = ids.map { StoryLoader.forced(HackerNews.item(id: $0), force) }
            func record(_ done: FanOutResult<HNItem?>) {
                let id = ids[done.offset]
                let outcome: LoadProgress.Outcome
                switch done.result {
                case .success(let response):
                    if let reason = response.staleReason, !staleReasons.contains(reason) { staleReasons.append(reason) }
                    if let item = response.value {
                        loaded[done.offset] = item
                        items[id] = item
                        outcome = item.isVisible ? .item(item) : .skipped(id: id)
                    } else {
                        nulls.insert(id)
                        outcome = .skipped(id: id)
                    }
                case .failure(let error):
                    let failure = ItemFailure(id: id, error: error)
                    failures.append(failure)
                    outcome = .failed(failure)
                }
                completed += 1
                progress(LoadProgress(completed: completed, total: total, latest: outcome))
            }
            if force {
                for await done in client.fanOut(endpoints, maxConcurrent: concurrency) { record(done) }
            } else {
                // What the cache holds fresh comes straight from it (a thread opened again).
                await client.fanOutStoredFirst(endpoints, maxConcurrent: concurrency, record)
            }
            return loaded.compactMap { $0 }
        }

        var pollOptions: [HNItem] = []
        if root.type == .poll, let parts = root.parts, !parts.isEmpty {
            let fresh = parts.filter { visited.insert($0).inserted }
            pollOptions = await fetch(fresh).filter(\.isVisible)
        }
        var level = [root]
        while !level.isEmpty {
            let next = level.flatMap { $0.kids ?? [] }.filter { visited.insert($0).inserted }
            if next.isEmpty { break }
            level = await fetch(next)
            if Task.isCancelled { throw .cancelled }
        }

        var skipped: [Int] = []
        func build(_ kids: [Int]?, depth: Int) -> [CommentNode] {
            (kids ?? []).compactMap { id -> CommentNode? in
                guard let item = items[id] else {
                    if nulls.contains(id) { skipped.append(id) }
                    return nil
                }
                let children = build(item.kids, depth: depth + 1)
                if !item.isVisible && children.isEmpty {
                    skipped.append(id)
                    return nil
                }
                return CommentNode(item: item, depth: depth, children: children)
            }
        }
        let comments = build(root.kids, depth: 0)
        return CommentThread(
            root: root, comments: comments, pollOptions: pollOptions, skipped: skipped,
            failures: failures, staleReasons: staleReasons, requests: requests)
    }
}
