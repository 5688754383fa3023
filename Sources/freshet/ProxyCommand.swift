import ArgumentParser
import Foundation
import Freshet
import FreshetCache
import FreshetFeeds
import FreshetProxy
import FreshetTransports

struct ProxyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proxy", abstract: "A caching reverse proxy: any HTTP tool gets Freshet's cache.",
        discussion: """
            Forwards every request to --origin through Freshet's RFC 9111 cache (shared mode unless \
            --private), kept in the database under FRESHET_HOME, with one retry after a connection \
            failure or timeout, and rate-limit handling. Prints `listening on http://HOST:PORT` on stdout once it \
            accepts connections; SIGINT or SIGTERM stop it gracefully (requests in flight finish) \
            with status 0.

            Answers carry `Via: 1.1 freshet`, `Age` when served from the cache, and \
            `X-Cache: HIT|MISS|REVALIDATED|STALE` (the proxy's own; an origin's X-Cache is replaced). \
            Redirects pass through unchanged. When the origin cannot be reached the answer is 502, \
            when it does not answer within --timeout 504, with a plain-text body.

            It listens on loopback unless told otherwise; a non-loopback --listen address is used \
            as given, with a warning: everyone who can reach it shares the proxy and its cache.
            """)

    @Option(help: "The origin to forward to, e.g. https://api.github.com (a path in it prefixes every request).")
    var origin: String

    @Option(help: "Where to listen, HOST:PORT or [IPv6]:PORT (port 0 picks one).")
    var listen = "127.0.0.1:8080"

    @Flag(name: .customLong("private"), help: "Cache as a private cache for a single user (default: shared).")
    var privateCache = false

    @Flag(help: "Print one line per request on stderr: method, path, status, cache outcome, duration.")
    var log = false

    @Option(help: "Seconds to wait for the origin's response head before answering 504.")
    var timeout = 30

    @Option(name: .customLong("max-entry-bytes"), help: "The largest body the cache stores; larger ones stream through.")
    var maxEntryBytes = 8 * 1024 * 1024

    @Option(name: .customLong("memory-cache"), help: ArgumentHelp(
        "The most the in-memory tier of the cache holds, in MiB (hits are answered from it).", valueName: "MiB"))
    var memoryCacheMiB = 64

    /// ``memoryCacheMiB`` in bytes.
    var memoryBytes: Int { memoryCacheMiB * 1024 * 1024 }

    func validate() throws {
        guard (0...65_536).contains(memoryCacheMiB) else {
            throw ValidationError("--memory-cache must be between 0 and 65536 (MiB).")
        }
        _ = try Self.originURL(origin)
        _ = try Self.address(listen)
        guard timeout > 0 else { throw ValidationError("--timeout must be at least 1 second.") }
        guard maxEntryBytes >= 0 else { throw ValidationError("--max-entry-bytes cannot be negative.") }
    }

    func run() async throws {
        let originURL = try Self.originURL(origin)
        let (host, port) = try Self.address(listen)
        if !Self.isLoopback(host) {
            printError("warning: listening on \(host), beyond this machine: whoever can connect shares this proxy and its cache.")
        }
        let directory = AppDatabase.defaultDirectory()
        let database: AppDatabase
        do {
            database = try AppDatabase(directory: directory, schema: .cache,
                                           warn: { printError("warning: \($0)") })
        } catch {
            printError("error: could not open the database in \(directory.path): \(error)")
            throw ExitStatus.failure
        }
        // HTTP1Transport rather than AsyncHTTPClient: it relays the origin's interim (1xx) responses.
        let transport = HTTP1Transport(headTimeout: .seconds(timeout))
        let store = SQLiteCacheStore(writer: database.pool, memoryBytes: memoryBytes)
        let forwarder = ProxyForwarder(
            origin: originURL, store: store,
            mode: privateCache ? .private : .shared, maxEntryBytes: maxEntryBytes, transport: transport)
        let shownHost = host.contains(":") ? "[\(host)]" : host
        let logLine: (@Sendable (String) -> Void)? = log ? { @Sendable line in printError(line) } : nil
        let server = ProxyServer(
            forwarder: forwarder, host: host, port: port,
            onListening: { bound in
                // Unbuffered: a parent process sees the line at once.
                FileHandle.standardOutput.write(Data("listening on http://\(shownHost):\(bound)\n".utf8))
            },
            log: logLine)
        do {
            try await server.run()
        } catch {
            try? await store.flush()
            try? database.close()
            printError("error: could not serve on \(shownHost):\(port): \(error)")
            throw ExitStatus.failure
        }
        do {
            // The memory tier's stamps and counters, and responses still queued, reach the disk.
            try await store.flush()
            try database.close()
        } catch {
            printError("warning: closing the database failed: \(error)")
        }
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
    static func address(_ text: String) throws -> (host: String, port: Int) {
        let host: String
        let portText: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw listenError(text) }
            portText = rest.dropFirst()
        } else if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
            guard !host.contains(":") else { throw listenError(text) }
        } else {
            host = "127.0.0.1"
            portText = Substring(text)
        }
        guard !host.isEmpty, let port = Int(portText), (0...65_535).contains(port) else { throw listenError(text) }
        return (host, port)
    }

    private static func listenError(_ text: String) -> ValidationError {
        ValidationError("--listen must be HOST:PORT, [IPv6]:PORT or PORT (0 picks a free port), got \"\(text.prefix(100))\".")
    }

    static func isLoopback(_ host: String) -> Bool {
        let lowered = host.lowercased()
        return lowered == "localhost" || lowered == "::1" || lowered.hasPrefix("127.")
    }
}
