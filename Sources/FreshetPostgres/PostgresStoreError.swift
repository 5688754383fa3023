import Foundation
import PostgresNIO

/// What went wrong between a ``PostgresCacheStore`` and PostgreSQL, in words an operator can act
/// on. No case ever holds the password.
public enum PostgresStoreError: Error, CustomStringConvertible, Sendable {
    /// The store URL cannot be used; the reason says why.
    case invalidURL(String)
    /// PostgreSQL could not be reached or refused the connection (`server` is the URL without
    /// the password).
    case unreachable(server: String, reason: String)
    /// A query did not finish within the configured timeout.
    case timedOut(Duration)
    /// PostgreSQL answered a query with an error.
    case query(String)

    /// One line.
    public var description: String {
        switch self {
        case .invalidURL(let reason): "the store URL cannot be used: \(reason)"
        case .unreachable(let server, let reason): "could not connect to PostgreSQL at \(server): \(reason)"
        case .timedOut(let timeout): "PostgreSQL did not answer within \(timeout)"
        case .query(let reason): "PostgreSQL refused a query: \(reason)"
        }
    }

    /// The cause alone, without the server's address.
    var reason: String {
        switch self {
        case .unreachable(_, let reason): reason
        case .timedOut(let timeout): "no answer within \(timeout)"
        case .invalidURL(let reason), .query(let reason): reason
        }
    }

    /// Whether the error means the server is out of reach (as opposed to refusing one query).
    var isConnectionLoss: Bool {
        switch self {
        case .unreachable, .timedOut: true
        case .invalidURL, .query: false
        }
    }

    /// `error` (from postgres-nio or our own deadline) as a store error. PostgresNIO keeps the
    /// details out of its errors' descriptions (they may hold the query); this takes only the
    /// server's message or the socket's reason.
    static func wrapping(_ error: any Error, server: String) -> PostgresStoreError {
        if let error = error as? PostgresStoreError { return error }
        guard let psql = error as? PSQLError else { return .unreachable(server: server, reason: "\(error)") }
        switch psql.code {
        case .server:
            let message = psql.serverInfo?[.message] ?? "an error"
            // Authentication, a missing database or role: the connection itself was refused.
            if let state = psql.serverInfo?[.sqlState], state.hasPrefix("28") || state == "3D000" || state.hasPrefix("08")
                || state == "57P01" || state == "57P03" {
                return .unreachable(server: server, reason: message)
            }
            return .query(message)
        case .queryCancelled:
            return .query("the query was cancelled")
        case .connectionError:
            return .unreachable(server: server, reason: socketReason(psql.underlying))
        case .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed:
            return .unreachable(server: server, reason: "the connection was closed")
        case .authMechanismRequiresPassword:
            return .unreachable(server: server, reason: "the server asks for a password: put it in the URL or in PGPASSWORD")
        case .sslUnsupported:
            return .unreachable(server: server, reason: "the server does not offer TLS (sslmode=require)")
        default:
            return .unreachable(server: server, reason: "the connection failed (\(psql.code))")
        }
    }
}

/// A socket error in a few words: NIO's connection errors list every address tried.
private func socketReason(_ error: (any Error)?) -> String {
    guard let error else { return "the connection failed" }
    let text = "\(error)"
    let known = [
        ("Connection refused", "connection refused (is PostgreSQL running and listening on that port?)"),
        ("timed out", "the connection timed out"), ("connectTimeout", "the connection timed out"),
        ("No route to host", "no route to host"), ("Network is unreachable", "the network is unreachable"),
        ("resolution", "the host name could not be resolved"), ("not known", "the host name could not be resolved"),
    ]
    for (needle, reason) in known where text.localizedCaseInsensitiveContains(needle) { return reason }
    return text.count <= 200 ? text : String(text.prefix(200)) + "…"
}
