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
            for await done in client.fanOut(endpoints, maxConcurrent: concurrency) {
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

/// Hacker News comment HTML as text for a terminal: `<p>` paragraphs, `<pre><code>` blocks kept
/// verbatim, links as `text (url)` (or just the URL when the text is the URL, as HN writes
/// them), `<i>` as `*text*` (HN's own markup for it), other tags dropped, entities decoded.
public enum CommentText {
    /// A block of rendered text.
    public enum Block: Sendable, Hashable {
        /// Prose, on one line: wrap it to the width you have.
        case paragraph(String)
        /// Preformatted lines (`<pre><code>`): keep them as they are.
        case code(String)
    }

    /// `html` as blocks.
    public static func blocks(_ html: String) -> [Block] {
        var blocks: [Block] = []
        var paragraph = ""
        var code: String?
        var link: (href: String, text: String)?

        func flushParagraph() {
            let collapsed = paragraph.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" })
                .joined(separator: " ")
            if !collapsed.isEmpty { blocks.append(.paragraph(collapsed)) }
            paragraph = ""
        }
        func append(_ text: String) {
            if code != nil {
                code! += text
            } else if link != nil {
                link!.text += text
            } else {
                paragraph += text
            }
        }

        var index = html.startIndex
        while index < html.endIndex {
            guard let open = html[index...].firstIndex(of: "<") else {
                append(HTMLText.decodeEntities(String(html[index...])))
                break
            }
            append(HTMLText.decodeEntities(String(html[index..<open])))
            guard let close = html[open...].firstIndex(of: ">") else {
                append(HTMLText.decodeEntities(String(html[open...])))
                break
            }
            let tag = html[html.index(after: open)..<close]
            index = html.index(after: close)
            let closing = tag.hasPrefix("/")
            let name = tag.drop { $0 == "/" }.prefix { $0.isLetter || $0.isNumber }.lowercased()
            switch (name, closing) {
            case ("p", false):
                if code == nil { flushParagraph() }
            case ("br", _):
                append(code != nil ? "\n" : " ")
            case ("pre", false):
                flushParagraph()
                code = ""
            case ("pre", true):
                if let text = code {
                    let trimmed = text.hasSuffix("\n") ? String(text.dropLast()) : text
                    if !trimmed.isEmpty { blocks.append(.code(trimmed)) }
                }
                code = nil
            case ("a", false) where code == nil:
                link = (attribute("href", in: tag).map(HTMLText.decodeEntities) ?? "", "")
            case ("a", true):
                if let (href, text) = link {
                    link = nil
                    paragraph += linkText(text: text, href: href)
                }
            case ("i", _), ("em", _):
                if code == nil { append("*") }
            default:
                break
            }
        }
        if let (href, text) = link { paragraph += linkText(text: text, href: href) }
        if let text = code, !text.isEmpty { blocks.append(.code(text)) }
        flushParagraph()
        return blocks
    }

    /// `html` as plain text: paragraphs and code blocks separated by blank lines, unwrapped.
    public static func plain(_ html: String) -> String {
        blocks(html).map { block in
            switch block {
            case .paragraph(let text), .code(let text): return text
            }
        }.joined(separator: "\n\n")
    }

    /// HN writes links as `<a href="URL">URL</a>`, shortening long texts with `...`: then the
    /// URL alone says it all; otherwise `text (URL)`.
    static func linkText(text: String, href: String) -> String {
        let shown = text.trimmingCharacters(in: .whitespaces)
        guard !href.isEmpty else { return shown }
        if shown.isEmpty || shown == href { return href }
        for ellipsis in ["...", "…"] where shown.hasSuffix(ellipsis) {
            if href.hasPrefix(String(shown.dropLast(ellipsis.count))) { return href }
        }
        return "\(shown) (\(href))"
    }

    /// The value of attribute `name` in a tag's inside (`a href="x" rel="nofollow"`).
    static func attribute(_ name: String, in tag: Substring) -> String? {
        guard let range = tag.range(of: name + "=", options: .caseInsensitive) else { return nil }
        var rest = tag[range.upperBound...]
        guard let quote = rest.first else { return nil }
        if quote == "\"" || quote == "'" {
            rest = rest.dropFirst()
            return String(rest.prefix { $0 != quote })
        }
        return String(rest.prefix { !$0.isWhitespace })
    }
}
