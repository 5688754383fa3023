import Foundation
import HTTPTypes

/// Everything that can go wrong with a request, as one error a caller can switch on.
///
/// The ``description`` says what happened and what to do about it, in words meant for a
/// person. URLs in it have credentials and token-like query parameters redacted; request
/// headers (where tokens live) are never part of an error.
public enum APIError: Error, Sendable, Equatable {
    /// The request could not be built (an empty path segment, an invalid URL, …).
    case invalidRequest(String)
    /// No connection could be made to the host (refused, DNS failure, no route).
    case unreachable(url: String, reason: String)
    /// The server did not answer in time.
    case timedOut(url: String)
    /// The calling task was cancelled; the HTTP exchange was abandoned.
    case cancelled
    /// The server answered with a status the endpoint does not accept.
    /// `message` is the API's own explanation when its body carried one.
    case httpStatus(code: Int, message: String?, url: String)
    /// The body was not what the endpoint expected. `path` is the coding path (`items[3].owner.login`).
    case decodingFailed(type: String, path: String, reason: String)
    /// The response body exceeded the client's limit; the rest of it was not read.
    case bodyTooLarge(limit: Int, url: String)
    /// The API's rate limit is exhausted. `resetAt` is when it says to try again, if it said.
    case rateLimited(resetAt: Date?, message: String?, url: String)
    /// The connection failed after it was made (reset, closed early, TLS failure, …).
    case transport(url: String, reason: String)
    /// The server asked to be retried later than the client is willing to wait (`Retry-After`).
    case retryLater(code: Int, retryAt: Date, url: String)
    /// A redirect was not followed: too many, a loop, or a downgrade from https to http.
    case redirectRefused(reason: String, url: String)
    /// The credentials were refused and could not be refreshed (``AuthenticationMiddleware``):
    /// `reason` is the refresh's own error, described (keep credentials out of your refresh's
    /// errors; Freshet's own never contain them).
    case authenticationFailed(reason: String)
    /// A file of an upload or download could not be read or written.
    case fileAccess(path: String, reason: String)
}

extension APIError: CustomStringConvertible, LocalizedError {
    /// What happened and what to do, for a person.
    public var description: String {
        switch self {
        case .invalidRequest(let reason):
            return "Invalid request: \(reason)."
        case .unreachable(let url, let reason):
            return "Could not connect to \(url) (\(reason)). Check the network connection and the base URL."
        case .timedOut(let url):
            return "The server at \(url) did not answer in time. Try again later."
        case .cancelled:
            return "The request was cancelled."
        case .httpStatus(let code, let message, let url):
            let reason = HTTPResponse.Status(code: code).reasonPhrase
            var text = "HTTP \(code)\(reason.isEmpty ? "" : " \(reason)") from \(url)"
            if let message, !message.isEmpty { text += ": \(message)" }
            switch code {
            case 401: text += ". Check the credentials (token or API key)."
            case 404: text += ". Check the name or ID."
            case 500...599: text += ". The server failed; try again later."
            default: text += "."
            }
            return text
        case .decodingFailed(let type, let path, let reason):
            let at = path.isEmpty ? "" : " at \(path)"
            return "The response could not be read as \(type)\(at): \(reason)."
        case .bodyTooLarge(let limit, let url):
            return "The response from \(url) is larger than the limit of \(limit) bytes; it was not read."
        case .rateLimited(let resetAt, let message, let url):
            var text = "Rate limit exceeded for \(url)"
            if let message, !message.isEmpty { text += ": \(message)" }
            if let resetAt {
                let seconds = max(0, Int(resetAt.timeIntervalSinceNow.rounded(.up)))
                text += ". It resets at \(Self.utcTime(resetAt)) (in \(seconds)s); try again then"
            }
            return text + "."
        case .transport(let url, let reason):
            return "The connection to \(url) failed: \(reason). Try again."
        case .retryLater(let code, let retryAt, let url):
            let seconds = max(0, Int(retryAt.timeIntervalSinceNow.rounded(.up)))
            return "HTTP \(code) from \(url): the server asks to retry after \(Self.utcTime(retryAt)) (in \(seconds)s), "
                + "longer than the client waits. Try again then."
        case .redirectRefused(let reason, let url):
            return "Redirect from \(url) not followed: \(reason)."
        case .authenticationFailed(let reason):
            return "Authentication failed: the credentials were refused and refreshing them failed (\(reason)). Sign in again."
        case .fileAccess(let path, let reason):
            return "The file \(path) could not be used: \(reason)."
        }
    }

    /// Same as ``description``.
    public var errorDescription: String? { description }

    private static func utcTime(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: .gmt))
    }
}

/// A transport failure, classified. Transports (see `FreshetTransports`) throw this so the
/// client can tell "could not connect" from "timed out" without importing the transport's types.
public struct TransportFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure.
    public enum Kind: Sendable, Equatable {
        /// No connection could be made.
        case unreachable
        /// The connect or the whole request exceeded its deadline.
        case timedOut
        /// The connection broke after it was made.
        case connectionLost
        /// The request was cancelled.
        case cancelled
    }
    /// The kind of failure.
    public var kind: Kind
    /// A short reason, without URLs or headers.
    public var reason: String

    /// Creates a transport failure.
    public init(_ kind: Kind, reason: String) {
        self.kind = kind
        self.reason = reason
    }

    /// The reason.
    public var description: String { reason }
}

extension APIError {
    /// Maps any error thrown while sending a request to an ``APIError``.
    /// - Parameters:
    ///   - error: the error thrown by a middleware, the transport or the decoder.
    ///   - url: the request URL, used in the message (it is redacted first).
    public static func wrapping(_ error: any Error, url: URL?) -> APIError {
        let shown = url.map { Redaction.redact($0) } ?? "the server"
        switch error {
        case let error as APIError:
            return error
        case is CancellationError:
            return .cancelled
        case let failure as TransportFailure:
            switch failure.kind {
            case .unreachable: return .unreachable(url: shown, reason: failure.reason)
            case .timedOut: return .timedOut(url: shown)
            case .connectionLost: return .transport(url: shown, reason: failure.reason)
            case .cancelled: return .cancelled
            }
        case let error as DecodingError:
            return .decoding(error, type: "the expected value")
        case let error as URLError:
            switch error.code {
            case .cancelled: return .cancelled
            case .timedOut: return .timedOut(url: shown)
            case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet:
                return .unreachable(url: shown, reason: error.localizedDescription)
            default:
                return .transport(url: shown, reason: error.localizedDescription)
            }
        default:
            if Task.isCancelled { return .cancelled }
            return .transport(url: shown, reason: String(describing: error))
        }
    }

    /// Describes a `DecodingError` with its coding path, e.g. `items[3].owner.login`.
    public static func decoding(_ error: DecodingError, type: String) -> APIError {
        func pathString(_ path: [any CodingKey]) -> String {
            var text = ""
            for key in path {
                if let index = key.intValue {
                    text += "[\(index)]"
                } else {
                    text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
                }
            }
            return text
        }
        switch error {
        case .typeMismatch(let expected, let context):
            return .decodingFailed(type: type, path: pathString(context.codingPath),
                                   reason: "expected \(expected), \(context.debugDescription)")
        case .valueNotFound(let expected, let context):
            return .decodingFailed(type: type, path: pathString(context.codingPath),
                                   reason: "expected \(expected) but found null")
        case .keyNotFound(let key, let context):
            return .decodingFailed(type: type, path: pathString(context.codingPath + [key]),
                                   reason: "the key \"\(key.stringValue)\" is missing")
        case .dataCorrupted(let context):
            return .decodingFailed(type: type, path: pathString(context.codingPath), reason: context.debugDescription)
        @unknown default:
            return .decodingFailed(type: type, path: "", reason: String(describing: error))
        }
    }
}
