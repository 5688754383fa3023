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
