import ArgumentParser
import Foundation
import Freshet
import FreshetCache
import FreshetFeeds
import FreshetPostgres
import FreshetProxy
import FreshetTransports
import Logging
import ServiceLifecycle
import Synchronization

struct ProxyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proxy", _superCommandName: "freshet",
        abstract: "A caching reverse proxy: any HTTP tool gets Freshet's cache.",
        discussion: """
            Forwards every request to --origin through Freshet's RFC 9111 cache (shared mode unless \
            --private), kept in the database under FRESHET_HOME (at most --store-size MiB), with \
            one retry when no connection to the origin could be made, and rate-limit handling. Prints `listening on http://HOST:PORT` on stdout once it \
            accepts connections; SIGINT or SIGTERM stop it gracefully (requests in flight finish) \
            with status 0.

            Answers carry `Via: 1.1 freshet`, `Age` when served from the cache, and \
            `X-Cache: HIT|MISS|REVALIDATED|STALE` (the proxy's own; an origin's X-Cache is replaced). \
            Redirects pass through unchanged. When the origin cannot be reached the answer is 502, \
            when it does not answer within --timeout 504, with a plain-text body and X-Cache: MISS.

            Real API traffic: requests with a credential (Authorization, Cookie) are cached per credential with --partition credential: GitHub's `private, max-age=60` answers to a token are kept for that token only (the cache key holds a SHA-256 of the credential, never the credential), while `public` answers stay shared. Without it the proxy is the shared cache RFC 9111 defines, which never keeps a `private` answer; it says so once when one passes. The proxy asks the origin for gzip, keeps the gzip bytes, and relays them to clients that accept gzip and decoded bytes to the others, so one stored copy serves both. With --revalidate always every stored answer is revalidated before it is served (GitHub charges nothing for a `304` to an authorized conditional request, so answers are never older than one round trip). Concurrent requests for one key make one origin request, revalidations included. --serve-stale 5xx,429,rate-limited answers with the stored copy (X-Cache: STALE, with the origin's X-RateLimit-* fields) when the origin fails that way, where the stored answer allows it. The origin's absolute URLs in Link and Location point at the proxy (--public-url, else the Host the client used), so a client following pagination stays on it. Every answer also carries RFC 9211's `Cache-Status`.

            It listens on loopback unless told otherwise; a non-loopback --listen address is used \
            as given, with a warning: everyone who can reach it shares the proxy and its cache.

            With --store postgres://USER@HOST:PORT/DATABASE (or FRESHET_DATABASE_URL) the cache \
            lives in PostgreSQL, shared by every proxy given the same URL; each keeps its own \
            memory tier in front. The password comes from the URL or PGPASSWORD and is never \
            printed. If PostgreSQL cannot be reached at start the proxy exits with status 1; if it \
            goes away later the proxy keeps answering (memory tier, then the origin), says so \
            once, and reconnects.

            With --metrics HOST:PORT it prints `metrics on http://HOST:PORT/metrics` and serves there, on a listener of its own: GET /metrics (Prometheus text: requests by cache outcome and by credential, the origin's X-RateLimit-Remaining and -Reset per credential and resource, latency, memory tier), GET /healthz (200 while serving, 503 once a shutdown began), GET /readyz (200 when the cache's store answers, else 503 and the reason) and POST /purge?path=/repos/a/b (removes every stored copy of that path, for every credential and every proxy sharing a PostgreSQL store). These endpoints ask for no credential: keep them on loopback (a non-loopback --metrics address gets a warning).

            A credential (Authorization, Cookie) appears in metrics and logs only as a label, the first 12 hex digits of its SHA-256; anonymous requests are `anonymous`. At most 64 labels are kept; further credentials count as `other`.

            --log prints a line per request on stderr; --log-format json prints one JSON object per request instead (time, method, path, status, cache, duration_ms, credential, ratelimit_remaining) and turns --log on.

            An https origin's certificate chain must lead to the system's trust roots, or with \
            --ca-file to the PEM certificates given (instead of the system's). With --pin \
            sha256/BASE64 (the SHA-256 of a certificate's SubjectPublicKeyInfo, as OkHttp writes \
            it), a connection is made only if some certificate of the verified chain has a pinned \
            key; otherwise each request is answered 502 saying which keys the chain had.

            The connections to the origin go through the forward proxy that HTTPS_PROXY (for an \
            https origin), HTTP_PROXY (http) or ALL_PROXY name, unless NO_PROXY lists its host, as \
            curl reads them: http://[USER:PASSWORD@]HOST[:PORT] (CONNECT for https, absolute-form \
            requests for http) or socks5://HOST[:PORT]. A proxy that cannot be reached or refuses \
            is answered 502, naming the proxy (never its password).
            """)

    @Option(help: "The origin to forward to, e.g. https://api.github.com (a path in it prefixes every request).")
    var origin: String

    @Option(help: "Where to listen, HOST:PORT or [IPv6]:PORT (port 0 picks one).")
    var listen = "127.0.0.1:8080"

    @Flag(name: .customLong("private"), help: "Cache as a private cache for a single user (default: shared).")
    var privateCache = false

    @Flag(help: "Print one line per request on stderr: method, path, status, cache outcome, duration.")
    var log = false

    /// How `--log` writes a request.
    enum LogFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Option(name: .customLong("log-format"), help: ArgumentHelp(
        "How --log writes a request: text (a line) or json (an object per line, with the credential's label and the rate limit left). Turns --log on.",
        valueName: "text|json"))
    var logFormat: LogFormat?

    /// `--partition`: how answers to requests with credentials are kept.
    enum Partition: String, ExpressibleByArgument, CaseIterable {
        case none, credential
    }

    @Option(help: ArgumentHelp(
        "none: a shared cache (RFC 9111: private answers to requests with Authorization or Cookie are not kept); credential: also a partition per credential, where such answers are kept for that credential only.",
        valueName: "none|credential"))
    var partition: Partition = .none

    /// `--revalidate`: when a stored answer is revalidated.
    enum Revalidate: String, ExpressibleByArgument, CaseIterable {
        case expired, always
    }

    @Option(help: ArgumentHelp(
        "expired: revalidate a stored answer once it is stale; always: before every answer (a 304 refreshes it; free on GitHub for authorized requests).",
        valueName: "expired|always"))
    var revalidate: Revalidate = .expired

    @Option(name: .customLong("serve-stale"), help: ArgumentHelp(
        "When to answer with the stored copy instead of the origin's failure, comma-separated: unreachable (always on), 5xx, 429, rate-limited (a 403 or 429 saying a rate limit was hit).",
        valueName: "list"))
    var serveStale = "unreachable"

    @Option(name: .customLong("public-url"), help: ArgumentHelp(
        "The proxy's URL as clients know it, for the origin's absolute URLs in Link and Location (default: http:// and the Host the client sent).",
        valueName: "url"))
    var publicURL: String?

    @Option(name: .customLong("store-size"), help: ArgumentHelp(
        "The most the cache's store keeps, in MiB (SQLite default 100, PostgreSQL 1024); least recently used answers go first.",
        valueName: "MiB"))
    var storeSizeMiB: Int?

    @Option(help: "Seconds to wait for the origin's response head before answering 504.")
    var timeout = 30

    @Option(name: .customLong("max-entry-bytes"), help: "The largest body the cache stores; larger ones stream through.")
    var maxEntryBytes = 8 * 1024 * 1024

    @Option(name: .customLong("memory-cache"), help: ArgumentHelp(
        "The most the in-memory tier of the cache holds, in MiB (hits are answered from it).", valueName: "MiB"))
    var memoryCacheMiB = 64

    @Option(help: ArgumentHelp(
        "Keep the cache in PostgreSQL, shared with other proxies: postgres://USER@HOST:PORT/DATABASE (default: FRESHET_DATABASE_URL, else the SQLite database under FRESHET_HOME).",
        valueName: "url"))
    var store: String?

    @Option(help: ArgumentHelp("Serve Prometheus metrics at http://HOST:PORT/metrics.", valueName: "host:port"))
    var metrics: String?

    @Option(name: .customLong("ca-file"), help: ArgumentHelp(
        "Trust the PEM certificates in this file as the https origin's roots, instead of the system's (repeatable; without it, SSL_CERT_FILE and SSL_CERT_DIR when set).",
        valueName: "path"))
    var caFiles: [String] = []

    @Option(name: .customLong("pin"), help: ArgumentHelp(
        "Accept the https origin only if a key of its verified chain has this pin: sha256/BASE64 of the SubjectPublicKeyInfo (repeatable).",
        valueName: "sha256/base64"))
    var pins: [String] = []

    /// The trust of `--ca-file` and `--pin`, else the roots `SSL_CERT_FILE`/`SSL_CERT_DIR` name;
    /// `nil` when none is given (the system's roots).
    func trust() throws -> TLSTrust? {
        let parsed: [SPKIPin]
        do {
            parsed = try pins.map { try SPKIPin($0) }
        } catch {
            throw ValidationError("--pin: \(error)")
        }
        guard !caFiles.isEmpty else {
            let environment: TLSTrust?
            do {
                environment = try TLSTrust.fromEnvironment(ProcessEnvironment.values)
            } catch {
                throw ValidationError(error.description)
            }
            if let environment { return TLSTrust(roots: environment.roots, pins: parsed) }
            return parsed.isEmpty ? nil : TLSTrust(roots: .system, pins: parsed)
        }
        do {
            return try TLSTrust(rootsPEMFiles: caFiles, pins: parsed)
        } catch {
            throw ValidationError("--ca-file: \(error)")
        }
    }

    /// The forward proxies for the origin connections: `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`
    /// and `NO_PROXY`, as curl reads them.
    func forwardProxies() throws -> ProxySettings {
        do {
            return try ProxySettings.fromEnvironment(ProcessEnvironment.values)
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// The PostgreSQL store's URL: `--store`, else `FRESHET_DATABASE_URL`; `nil` for SQLite.
    var storeURL: String? {
        if let store { return store }
        let fromEnvironment = ProcessEnvironment.values["FRESHET_DATABASE_URL"] ?? ""
        return fromEnvironment.isEmpty ? nil : fromEnvironment
    }

    /// ``memoryCacheMiB`` in bytes.
    var memoryBytes: Int { memoryCacheMiB * 1024 * 1024 }

    /// The statuses of `--serve-stale` (`unreachable` is always on: it is RFC 9111's rule).
    func staleStatuses() throws -> StaleStatuses {
        var statuses: StaleStatuses = []
        for item in serveStale.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }) {
            switch item {
            case "unreachable": break
            case "5xx": statuses.insert(.serverError)
            case "429": statuses.insert(.tooManyRequests)
            case "rate-limited": statuses.insert(.rateLimited)
            default:
                throw ValidationError("--serve-stale takes a comma-separated list of unreachable, 5xx, 429, rate-limited; got \"\(item.prefix(40))\".")
            }
        }
        return statuses
    }

    /// The forwarder's options from the command line; `notice` receives its one-time notes.
    func forwarderOptions(notice: @escaping @Sendable (String) -> Void) throws -> ProxyForwarder.Options {
        var url: URL?
        if let publicURL {
            guard let components = URLComponents(string: publicURL), let scheme = components.scheme?.lowercased(),
                  scheme == "http" || scheme == "https", components.host?.isEmpty == false,
                  components.query == nil, components.fragment == nil, let parsed = components.url else {
                throw ValidationError("--public-url must be an http(s) URL such as https://ghproxy.example.com, got \"\(publicURL.prefix(200))\".")
            }
            url = parsed
        }
        return ProxyForwarder.Options(
            partitioning: partition == .credential ? .credential : .none, revalidatesEveryHit: revalidate == .always,
            serveStaleOn: try staleStatuses(), publicURL: url, notice: notice)
    }

    func validate() throws {
        guard (0...65_536).contains(memoryCacheMiB) else {
            throw ValidationError("--memory-cache must be between 0 and 65536 (MiB).")
        }
        _ = try Self.originURL(origin)
        _ = try Self.address(listen)
        if let metrics { _ = try Self.address(metrics, option: "--metrics") }
        if let storeURL {
            do {
                _ = try PostgresStoreConfiguration(url: storeURL)
            } catch {
                throw ValidationError("\(store == nil ? "FRESHET_DATABASE_URL" : "--store"): \(error)")
            }
        }
        guard timeout > 0 else { throw ValidationError("--timeout must be at least 1 second.") }
        _ = try trust()
        _ = try forwardProxies()
        guard maxEntryBytes >= 0 else { throw ValidationError("--max-entry-bytes cannot be negative.") }
        _ = try forwarderOptions(notice: { _ in })
        if let storeSizeMiB, !(1...1_048_576).contains(storeSizeMiB) {
            throw ValidationError("--store-size must be between 1 and 1048576 (MiB).")
        }
        if partition == .credential, privateCache {
            throw ValidationError("--partition credential is for a shared cache; --private already keys every answer on its credential.")
        }
    }

    func run() async throws {
        let originURL = try Self.originURL(origin)
        let (host, port) = try Self.address(listen)
        if !Self.isLoopback(host) {
            printError("warning: listening on \(host), beyond this machine: whoever can connect shares this proxy and its cache.")
        }
        let metricsAddress = try metrics.map { try Self.address($0, option: "--metrics") }
        if let metricsAddress, !Self.isLoopback(metricsAddress.host) {
            printError("warning: --metrics on \(metricsAddress.host), beyond this machine: whoever can connect can purge the cache (POST /purge).")
        }
        let opened: OpenedStore
        do {
            opened = try await openStore()
        } catch {
            printError("error: \(error)")
            throw ExitStatus.failure
        }
        let store = opened.store
        let proxyMetrics = opened.metrics
        // HTTP1Transport rather than AsyncHTTPClient: it relays the origin's interim (1xx) responses.
        // With --ca-file or --pin, over a pool of its own trusting those roots and requiring a pin.
        // Through the forward proxy the environment names for the origin, if any (validated in validate()).
        let proxies = try forwardProxies()
        let transport = HTTP1Transport(headTimeout: .seconds(timeout), pool: HTTP1ConnectionPool(
            configuration: try trust().map { .init(trust: $0, proxies: proxies) } ?? .init(proxies: proxies)))
        let forwarder = ProxyForwarder(
            origin: originURL, store: store,
            mode: privateCache ? .private : .shared, maxEntryBytes: maxEntryBytes, transport: transport,
            metrics: proxyMetrics, options: try forwarderOptions(notice: { printError($0) }))
        let shownHost = host.contains(":") ? "[\(host)]" : host
        let json = logFormat == .json
        let logEntry: (@Sendable (ProxyLogEntry) -> Void)? = log || logFormat != nil
            ? { @Sendable entry in printError(json ? entry.json : entry.text) } : nil
        var logger = Logger(label: "freshet.proxy") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .error
        // Unbuffered: a parent process sees each line at once; `listening on` always comes first.
        let announcements = StartAnnouncements()
        let server = ProxyServer(
            forwarder: forwarder, host: host, port: port, logger: logger,
            onListening: { bound in announcements.listening("listening on http://\(shownHost):\(bound)") },
            log: logEntry)
        // The operator's endpoints first: the group stops its services in reverse order, so
        // /healthz answers 503 while the proxy drains.
        var services: [any Service] = []
        if let metricsAddress {
            let shown = metricsAddress.host.contains(":") ? "[\(metricsAddress.host)]" : metricsAddress.host
            services.append(server.operatorServer(host: metricsAddress.host, port: metricsAddress.port) { bound in
                announcements.after("metrics on http://\(shown):\(bound)/metrics")
            })
        }
        services.append(server)
        var configuration = ServiceGroupConfiguration(
            services: services, gracefulShutdownSignals: ProxyServer.gracefulShutdownSignals, logger: logger)
        configuration.maximumGracefulShutdownDuration = ProxyServer.gracePeriod
        do {
            try await ServiceGroup(configuration: configuration).run()
        } catch {
            await opened.close()
            let address = (error as? ProxyListenError)?.address ?? "\(shownHost):\(port)"
            printError("error: could not serve on \(address): \(error)")
            throw ExitStatus.failure
        }
        // The memory tier's stamps and counters, and responses still queued, reach the store.
        await opened.close()
    }

    /// The cache's store, its metrics, and how to close them.
    struct OpenedStore {
        var store: any CacheStore
        var metrics: ProxyMetrics?
        var close: () async -> Void
    }

    /// Opens the store the options name: PostgreSQL (`--store`, `FRESHET_DATABASE_URL`) or the
    /// SQLite database under FRESHET_HOME. Throws a message fit for the terminal.
    func openStore() async throws -> OpenedStore {
        let proxyMetrics = metrics == nil ? nil : ProxyMetrics()
        if let storeURL {
            var configuration = try PostgresStoreConfiguration(url: storeURL)
            configuration.memoryBytes = memoryBytes
            if let storeSizeMiB { configuration.maxBytes = storeSizeMiB * 1024 * 1024 }
            var logger = Logger(label: "freshet.postgres") { StreamLogHandler.standardError(label: $0) }
            logger.logLevel = .notice
            let store = try await PostgresCacheStore.connect(configuration, logger: logger, metrics: proxyMetrics?.factory)
            return OpenedStore(store: store, metrics: proxyMetrics, close: { await store.shutdown() })
        }
        let directory = AppDatabase.defaultDirectory()
        let database: AppDatabase
        do {
            database = try AppDatabase(directory: directory, schema: .cache, warn: { printError("warning: \($0)") })
        } catch {
            throw CommandFailure(message: "could not open the database in \(directory.path): \(error)")
        }
        let store = SQLiteCacheStore(writer: database.writer, maxBytes: (storeSizeMiB ?? 100) * 1024 * 1024,
                                     memoryBytes: memoryBytes)
        return OpenedStore(store: store, metrics: proxyMetrics, close: {
            do {
                try await store.flush()
                try database.close()
            } catch {
                printError("warning: closing the database failed: \(error)")
            }
        })
    }

    /// The origin as a URL without a trailing slash: `http` or `https`, a host, no query,
    /// fragment or user info.
    static func originURL(_ text: String) throws -> URL {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty else {
            throw ValidationError("--origin must be an http(s) URL such as https://api.github.com, got \"\(text.prefix(200))\".")
        }
        guard components.query == nil, components.fragment == nil else {
            throw ValidationError("--origin cannot have a query or a fragment.")
        }
        guard components.user == nil, components.password == nil else {
            throw ValidationError("--origin cannot carry credentials; clients send their own Authorization header.")
        }
        var trimmed = text
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let url = URL(string: trimmed) else { throw ValidationError("--origin is not a valid URL.") }
        return url
    }

    /// `HOST:PORT`, `[IPv6]:PORT` or `PORT` (on 127.0.0.1).
    static func address(_ text: String, option: String = "--listen") throws -> (host: String, port: Int) {
        let host: String
        let portText: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw listenError(text, option: option) }
            portText = rest.dropFirst()
        } else if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
            guard !host.contains(":") else { throw listenError(text, option: option) }
        } else {
            host = "127.0.0.1"
            portText = Substring(text)
        }
        guard !host.isEmpty, let port = Int(portText), (0...65_535).contains(port) else { throw listenError(text, option: option) }
        return (host, port)
    }

    private static func listenError(_ text: String, option: String) -> ValidationError {
        ValidationError("\(option) must be HOST:PORT, [IPv6]:PORT or PORT (0 picks a free port), got \"\(text.prefix(100))\".")
    }

    static func isLoopback(_ host: String) -> Bool {
        let lowered = host.lowercased()
        return lowered == "localhost" || lowered == "::1" || lowered.hasPrefix("127.")
    }
}

/// The proxy's start lines on stdout, in a fixed order: `listening on …` first, then the lines
/// of services that may have started before it.
final class StartAnnouncements: Sendable {
    private let state = Mutex<(listening: Bool, waiting: [String])>((false, []))

    /// Prints the listening line, then what waited for it.
    func listening(_ line: String) {
        // Written under the lock: a line `after(_:)` prints once `listening` is set cannot come
        // out between this one and the lines that waited.
        state.withLock { state in
            state.listening = true
            for line in [line] + state.waiting { Self.write(line) }
            state.waiting = []
        }
    }

    /// Prints `line` once the listening line is out.
    func after(_ line: String) {
        state.withLock { state in
            if state.listening { Self.write(line) } else { state.waiting.append(line) }
        }
    }

    private static func write(_ line: String) {
        FileHandle.standardOutput.write(Data(utf8: line + "\n"))
    }
}
