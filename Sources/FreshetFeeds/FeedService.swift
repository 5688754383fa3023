import Foundation
import Freshet
import FreshetCache
import GitHubAPI

/// What one refresh of a feed brought.
public struct FeedRefresh: Sendable {
    /// The repository refreshed.
    public var repository: RepositoryName
    /// Events that were not stored before, newest first.
    public var added: [GitHubEvent]
    /// How the HTTP cache answered (`hit`: no request was made; `revalidated`: a 304).
    public var cache: CacheOutcome?
    /// When the stored response was served because the server could not be used: why.
    public var staleReason: String?
    /// The seconds GitHub asks pollers to wait (`X-Poll-Interval`).
    public var pollInterval: Int?
}

/// The GitHub activity feed (the seed app "GitFeed"): stored events shown at once, refreshed
/// with conditional requests through the HTTP cache, merged into the ``FeedStore``.
public struct FeedService: Sendable {
    /// Page size of the events request. Fixed, so the URL (and with it the validators) never
    /// depends on how many events are shown.
    public static let perPage = 100

    /// The GitHub client (with the HTTP cache).
    public let client: APIClient
    /// Where the events are kept.
    public let store: FeedStore

    /// A feed over `client`, storing in `store`.
    public init(client: APIClient, store: FeedStore) {
        self.client = client
        self.store = store
    }

    /// A feed over the context's GitHub client and database.
    public init(context: AppContext) {
        self.init(client: context.gitHub(), store: FeedStore(database: context.database))
    }

    /// The stored events of `repositories`, merged, newest first (no network).
    public func stored(_ repositories: [RepositoryName], limit: Int) async -> [GitHubEvent] {
        (try? await store.events(repositories: repositories.map(\.description), limit: limit)) ?? []
    }

    /// Fetches `repository`'s events (from the cache while fresh, else conditionally) and merges
    /// them into the store. A failure leaves the store as it was.
    /// - Parameter force: revalidate even while the cached response is fresh (`--refresh`).
    public func refresh(_ repository: RepositoryName, force: Bool = false) async throws(APIError) -> FeedRefresh {
        try await merge(await client.sendOrStored(Self.endpoint(repository, force: force)), into: repository)
    }

    /// Refreshes several repositories with at most `concurrency` requests at once (GitHub asks
    /// for serial or few concurrent requests). Each repository keeps its own validators.
    public func refresh(_ repositories: [RepositoryName], force: Bool = false, concurrency: Int = 2)
        async -> [Result<FeedRefresh, APIError>]
    {
        var results: [Result<FeedRefresh, APIError>] = []
        let endpoints = repositories.map { Self.endpoint($0, force: force) }
        for await item in client.fanOutOrdered(endpoints, maxConcurrent: concurrency) {
            let repository = repositories[item.offset]
            switch item.result {
            case .success(let response):
                do {
                    results.append(.success(try await merge(response, into: repository)))
                } catch {
                    results.append(.failure(error))
                }
            case .failure(let error):
                results.append(.failure(error))
            }
        }
        return results
    }

    /// The `count` most-starred Swift repositories (`GET /search/repositories?q=language:swift&sort=stars`).
    public func topSwiftRepositories(count: Int, force: Bool = false) async throws(APIError) -> [RepositoryName] {
        var endpoint = GitHub.searchRepositories(query: "language:swift", sort: "stars", order: "desc",
                                                 perPage: min(max(count, 1), 100))
        if force { endpoint.headers[.cacheControl] = "max-age=0" }
        let result = try await client.value(endpoint)
        return result.items.prefix(count).compactMap { RepositoryName($0.fullName) }
    }

    static func endpoint(_ repository: RepositoryName, force: Bool) -> Endpoint<[GitHubEvent]> {
        var endpoint = GitHub.repoEvents(repository, perPage: perPage)
        if force { endpoint.headers[.cacheControl] = "max-age=0" }
        return endpoint
    }

    private func merge(_ response: Response<[GitHubEvent]>, into repository: RepositoryName) async throws(APIError) -> FeedRefresh {
        let added: [GitHubEvent]
        do {
            added = try await store.merge(response.value, into: repository.description)
        } catch {
            if error is CancellationError || Task.isCancelled { throw .cancelled }
            throw .invalidRequest("the events could not be stored: \(error)")
        }
        return FeedRefresh(
            repository: repository, added: added.sorted { $0.createdAt > $1.createdAt }, cache: response.cache,
            staleReason: response.staleReason, pollInterval: response.headers[.xPollInterval].flatMap { Int($0) })
    }
}
