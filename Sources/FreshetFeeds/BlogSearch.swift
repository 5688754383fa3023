import DaumSearchAPI
import Foundation
import Freshet

/// How blog posts are ordered: by the server (``accuracy``, ``recency``) or, as the seed app's
/// action sheet did, on the client over what arrived (``title``, ``datetime``).
public enum BlogSortOrder: String, CaseIterable, Sendable, Hashable {
    /// Most relevant first (server side; Kakao's default).
    case accuracy
    /// Newest first (server side).
    case recency
    /// Title ascending, highlights and entities ignored (client side).
    case title
    /// Newest first by the parsed `datetime` (client side).
    case datetime

    /// The order to request from the server: ``recency`` for itself, else `BlogSort.accuracy`.
    public var serverSort: BlogSort { self == .recency ? .recency : .accuracy }

    /// Whether the order is applied on the client (no request needed to change it).
    public var isClientSide: Bool { self == .title || self == .datetime }

    /// `posts` in this order. Server orders keep the order the posts arrived in; ties keep it too.
    public func apply(to posts: [BlogPost]) -> [BlogPost] {
        switch self {
        case .accuracy, .recency:
            return posts
        case .title:
            let keys = posts.map { $0.displayTitle }
            return stableSorted(posts) { a, b in
                keys[a].compare(keys[b], options: [.caseInsensitive, .numeric, .widthInsensitive]) == .orderedAscending
            }
        case .datetime:
            let dates = posts.map { $0.date ?? .distantPast }
            return stableSorted(posts) { a, b in dates[a] > dates[b] }
        }
    }

    /// The orders a sort key cycles through without a new request: the server order the
    /// results were fetched in, then title, then datetime.
    public static func cycle(fetchedWith serverSort: BlogSort) -> [BlogSortOrder] {
        [serverSort == .recency ? .recency : .accuracy, .title, .datetime]
    }

    /// The order after this one in ``cycle(fetchedWith:)``.
    public func next(fetchedWith serverSort: BlogSort) -> BlogSortOrder {
        let orders = Self.cycle(fetchedWith: serverSort)
        guard let index = orders.firstIndex(of: self) else { return orders[0] }
        return orders[(index + 1) % orders.count]
    }

    private func stableSorted(_ posts: [BlogPost], by less: (Int, Int) -> Bool) -> [BlogPost] {
        posts.indices.sorted { a, b in less(a, b) || (!less(b, a) && a < b) }.map { posts[$0] }
    }
}

/// Fetching blog search results: one page, or every page until `is_end`.
public enum BlogSearch {
    /// The last page Kakao serves (50).
    public static var maxPage: Int { DaumSearch.pageRange.upperBound }

    /// One page of posts for `query`, in `order`.
    public static func page(
        client: APIClient, query: String, order: BlogSortOrder = .accuracy, page: Int = 1, size: Int = 10
    ) async throws(APIError) -> Response<BlogSearchResult> {
        let response = try await client.send(DaumSearch.blog(query: query, sort: order.serverSort, page: page, size: size))
        return response.map { result in
            BlogSearchResult(meta: result.meta, documents: order.apply(to: result.documents))
        }
    }

    /// Every page from `startPage` on, until the server says `is_end` or page ``maxPage`` was
    /// read (the API's cap), merged and put in `order`. `meta` is the last page's.
    /// - Parameters:
    ///   - client: a Kakao client (``AppContext/kakao()``).
    ///   - query: the search text.
    ///   - order: the order of the merged posts; the server is asked for its ``BlogSortOrder/serverSort``.
    ///   - size: posts per page, 1…50.
    ///   - startPage: the first page to read.
    ///   - onPage: called after each page with its number and the posts so far.
    public static func allPages(
        client: APIClient, query: String, order: BlogSortOrder = .accuracy, size: Int = 50, startPage: Int = 1,
        onPage: @Sendable (Int, Int) -> Void = { _, _ in }
    ) async throws(APIError) -> Response<BlogSearchResult> {
        var page = max(startPage, DaumSearch.pageRange.lowerBound)
        var documents: [BlogPost] = []
        while true {
            let response = try await client.send(DaumSearch.blog(query: query, sort: order.serverSort, page: page, size: size))
            documents += response.value.documents
            onPage(page, documents.count)
            if response.value.meta.isEnd || page >= maxPage || response.value.documents.isEmpty {
                return response.map { result in
                    BlogSearchResult(meta: result.meta, documents: order.apply(to: documents))
                }
            }
            page += 1
        }
    }
}

/// Turning Kakao's `title` and `contents` (`<b>` highlights, HTML entities) into terminal text.
public enum BlogText {
    /// A run of text, highlighted or not.
    public struct Segment: Sendable, Hashable {
        /// The text, tags removed and entities decoded.
        public var text: String
        /// Whether it was inside `<b>…</b>`.
        public var highlighted: Bool

        /// Creates a segment.
        public init(_ text: String, highlighted: Bool) {
            self.text = text
            self.highlighted = highlighted
        }
    }

    /// `html` split into highlighted and plain runs. `<b>`/`</b>` (any case) switch the
    /// highlight; other tags are removed; entities are decoded after the tags are found, so an
    /// escaped `&lt;b&gt;` stays text. Line breaks and tabs become spaces.
    public static func segments(_ html: String) -> [Segment] {
        var segments: [Segment] = []
        var highlighted = false
        var pending = ""
        func flush() {
            guard !pending.isEmpty else { return }
            let text = HTMLText.decodeEntities(pending).map { $0.isNewline || $0 == "\t" || $0 == "\u{00A0}" ? " " : $0 }
            if let last = segments.last, last.highlighted == highlighted {
                segments[segments.count - 1].text += String(text)
            } else {
                segments.append(Segment(String(text), highlighted: highlighted))
            }
            pending = ""
        }
        var index = html.startIndex
        while index < html.endIndex {
            let character = html[index]
            if character == "<", let close = html[index...].firstIndex(of: ">") {
                let tag = html[html.index(after: index)..<close].lowercased().trimmingCharacters(in: .whitespaces)
                if tag == "b" || tag == "/b" {
                    flush()
                    highlighted = tag == "b"
                }
                index = html.index(after: close)
            } else {
                pending.append(character)
                index = html.index(after: index)
            }
        }
        flush()
        return segments
    }

    /// The plain text of `html` (no highlights).
    public static func plain(_ html: String) -> String {
        segments(html).map(\.text).joined()
    }

    /// `html` as one line of terminal text, at most `width` columns (cut with `…`), the
    /// highlights in bold (`ESC[1m`…`ESC[22m`) when `bold` is on, else plain.
    public static func render(_ html: String, width: Int? = nil, bold: Bool) -> String {
        var budget = width ?? .max
        var out = ""
        let segments = segments(html)
        let total = segments.reduce(0) { $0 + TextLayout.width($1.text) }
        let cut = total > budget
        if cut { budget = max(0, budget - 1) }
        for segment in segments where budget > 0 {
            var text = ""
            for character in segment.text {
                let w = TextLayout.width(String(character))
                if w > budget { budget = 0; break }
                text.append(character)
                budget -= w
            }
            guard !text.isEmpty else { continue }
            out += bold && segment.highlighted ? "\u{1B}[1m" + text + "\u{1B}[22m" : text
        }
        return cut && (width ?? 0) > 0 ? out + "…" : out
    }

    /// `date` as `yyyy-MM-dd HH:mm` in `timeZone` (the local one by default), independent of
    /// the locale.
    public static func dateTime(_ date: Date, timeZone: TimeZone = .current) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: date)
        return String(format: "%04d-%02d-%02d %02d:%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0, c.minute ?? 0)
    }
}
