import Foundation
import Freshet
import FreshetCache
import GitHubAPI
import Synchronization
import HTTPTypes

/// What one refresh of a feed brought.
public struct FeedRefresh: Sendable {
    /// The repository refreshed.
    public var repository: RepositoryName
    /// Events that were not stored before, newest first.
    public var added: [GitHubEvent]
    /// How the HTTP cache answered (`hit`: no request was made; `revalidated`: a 304).
    public var cache: CacheOutcome?
    /// When the stored response was served because the server could not be used: why.
    public var staleReason: StaleReason?
    /// The seconds GitHub asks pollers to wait (`X-Poll-Interval`).
    public var pollInterval: Int?
    /// Whether the answer was merged into the store. `false`: it was the page merged last time
    /// (a fresh cache hit or a `304` of it), so the store already held it as it is and nothing
    /// was decoded or written.
    public var merged: Bool = true
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
        self.init(client: context.gitHub(), store: FeedStore(writer: context.database.writer))
    }

    /// The rows of the stored events of `repositories`, merged, newest first (no network, no
    /// decoding).
    public func stored(_ repositories: [RepositoryName], limit: Int) async -> [FeedEntry] {
        (try? await store.entries(repositories: repositories.map(\.description), limit: limit)) ?? []
    }

    /// The stored events of `repositories`, merged, newest first, whole (no network).
    public func storedEvents(_ repositories: [RepositoryName], limit: Int) async -> [GitHubEvent] {
        (try? await store.events(repositories: repositories.map(\.description), limit: limit)) ?? []
    }

    /// Fetches `repository`'s events (from the cache while fresh, else conditionally) and merges
    /// them into the store. A failure leaves the store as it was.
    /// - Parameters:
    ///   - repository: the repository whose events are fetched.
    ///   - force: revalidate even while the cached response is fresh (`--refresh`).
    public func refresh(_ repository: RepositoryName, force: Bool = false) async throws(APIError) -> FeedRefresh {
        // TODO: once the cache can say "stored and fresh" without a request, skip the send (and
        // reading the stored body to fingerprint it) when the fresh entry is the page merged last.
        let known = await fingerprints([repository])
        let page = Self.page(repository, force: force, known: known[repository.description])
        return try await merge(await client.sendOrStored(page.endpoint), page: page, into: repository)
    }

    /// Refreshes several repositories with at most `concurrency` requests at once (GitHub asks
    /// for serial or few concurrent requests). Each repository keeps its own validators.
    public func refresh(_ repositories: [RepositoryName], force: Bool = false, concurrency: Int = 2)
        async -> [Result<FeedRefresh, APIError>]
    {
        var results: [Result<FeedRefresh, APIError>] = []
        let known = await fingerprints(repositories)
        let pages = repositories.map { Self.page($0, force: force, known: known[$0.description]) }
        for await item in client.fanOutOrdered(pages.map(\.endpoint), maxConcurrent: concurrency) {
            let repository = repositories[item.offset]
            switch item.result {
            case .success(let response):
                do {
                    results.append(.success(try await merge(response, page: pages[item.offset], into: repository)))
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

    /// The fingerprints of the pages last merged, by repository (none when they cannot be read).
    private func fingerprints(_ repositories: [RepositoryName]) async -> [String: Int64] {
        (try? await store.fingerprints(repositories: repositories.map(\.description))) ?? [:]
    }

    /// One events request, and what decoding its body found.
    struct Page: Sendable {
        /// The request. A body with the known fingerprint (the page merged last time) decodes
        /// as no events, undecoded, and ``outcome`` says it was unchanged.
        var endpoint: Endpoint<[GitHubEvent]>
        /// The decoded body's fingerprint, and whether it was the known one.
        let outcome: PageOutcome
    }

    /// What decoding an events body found (written by the endpoint's decoding closure).
    final class PageOutcome: Sendable {
        private let state = Mutex<(fingerprint: Int64?, unchanged: Bool)>((nil, false))

        var value: (fingerprint: Int64?, unchanged: Bool) { state.withLock { $0 } }

        func record(fingerprint: Int64, unchanged: Bool) {
            state.withLock { $0 = (fingerprint, unchanged) }
        }
    }

    /// The events request of `repository`, whose decoding skips a body with the `known` fingerprint.
    static func page(_ repository: RepositoryName, force: Bool, known: Int64?) -> Page {
        var endpoint = endpoint(repository, force: force)
        let decode = endpoint.decode
        let outcome = PageOutcome()
        endpoint.decode = { data, decoder in
            let fingerprint = FeedStore.fingerprint(data)
            if fingerprint == known {
                outcome.record(fingerprint: fingerprint, unchanged: true)
                return []
            }
            let events = try decode(data, decoder)
            outcome.record(fingerprint: fingerprint, unchanged: false)
            return events
        }
        return Page(endpoint: endpoint, outcome: outcome)
    }

    private func merge(_ response: Response<[GitHubEvent]>, page: Page, into repository: RepositoryName)
        async throws(APIError) -> FeedRefresh
    {
        var refresh = FeedRefresh(
            repository: repository, added: [], cache: response.cache, staleReason: response.staleReason,
            pollInterval: response.headers[.xPollInterval].flatMap { Int($0) })
        let (fingerprint, unchanged) = page.outcome.value
        if unchanged {
            refresh.merged = false
            return refresh
        }
        let added: [GitHubEvent]
        do {
            added = try await store.merge(response.value, into: repository.description, fingerprint: fingerprint)
        } catch {
            if error is CancellationError || Task.isCancelled { throw .cancelled }
            throw .invalidRequest("the events could not be stored: \(error)")
        }
        refresh.added = added.sorted { $0.createdAt > $1.createdAt }
        return refresh
    }
}
