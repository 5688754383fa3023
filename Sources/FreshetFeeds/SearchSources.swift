import DaumSearchAPI
import Foundation
import Freshet
import GitHubAPI

extension SearchSession where Results == RepositorySearchResult {
    /// Search-as-you-type over GitHub's repository search (`GET /search/repositories`).
    ///
    /// GitHub allows 10 searches a minute unauthenticated (30 with a token); an exhausted budget
    /// arrives as ``SearchUpdate/failed(query:_:)`` with `APIError.rateLimited(resetAt:message:url:response:)`.
    /// - Parameters:
    ///   - client: a GitHub client (``AppContext/gitHub()``).
    ///   - sort: `stars`, `forks` or `updated`; `nil` for best match.
    ///   - perPage: results per query (at most 100).
    ///   - debounce: the quiet time before a query is sent.
    public static func repositories(
        client: APIClient, sort: String? = nil, perPage: Int = 30, debounce: Duration = defaultDebounce
    ) -> SearchSession {
        SearchSession(debounce: debounce) { query async throws(APIError) in
            try await client.value(GitHub.searchRepositories(
                query: query, sort: sort, order: sort == nil ? nil : "desc", perPage: min(max(perPage, 1), GitHub.maxPerPage)))
        }
    }
}

extension SearchSession where Results == BlogSearchResult {
    /// Search-as-you-type over Kakao's Daum blog search (`GET /v2/search/blog`): the same
    /// pipeline as ``repositories(client:sort:perPage:debounce:)``.
    ///
    /// Client-side orders (``BlogSortOrder/title``, ``BlogSortOrder/datetime``) are applied to
    /// what arrives with ``BlogSortOrder/apply(to:)``, so changing them needs no new request.
    /// - Parameters:
    ///   - client: a Kakao client (``AppContext/kakao()``).
    ///   - sort: the order asked of the server.
    ///   - size: posts per query, 1…50.
    ///   - debounce: the quiet time before a query is sent.
    public static func blogs(
        client: APIClient, sort: BlogSort = .accuracy, size: Int = 20, debounce: Duration = defaultDebounce
    ) -> SearchSession {
        SearchSession(debounce: debounce) { query async throws(APIError) in
            try await client.value(DaumSearch.blog(
                query: query, sort: sort, page: 1, size: min(max(size, DaumSearch.sizeRange.lowerBound), DaumSearch.sizeRange.upperBound)))
        }
    }
}
