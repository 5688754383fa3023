import Foundation
import Freshet
import FreshetCache
import HackerNewsAPI
import HTTPTypes

/// A story of a Hacker News list with its rank.
///
/// Encodes as the item with its upstream field names plus `rank`.
public struct RankedStory: Sendable, Hashable, Identifiable, Encodable {
    /// The 1-based position of the story in the list the API returned. Skipped items (null,
    /// deleted, dead) keep their positions, so a skipped item leaves a gap in the ranks.
    public var rank: Int
    /// The item.
    public var item: HNItem

    /// The item ID.
    public var id: Int { item.id }

    /// Creates a ranked story.
    public init(rank: Int, item: HNItem) {
        self.rank = rank
        self.item = item
    }

    private enum RankKey: String, CodingKey { case rank }

    /// The item's fields, then `rank`, in one JSON object.
    public func encode(to encoder: any Encoder) throws {
        try item.encode(to: encoder)
        var container = encoder.container(keyedBy: RankKey.self)
        try container.encode(rank, forKey: .rank)
    }

    /// The host of the story's URL without a leading `www.` (`github.com`); `"self"` for a post
    /// without a URL but with text (Ask HN, text-only Show HN and jobs); `""` otherwise.
    public var domain: String {
        StoryDomain.of(item)
    }
}

/// The site a Hacker News item links to, as shown next to its title.
public enum StoryDomain {
    /// The host of `item.url` without `www.`; `"self"` for a text post; `""` when there is neither.
    public static func of(_ item: HNItem) -> String {
        if let text = item.url, !text.isEmpty {
            guard let host = (plainHost(text).map(String.init) ?? URLComponents(string: text)?.host)?.lowercased(), !host.isEmpty
            else { return "" }
            return host.hasPrefix("www.") ? String(host.dropFirst(4)) : host
        }
        if let text = item.text, !text.isEmpty { return "self" }
        return ""
    }

    /// The host of a plain `http(s)://host[:port][/?#…]` URL read off its text (a row per story
    /// parsed every URL whole); `nil` for anything else (a user, an IP literal, an escape, another
    /// scheme), which `URLComponents` takes apart.
    static func plainHost(_ text: String) -> Substring? {
        let bytes = text.utf8
        let start: String.Index
        if bytes.starts(with: "https://".utf8) {
            start = text.utf8.index(text.startIndex, offsetBy: 8)
        } else if bytes.starts(with: "http://".utf8) {
            start = text.utf8.index(text.startIndex, offsetBy: 7)
        } else {
            return nil
        }
        var end = start
        while end < text.endIndex {
            let byte = text.utf8[end]
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") || byte == UInt8(ascii: ":") {
                break
            }
            let plain = (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
            guard plain else { return nil }
            end = text.utf8.index(after: end)
        }
        // After a `:` only a port may follow (`user:password@host` is left to URLComponents).
        if end < text.endIndex, text.utf8[end] == UInt8(ascii: ":") {
            let port = text.utf8[text.utf8.index(after: end)...].prefix {
                $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#")
            }
            guard port.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        }
        return end == start ? nil : text[start..<end]
    }
}

/// One item that could not be loaded (after the client's retries).
public struct ItemFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The item ID.
    public var id: Int
    /// Its rank in the list, when it was loaded as part of a list.
    public var rank: Int?
    /// What went wrong.
    public var error: APIError

    /// Creates a failure.
    public init(id: Int, rank: Int? = nil, error: APIError) {
        self.id = id
        self.rank = rank
        self.error = error
    }

    /// `item 123 (rank 4): HTTP 500 …`.
    public var description: String {
        "item \(id)\(rank.map { " (rank \($0))" } ?? ""): \(error.description)"
    }
}

/// How far a fan-out has come, and what the last finished request brought.
public struct LoadProgress: Sendable, Equatable {
    /// What one finished item request brought.
    public enum Outcome: Sendable, Equatable {
        /// A visible item.
        case item(HNItem)
        /// The API answered `null`, or the item is deleted or dead.
        case skipped(id: Int)
        /// The request failed (after retries).
        case failed(ItemFailure)
    }

    /// Requests finished so far.
    public var completed: Int
    /// Requests in all (for a comment tree: known so far, it grows level by level).
    public var total: Int
    /// What the request that just finished brought.
    public var latest: Outcome
    /// For a story list, the 1-based rank of the item that just finished; `nil` for a comment tree.
    public var rank: Int?

    /// Creates a progress report.
    public init(completed: Int, total: Int, latest: Outcome, rank: Int? = nil) {
        self.completed = completed
        self.total = total
        self.latest = latest
        self.rank = rank
    }
}

/// One loaded page of a story list.
public struct StoryPage: Sendable {
    /// The list.
    public var list: HackerNews.StoryList
    /// The IDs requested, in rank order: the first `limit` of the list, and as many after them as
    /// replaced skipped items.
    public var ids: [Int]
    /// The visible stories, in the requested order.
    public var stories: [RankedStory]
    /// IDs that were skipped: the API answered `null`, or the item is deleted or dead.
    public var skipped: [Int]
    /// Items that could not be loaded, in rank order. They do not fail the page.
    public var failures: [ItemFailure]
    /// How the HTTP cache answered the list request (`hit`: no request was made); `nil` when the
    /// list was given rather than requested (``StoryLoader/stories(_:of:limit:sort:force:progress:)``).
    public var listCache: CacheOutcome?
    /// Why stored responses were served although they were stale (the refresh failed), if any were.
    public var staleReasons: [StaleReason]
    /// How many of the requests (list and items) were answered from the cache without the network.
    public var cacheHits: Int
    /// How many requests were sent in all (list and items), cache hits included.
    public var requests: Int
}

/// Loads a Hacker News story list the way good HN clients do: the list request, then one
/// request per story with bounded concurrency (``concurrency`` in flight at most), taken in
/// completion order, with null, deleted and dead items skipped and counted, and a failing item
/// (after the client's retries) collected instead of failing the page.
///
/// Every request goes through the client's HTTP cache: with ``AppContext/hackerNews()`` the
/// list stays fresh for 60 s and items for 5 min, so a repeat within that window makes no
/// request at all.
///
/// ```swift
/// let loader = StoryLoader(context: context)
/// let page = try await loader.load(.top, limit: 30, sort: .score) { progress in
///     print("\(progress.completed)/\(progress.total) stories")
/// }
/// ```
public struct StoryLoader: Sendable {
    /// The default number of item requests in flight (mature clients use about 50).
    public static let defaultConcurrency = 32
    /// The accepted concurrency bounds.
    public static let concurrencyRange = 1...100

    /// The Hacker News client.
    public let client: APIClient
    /// The most item requests in flight at once.
    public var concurrency: Int
    /// Which fields of each item are decoded: `HNItem.Fields.all` (the default), or
    /// `HNItem.Fields.listing` for a page shown as rows, which never needs an item's comments.
    public var fields: HNItem.Fields = .all

    /// The order of a loaded page.
    public enum Sort: String, CaseIterable, Sendable {
        /// The list's own order.
        case rank
        /// Highest score first (ties in rank order).
        case score
        /// Newest first (ties in rank order).
        case time

        /// `stories` in this order. The sort is stable: ties keep rank order.
        public func apply(_ stories: [RankedStory]) -> [RankedStory] {
            let byRank = stories.sorted { $0.rank < $1.rank }
            switch self {
            case .rank:
                return byRank
            case .score:
                return byRank.enumerated().sorted { a, b in
                    let (sa, sb) = (a.element.item.score ?? 0, b.element.item.score ?? 0)
                    return sa != sb ? sa > sb : a.offset < b.offset
                }.map(\.element)
            case .time:
                return byRank.enumerated().sorted { a, b in
                    let (ta, tb) = (a.element.item.time ?? 0, b.element.item.time ?? 0)
                    return ta != tb ? ta > tb : a.offset < b.offset
                }.map(\.element)
            }
        }
    }

    /// A loader over `client` with at most `concurrency` item requests in flight (clamped to
    /// ``concurrencyRange``).
    public init(client: APIClient, concurrency: Int = StoryLoader.defaultConcurrency) {
        self.client = client
        self.concurrency = min(max(concurrency, Self.concurrencyRange.lowerBound), Self.concurrencyRange.upperBound)
    }

    /// A loader over the context's Hacker News client (HTTP cache with the app's freshness policy).
    public init(context: AppContext, concurrency: Int = StoryLoader.defaultConcurrency) {
        self.init(client: context.hackerNews(), concurrency: concurrency)
    }

    /// Loads the first `limit` stories of `list` that can be shown: when an item of the first
    /// `limit` is null, deleted or dead, the next ones of the list are loaded in its place (as
    /// the Hacker News site and circumflex count stories), until `limit` stories are shown or the
    /// list ends. A failed item (after the client's retries) takes no replacement: it is named.
    ///
    /// - Parameters:
    ///   - list: the story list (top, new, best, ask, show or job).
    ///   - limit: how many stories to show (at most the list's size).
    ///   - sort: the order of ``StoryPage/stories``.
    ///   - force: revalidate with the server even what is fresh in the cache (`Cache-Control: max-age=0`).
    ///   - progress: called after each item request finishes, in completion order, on the
    ///     caller's task (never concurrently). Its total grows when replacements are loaded.
    /// - Throws: the list request's error. Item failures do not throw: they are in
    ///   ``StoryPage/failures``.
    public func load(
        _ list: HackerNews.StoryList, limit: Int, sort: Sort = .rank, force: Bool = false,
        progress: (LoadProgress) -> Void = { _ in }
    ) async throws(APIError) -> StoryPage {
        try await load(list, limit: limit, sort: sort, forceList: force, forceItems: force, progress: progress)
    }

    /// ``load(_:limit:sort:force:progress:)``, revalidating the list and the items apart: a poll
    /// asks for the list again, and for the items only when they are stale.
    public func load(
        _ list: HackerNews.StoryList, limit: Int, sort: Sort = .rank, forceList: Bool, forceItems: Bool,
        progress: (LoadProgress) -> Void = { _ in }
    ) async throws(APIError) -> StoryPage {
        let listResponse = try await client.sendOrStored(Self.forced(HackerNews.stories(list), forceList))
        var page = await stories(listResponse.value, of: list, limit: limit, sort: sort, force: forceItems, progress: progress)
        if Task.isCancelled { throw .cancelled }
        if let reason = listResponse.staleReason { page.staleReasons.insert(reason, at: 0) }
        page.listCache = listResponse.cache
        page.cacheHits += listResponse.cache == .hit ? 1 : 0
        page.requests += 1
        return page
    }

    /// The first `limit` stories of the list `ids` that can be shown, loaded as
    /// ``load(_:limit:sort:force:progress:)`` loads them (the list itself already known: a
    /// streamed list). Items fresh in the cache cost no request.
    public func stories(
        _ ids: [Int], of list: HackerNews.StoryList, limit: Int, sort: Sort = .rank, force: Bool = false,
        progress: (LoadProgress) -> Void = { _ in }
    ) async -> StoryPage {
        var seen = Set<Int>()
        let listed = ids.filter { seen.insert($0).inserted }
        var staleReasons: [StaleReason] = []
        var cacheHits = 0

        // Slot i is the item at rank i + 1; batches go further down the list while items are skipped.
        var slots: [LoadProgress.Outcome?] = []
        var completed = 0
        var batch = 0..<min(max(0, limit), listed.count)
        while !batch.isEmpty {
            slots += [LoadProgress.Outcome?](repeating: nil, count: batch.count)
            let endpoints = batch.map { Self.forced(HackerNews.item(id: listed[$0], fields: fields), force) }
            func record(_ done: FanOutResult<HNItem?>) {
                let index = batch.lowerBound + done.offset
                let outcome: LoadProgress.Outcome
                switch done.result {
                case .success(let response):
                    if response.cache == .hit { cacheHits += 1 }
                    if let reason = response.staleReason, !staleReasons.contains(reason) { staleReasons.append(reason) }
                    if let item = response.value, item.isVisible {
                        outcome = .item(item)
                    } else {
                        outcome = .skipped(id: listed[index])
                    }
                case .failure(let error):
                    outcome = .failed(ItemFailure(id: listed[index], rank: index + 1, error: error))
                }
                slots[index] = outcome
                completed += 1
                progress(LoadProgress(completed: completed, total: slots.count, latest: outcome, rank: index + 1))
            }
            if force {
                for await done in client.fanOut(endpoints, maxConcurrent: concurrency) { record(done) }
            } else {
                // The store read in one go for the whole batch; what it answers fresh comes straight
                // from it (no trip through the chain per item), the rest is sent.
                await client.fanOutStoredFirst(endpoints, maxConcurrent: concurrency, record)
            }
            if Task.isCancelled { break }
            let skipped = slots.count { if case .skipped? = $0 { true } else { false } }
            let wanted = max(0, limit) + skipped
            batch = slots.count..<min(wanted, listed.count)
        }

        var stories: [RankedStory] = []
        var skipped: [Int] = []
        var failures: [ItemFailure] = []
        for (offset, slot) in slots.enumerated() {
            switch slot {
            case .item(let item)?: stories.append(RankedStory(rank: offset + 1, item: item))
            case .skipped(let id)?: skipped.append(id)
            case .failed(let failure)?: failures.append(failure)
            case nil: failures.append(ItemFailure(id: listed[offset], rank: offset + 1, error: .cancelled))
            }
        }
        return StoryPage(
            list: list, ids: Array(listed.prefix(slots.count)), stories: sort.apply(stories), skipped: skipped,
            failures: failures, listCache: nil, staleReasons: staleReasons, cacheHits: cacheHits,
            requests: slots.count)
    }

    /// `endpoint` with `Cache-Control: max-age=0` when `force` is set (revalidate what is fresh).
    static func forced<T>(_ endpoint: Endpoint<T>, _ force: Bool) -> Endpoint<T> {
        var endpoint = endpoint
        if force { endpoint.headers[.cacheControl] = "max-age=0" }
        return endpoint
    }
}
