import Foundation
import NIOCore
import NIOSSL
import PostgresNIO
import Synchronization

/// Where a ``PostgresCacheStore`` keeps its tables and how it talks to PostgreSQL.
///
/// Made from a URL, `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require]`.
/// The password comes from the URL or, when the URL has none, from the `PGPASSWORD`
/// environment variable, as with `psql`. It is never part of ``description``, of a log line or
/// of an error.
public struct PostgresStoreConfiguration: Sendable, CustomStringConvertible {
    /// The server's host name or address.
    public var host: String
    /// The server's port (5432 by default).
    public var port: Int
    /// The user to connect as.
    public var username: String
    /// The user's password, if the server asks for one.
    public var password: String?
    /// The database holding the cache's tables.
    public var database: String
    /// Whether to use TLS: `disable`, `prefer` (the default: TLS when the server offers it) or `require`.
    public var tlsMode: TLSMode
    /// The most bytes the shared store keeps (sum of `CachedResponse.size`); least recently used
    /// responses are evicted past it.
    public var maxBytes: Int = 1024 * 1024 * 1024
    /// The most bytes this instance's memory tier holds.
    public var memoryBytes: Int = 64 * 1024 * 1024
    /// The longest any one query may take; past it the query is abandoned and counted as a store
    /// error, and the caller goes on without the store.
    public var queryTimeout: Duration = .seconds(2)
    /// How long concurrent misses for one key wait for the one filling it before each goes to
    /// the origin itself.
    public var fillWait: Duration = .seconds(5)
    /// How long LRU stamps and outcome counters of hits wait in memory before they are written.
    public var flushInterval: Duration = .seconds(2)
    /// The most connections this instance uses for queries and fill locks (one more listens for
    /// invalidations).
    public var maximumConnections = 16

    /// TLS to the server.
    public enum TLSMode: String, Sendable {
        /// Never.
        case disable
        /// When the server offers it.
        case prefer
        /// Always; the connection fails without it.
        case require
    }

    /// A configuration from its parts.
    public init(host: String, port: Int = 5432, username: String, password: String?, database: String,
                tlsMode: TLSMode = .prefer) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tlsMode = tlsMode
    }

    /// A configuration from a `postgres://` URL; the password from the URL, else from
    /// `environment["PGPASSWORD"]`.
    /// - Throws: ``PostgresStoreError`` (`.invalidURL`) saying what is wrong, without the password.
    public init(url text: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        guard let components = URLComponents(string: text) else {
            throw PostgresStoreError.invalidURL("it is not a valid URL (a port must be a number, as in postgres://USER@HOST:5432/DATABASE)")
        }
        guard let scheme = components.scheme?.lowercased(), scheme == "postgres" || scheme == "postgresql" else {
            throw PostgresStoreError.invalidURL("it must start with postgres:// (as in postgres://USER@HOST:PORT/DATABASE)")
        }
        // An IPv6 literal comes back in its brackets (`[::1]`); the connection wants the address.
        guard let host = components.host.map({ $0.hasPrefix("[") && $0.hasSuffix("]") ? String($0.dropFirst().dropLast()) : $0 }),
              !host.isEmpty else {
            throw PostgresStoreError.invalidURL("it names no host (as in postgres://USER@HOST:PORT/DATABASE)")
        }
        guard let user = components.user?.removingPercentEncoding, !user.isEmpty else {
            throw PostgresStoreError.invalidURL("it names no user (as in postgres://USER@HOST:PORT/DATABASE)")
        }
        let database = String(components.path.drop { $0 == "/" }).removingPercentEncoding ?? ""
        guard !database.isEmpty, !database.contains("/") else {
            throw PostgresStoreError.invalidURL("it names no database (as in postgres://USER@HOST:PORT/DATABASE)")
        }
        var tlsMode = TLSMode.prefer
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                switch item.value {
                case "disable": tlsMode = .disable
                case "allow", "prefer": tlsMode = .prefer
                case "require", "verify-ca", "verify-full": tlsMode = .require
                default: throw PostgresStoreError.invalidURL("sslmode must be disable, prefer or require")
                }
            default:
                throw PostgresStoreError.invalidURL("unknown parameter \"\(item.name.prefix(40))\" (only sslmode is understood)")
            }
        }
        let password = components.password?.removingPercentEncoding ?? environment["PGPASSWORD"]
        self.init(host: host, port: components.port ?? 5432, username: user, password: password,
                  database: database, tlsMode: tlsMode)
    }

    /// `postgres://USER@HOST:PORT/DATABASE`, never with the password.
    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "postgres://\(username)@\(shownHost):\(port)/\(database)"
    }

    /// The connection pool's configuration.
    var clientConfiguration: PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tls)
        configuration.options.connectTimeout = queryTimeout
        configuration.options.maximumConnections = maximumConnections + 1 // and the listener's
        configuration.options.minimumConnections = 0
        configuration.options.connectionIdleTimeout = .seconds(60)
        configuration.options.additionalStartupParameters = Self.startupParameters(queryTimeout)
        return configuration
    }

    /// One connection's configuration (the check at start, which reports why a connection fails).
    package func connectionConfiguration() throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS = switch tlsMode {
        case .disable: .disable
        case .prefer: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case .require: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tls)
        configuration.options.connectTimeout = TimeAmount(queryTimeout)
        return configuration
    }

    /// The server ends a statement that runs past the query timeout too, and names the
    /// connections so an operator sees them in `pg_stat_activity`.
    private static func startupParameters(_ timeout: Duration) -> [(String, String)] {
        let milliseconds = timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
        return [("statement_timeout", String(max(1, milliseconds))), ("application_name", "freshet")]
    }

    private var tls: PostgresClient.Configuration.TLS {
        switch tlsMode {
        case .disable: .disable
        case .prefer: .prefer(.makeClientConfiguration())
        case .require: .require(.makeClientConfiguration())
        }
    }

}
