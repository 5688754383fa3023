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
    /// them into the store. A failure leaves the store as it was. When the cache holds the page
    /// merged last fresh (known by its `ETag`), nothing is read, decoded or written.
    /// - Parameters:
    ///   - repository: the repository whose events are fetched.
    ///   - force: revalidate even while the cached response is fresh (`--refresh`).
    public func refresh(_ repository: RepositoryName, force: Bool = false) async throws(APIError) -> FeedRefresh {
        let merged = await mergedPages([repository])[repository.description]
        if !force, let unchanged = await unchangedStoredPage(repository, merged: merged) { return unchanged }
        let page = Self.page(repository, force: force, known: merged)
        return try await merge(await client.sendOrStored(page.endpoint), page: page, into: repository)
    }

    /// Refreshes several repositories with at most `concurrency` requests at once (GitHub asks
    /// for serial or few concurrent requests). Each repository keeps its own validators.
    public func refresh(_ repositories: [RepositoryName], force: Bool = false, concurrency: Int = 2)
        async -> [Result<FeedRefresh, APIError>]
    {
        var results = [Result<FeedRefresh, APIError>?](repeating: nil, count: repositories.count)
        let merged = await mergedPages(repositories)
        if !force {
            for (index, repository) in repositories.enumerated() {
                results[index] = await unchangedStoredPage(repository, merged: merged[repository.description]).map { .success($0) }
            }
        }
        let asked = results.indices.filter { results[$0] == nil }
        let pages = asked.map { Self.page(repositories[$0], force: force, known: merged[repositories[$0].description]) }
        for await item in client.fanOutOrdered(pages.map(\.endpoint), maxConcurrent: concurrency) {
            let index = asked[item.offset]
            switch item.result {
            case .success(let response):
                do {
                    results[index] = .success(try await merge(response, page: pages[item.offset], into: repositories[index]))
                } catch {
                    results[index] = .failure(error)
                }
            case .failure(let error):
                results[index] = .failure(error)
            }
        }
        return results.map { $0 ?? .failure(.cancelled) }
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

    /// The pages last merged, by repository (none when they cannot be read).
    private func mergedPages(_ repositories: [RepositoryName]) async -> [String: FeedStore.MergedPage] {
        (try? await store.mergedPages(repositories: repositories.map(\.description))) ?? [:]
    }

    /// The refresh of `repository` when the HTTP cache answers its events page fresh, without a
    /// request, and the stored page is the one merged last (its `ETag` is `merged`'s): nothing is
    /// read, decoded or written. `nil` otherwise.
    private func unchangedStoredPage(_ repository: RepositoryName, merged: FeedStore.MergedPage?) async -> FeedRefresh? {
        guard let known = merged?.etag,
              let head = await client.storedHead(Self.endpoint(repository, force: false)),
              head.headerFields[.eTag] == known
        else { return nil }
        return FeedRefresh(repository: repository, added: [], cache: .hit, staleReason: nil,
                           pollInterval: Self.pollInterval(in: head.headerFields), merged: false)
    }

    /// The seconds `fields` ask pollers to wait (`X-Poll-Interval`).
    static func pollInterval(in fields: HTTPFields) -> Int? {
        fields[.xPollInterval].flatMap { Int($0) }
    }

    /// One events request, and what decoding its body found.
    struct Page: Sendable {
        /// The request. A body with the known fingerprint (the page merged last time) decodes
        /// as no events, undecoded, and ``outcome`` says it was unchanged.
        var endpoint: Endpoint<[GitHubEvent]>
        /// The page merged last time.
        let known: FeedStore.MergedPage?
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
    static func page(_ repository: RepositoryName, force: Bool, known: FeedStore.MergedPage?) -> Page {
        var endpoint = endpoint(repository, force: force)
        let decode = endpoint.decode
        let outcome = PageOutcome()
        endpoint.decode = { data, decoder in
            let fingerprint = FeedStore.fingerprint(data)
            if fingerprint == known?.fingerprint {
                outcome.record(fingerprint: fingerprint, unchanged: true)
                return []
            }
            let events = try decode(data, decoder)
            outcome.record(fingerprint: fingerprint, unchanged: false)
            return events
        }
        return Page(endpoint: endpoint, known: known, outcome: outcome)
    }

    private func merge(_ response: Response<[GitHubEvent]>, page: Page, into repository: RepositoryName)
        async throws(APIError) -> FeedRefresh
    {
        var refresh = FeedRefresh(
            repository: repository, added: [], cache: response.cache, staleReason: response.staleReason,
            pollInterval: Self.pollInterval(in: response.headers))
        let (fingerprint, unchanged) = page.outcome.value
        let etag = response.headers[.eTag]
        if unchanged {
            // The same page under another tag (or one recorded before tags were): noted, so that
            // the next refresh within its freshness reads nothing.
            if let etag, etag != page.known?.etag {
                try? await store.record(etag: etag, for: repository.description)
            }
            refresh.merged = false
            return refresh
        }
        let added: [GitHubEvent]
        do {
            added = try await store.merge(response.value, into: repository.description, fingerprint: fingerprint, etag: etag)
        } catch {
            if error is CancellationError || Task.isCancelled { throw .cancelled }
            throw .invalidRequest("the events could not be stored: \(error)")
        }
        refresh.added = added.sorted { $0.createdAt > $1.createdAt }
        return refresh
    }
}
