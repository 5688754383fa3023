import Foundation
import Freshet
import GitHubAPI
import FreshetCache
import HTTPTypes
import Logging
import OpenAPIRuntime
import DaumSearchAPI

/// Everything the apps share in one process: configuration, the database, the HTTP cache and the
/// API clients built on them.
public final class AppContext: Sendable {
    /// The configuration in force.
    public let configuration: AppConfiguration
    /// The user's database (HTTP cache and app stores).
    public let database: AppDatabase
    /// The HTTP cache's store.
    public let cacheStore: SQLiteCacheStore
    /// The rate-limit budgets seen, per resource.
    public let rateLimits = RateLimitTracker()
    /// How long Hacker News lists stay fresh (the API sends no useful freshness).
    public let hackerNewsListLifetime: Double
    /// How long Hacker News items and users stay fresh.
    public let hackerNewsItemLifetime: Double
    private let transport: any ClientTransport
    private let decompression: (any ClientMiddleware)?
    private let logger: Logger?
    private let warn: @Sendable (String) -> Void

    /// Opens the database under `configuration.home` and prepares the clients.
    /// - Parameters:
    ///   - configuration: where the APIs live, the credentials, and the database's folder.
    ///   - transport: the HTTP transport every client uses.
    ///   - logger: where per-exchange log lines go, if anywhere.
    ///   - decompression: content decoding for the standard chain (FreshetTransports'
    ///     `DecompressionMiddleware` over AsyncHTTPClient; `nil` for a transport that decodes on its
    ///     own, like URLSession).
    ///   - hackerNewsListLifetime: how long Hacker News lists stay fresh, in seconds (default 60).
    ///   - hackerNewsItemLifetime: how long Hacker News items and users stay fresh, in seconds
    ///     (default 300).
    ///   - warn: called with a message when something was repaired (e.g. a corrupt database moved aside).
    public init(configuration: AppConfiguration, transport: any ClientTransport, logger: Logger? = nil,
                decompression: (any ClientMiddleware)? = nil, hackerNewsListLifetime: Double = 60, hackerNewsItemLifetime: Double = 300,
                warn: @escaping @Sendable (String) -> Void = { _ in }) throws {
        self.configuration = configuration
        self.transport = transport
        self.decompression = decompression
        self.logger = logger
        self.hackerNewsListLifetime = hackerNewsListLifetime
        self.hackerNewsItemLifetime = hackerNewsItemLifetime
        self.warn = warn
        // A command opens it, answers and exits: one connection (AppDatabase.Access.serial).
        database = try AppDatabase(directory: configuration.home, access: .serial, warn: warn)
        cacheStore = SQLiteCacheStore(writer: database.writer)
    }

    /// Writes what the HTTP cache keeps in memory (responses still queued, LRU stamps, outcome
    /// counters) to the database. Call it before the process exits; the context stays usable.
    public func flush() async {
        do {
            try await cacheStore.flush()
        } catch {
            warn("could not save the HTTP cache: \(error)")
        }
    }

    /// ``flush()``, then closes the database (``AppDatabase/close()``): call it as the process
    /// ends; the context is not usable afterwards.
    public func close() async {
        await flush()
        do {
            try database.close()
        } catch {
            warn("could not close the database: \(error)")
        }
    }

    /// A client for GitHub: the token (if any) as `Authorization: Bearer`, the standard
    /// middleware chain, and the HTTP cache serving stored data when the network fails.
    public func gitHub() -> APIClient {
        var headers = APIClient.standardHeaders
        if let token = configuration.gitHubToken { headers[.authorization] = "Bearer \(token)" }
        return client(baseURL: configuration.gitHubURL, headers: headers, lifetime: nil, errorBody: .gitHub)
    }

    /// A client for GitHub avatar images (``AppConfiguration/avatarsURL``): no credentials (a
    /// different host from the API), the HTTP cache, no retries, its own rate-limit budget, and a
    /// 2 MiB body limit. Use it with `GitHub.avatar(_:size:)`.
    public func avatars() -> APIClient {
        images(baseURL: configuration.avatarsURL)
    }

    /// A blog post's thumbnail as a client and the endpoint to send with it: the thumbnail's own
    /// host (``AppConfiguration/thumbnailsURL`` with the host as the first path segment, when
    /// set), no Kakao key, and otherwise as ``avatars()``.
    public func thumbnail(_ thumbnail: DaumSearch.Thumbnail) -> (client: APIClient, endpoint: Endpoint<Data>) {
        guard let base = configuration.thumbnailsURL else { return (images(baseURL: thumbnail.origin), thumbnail.endpoint) }
        var endpoint = thumbnail.endpoint
        endpoint.pathSegments.insert(thumbnail.host, at: 0)
        return (images(baseURL: base), endpoint)
    }

    /// A client for images on `baseURL`: no credentials (an image host is not the API), the HTTP
    /// cache, one attempt, a rate-limit budget of its own (a spent API budget must not refuse a
    /// picture), and a 2 MiB body limit.
    private func images(baseURL: URL) -> APIClient {
        client(baseURL: baseURL, headers: APIClient.standardHeaders, lifetime: nil,
               retry: RetryMiddleware(policy: .init(maxAttempts: 1)), rateLimits: RateLimitTracker(),
               maxResponseBytes: 2 * 1024 * 1024)
    }

    /// A client for Hacker News, with the app's own freshness policy: lists for
    /// ``hackerNewsListLifetime`` seconds, items and users for ``hackerNewsItemLifetime``.
    public func hackerNews() -> APIClient {
        let list = hackerNewsListLifetime
        let item = hackerNewsItemLifetime
        return client(baseURL: configuration.hackerNewsURL, headers: APIClient.standardHeaders) { url in
            Self.namesStoryList(url) ? list : item
        }
    }

    /// Whether `url`'s path ends in `stories.json` (`/v0/topstories.json`), read from its text:
    /// `lastPathComponent` parses the URL and builds strings (~3,400 instructions), and every
    /// stored answer of a page of 500 items is asked twice.
    package static func namesStoryList(_ url: URL) -> Bool {
        var text = url.absoluteString
        return text.withUTF8 { bytes in
            let end = bytes.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.endIndex
            let suffix = "stories.json".utf8
            return end >= suffix.count && bytes[(end - suffix.count)..<end].elementsEqual(suffix)
        }
    }

    /// A client for Kakao's search API with `Authorization: KakaoAK …`.
    /// - Throws: ``MissingCredential`` naming `KAKAO_REST_API_KEY` when no key is set.
    public func kakao() throws(MissingCredential) -> APIClient {
        guard let key = configuration.kakaoAPIKey else {
            throw MissingCredential(variable: "KAKAO_REST_API_KEY", service: "Kakao (Daum search)")
        }
        var headers = APIClient.standardHeaders
        headers[.authorization] = DaumSearch.authorizationValue(apiKey: key)
        return client(baseURL: configuration.kakaoURL, headers: headers, lifetime: nil, errorBody: .kakao)
    }

    private func client(baseURL: URL, headers: HTTPFields, lifetime: (@Sendable (URL) -> Double?)?,
                        retry: RetryMiddleware = RetryMiddleware(), rateLimits: RateLimitTracker? = nil,
                        maxResponseBytes: Int = APIClient.defaultMaxResponseBytes,
                        errorBody: any ErrorBodyReader = .jsonMessage) -> APIClient {
        let cache = CacheMiddleware(
            store: cacheStore,
            options: .init(mode: .private, serveStaleOnFailure: true, lifetimeOverride: lifetime),
            backgroundTransport: transport)
        let middlewares = Middlewares.standard(
            logger: logger, retry: retry, rateLimit: RateLimitMiddleware(tracker: rateLimits ?? self.rateLimits, errorBody: errorBody),
            decompression: decompression, innermost: [cache])
        return APIClient(baseURL: baseURL, transport: transport, middlewares: middlewares, defaultHeaders: headers,
                         maxResponseBytes: maxResponseBytes, errorBody: errorBody)
    }
}

/// A credential the command needs is not set.
public struct MissingCredential: Error, Equatable, CustomStringConvertible {
    /// The environment variable to set.
    public var variable: String
    /// The service it is for.
    public var service: String

    /// Says which variable to set.
    public var description: String {
        "\(service) needs an API key: set \(variable) (e.g. `export \(variable)=…`)."
    }
}
