import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Everything that can go wrong with a request, as one error a caller can switch on.
///
/// The ``description`` says what happened and what to do about it, in words meant for a
/// person. URLs in it have credentials and token-like query parameters redacted; request
/// headers (where tokens live) are never part of an error.
///
/// What caused the error stays typed, as swift-openapi-runtime's `ClientError` keeps it: a failed
/// connection carries the transport's own error as its `cause` (a ``TransportFailure``, a
/// `URLError`, FreshetTransports' `TLSTrustFailure` with its `kind`, …), and a refused status
/// carries the server's answer (``ErrorResponse``: the head and up to 64 KiB of the body).
/// ``underlyingError`` and ``response`` reach them without a `switch`.
public enum APIError: Error, Sendable {
    /// The request could not be built (an empty path segment, an invalid URL, …).
    case invalidRequest(String)
    /// No connection could be made to the host (refused, DNS failure, no route). `cause` is the
    /// transport's error; the description quotes it (``reason``).
    case unreachable(url: String, cause: any Error & Sendable)
    /// The server did not answer in time. `cause` is the transport's error when it gave one
    /// (FreshetTransports' `TransportFailure` says which wait ran out); the description does not
    /// quote it.
    case timedOut(url: String, cause: (any Error & Sendable)? = nil)
    /// The calling task was cancelled; the HTTP exchange was abandoned.
    case cancelled
    /// The server answered with a status the endpoint does not accept.
    /// `message` is the API's own explanation when its body carried one; `response` is the
    /// answer itself — its head and the start of its body — when the error was made from one
    /// (``APIClient`` always gives it).
    case httpStatus(code: Int, message: String?, url: String, response: ErrorResponse? = nil)
    /// The body was not what the endpoint expected. `path` is the coding path (`items[3].owner.login`).
    case decodingFailed(type: String, path: String, reason: String)
    /// The response body exceeded the client's limit; the rest of it was not read.
    case bodyTooLarge(limit: Int, url: String)
    /// The API's rate limit is exhausted. `resetAt` is when it says to try again, if it said;
    /// `response` is the server's refusal (`nil` when the client refused before sending, its
    /// budget known to be spent).
    case rateLimited(resetAt: Date?, message: String?, url: String, response: ErrorResponse? = nil)
    /// The connection failed after it was made (reset, closed early, TLS failure, …). `cause` is
    /// the transport's error (a refused certificate chain is FreshetTransports' `TLSTrustFailure`);
    /// the description quotes it (``reason``).
    case transport(url: String, cause: any Error & Sendable)
    /// The server asked to be retried later than the client is willing to wait (`Retry-After`);
    /// `response` is its answer.
    case retryLater(code: Int, retryAt: Date, url: String, response: ErrorResponse? = nil)
    /// A redirect was not followed: too many, a loop, or a downgrade from https to http.
    case redirectRefused(reason: String, url: String)
    /// The credentials were refused and could not be refreshed (``AuthenticationMiddleware``):
    /// `cause` is the refresh's own error, which the description quotes (keep credentials out of
    /// your refresh's errors; Freshet's own never contain them).
    case authenticationFailed(cause: any Error & Sendable)
    /// A file of an upload or download could not be read or written.
    case fileAccess(path: String, reason: String)
    /// The body was sent in a content coding (`Content-Encoding: gzip` or `deflate`) but did not
    /// decode: corrupt or cut short. `coding` is the coding it claimed; `reason` says what was wrong.
    case undecodableBody(coding: String, reason: String, url: String)
    /// ``APIClient/events(_:options:)`` was answered with something other than
    /// `text/event-stream` (`contentType`, `nil` when none was named): the server does not stream
    /// this resource. Read it with ``APIClient/send(_:)``, or poll.
    case notAnEventStream(contentType: String?, url: String)
}

extension APIError {
    /// The answer behind an ``APIError/httpStatus(code:message:url:response:)``: the response
    /// head (status and header fields, e.g. a `422`'s `Content-Type` or a `503`'s `Retry-After`)
    /// and the body, up to ``bodyLimit`` bytes.
    public struct ErrorResponse: Sendable, Equatable {
        /// The most body bytes kept: 64 KiB. An error body is an explanation (a JSON object, a
        /// short page); a longer one is cut there and ``isBodyTruncated`` is `true`.
        public static let bodyLimit = 64 * 1024

        /// The response head as the client received it.
        public var head: HTTPResponse
        /// The body, or its first ``bodyLimit`` bytes.
        public var body: Data
        /// Whether the body was longer than ``bodyLimit`` and ``body`` holds only its start.
        public var isBodyTruncated: Bool

        /// An error response with `head` and `body`, cut to ``bodyLimit`` bytes.
        public init(head: HTTPResponse, body: Data) {
            self.head = head
            self.isBodyTruncated = body.count > Self.bodyLimit
            self.body = body.count > Self.bodyLimit ? Data(body.prefix(Self.bodyLimit)) : body
        }

        /// Reads `body` up to one byte past ``bodyLimit`` (so ``isBodyTruncated`` can tell) and
        /// drops the rest; a body that fails midway gives what came before.
        static func collectBody(_ body: HTTPBody?) async -> Data {
            guard let body else { return Data() }
            var data = Data()
            do {
                for try await chunk in body {
                    data.append(contentsOf: chunk.prefix(bodyLimit + 1 - data.count))
                    if data.count > bodyLimit { break }
                }
            } catch {}
            return data
        }

        /// The response's status.
        public var status: HTTPResponse.Status { head.status }
        /// The response's header fields.
        public var headerFields: HTTPFields { head.headerFields }
    }

    /// The error underneath: the transport's for ``unreachable(url:cause:)``,
    /// ``transport(url:cause:)`` and (when it gave one) ``timedOut(url:cause:)``, the refresh's
    /// for ``authenticationFailed(cause:)``; `nil` for the other cases. Cast it to reach its type, e.g.
    /// `error.underlyingError as? TLSTrustFailure` for a refused certificate's `kind`.
    public var underlyingError: (any Error & Sendable)? {
        switch self {
        case .unreachable(_, let cause), .transport(_, let cause), .authenticationFailed(let cause): cause
        case .timedOut(_, let cause): cause
        default: nil
        }
    }

    /// The server's answer for ``httpStatus(code:message:url:response:)``,
    /// ``rateLimited(resetAt:message:url:response:)`` and ``retryLater(code:retryAt:url:response:)``,
    /// when the error was made from one; `nil` for the other cases.
    public var response: ErrorResponse? {
        switch self {
        case .httpStatus(_, _, _, let response), .rateLimited(_, _, _, let response), .retryLater(_, _, _, let response):
            response
        default: nil
        }
    }

    /// The same error with `response` in place of its server's answer (for the cases that carry
    /// one): a middleware that decodes content hands up an error body decoded.
    package func replacingResponse(_ response: ErrorResponse) -> APIError {
        switch self {
        case .httpStatus(let code, let message, let url, _): .httpStatus(code: code, message: message, url: url, response: response)
        case .rateLimited(let resetAt, let message, let url, _):
            .rateLimited(resetAt: resetAt, message: message, url: url, response: response)
        case .retryLater(let code, let retryAt, let url, _): .retryLater(code: code, retryAt: retryAt, url: url, response: response)
        default: self
        }
    }

    /// The same error with the API's message read from its answer's body by `reader`, when a
    /// middleware beneath the client raised it without one (the rate-limit middleware reads a
    /// refusal's body before content decoding, which may still be gzip there).
    func withMessage(from reader: any ErrorBodyReader) -> APIError {
        switch self {
        case .rateLimited(let resetAt, nil, let url, let response?) where !response.body.isEmpty:
            .rateLimited(resetAt: resetAt, message: reader.message(in: response.body), url: url, response: response)
        case .httpStatus(let code, nil, let url, let response?) where !response.body.isEmpty:
            .httpStatus(code: code, message: reader.message(in: response.body), url: url, response: response)
        default: self
        }
    }

    /// The words the ``description`` gives for what went wrong, for the cases that have them
    /// (a cause's description, or the reason given); `nil` for the others.
    public var reason: String? {
        switch self {
        case .invalidRequest(let reason), .decodingFailed(_, _, let reason), .redirectRefused(let reason, _),
             .fileAccess(_, let reason), .undecodableBody(_, let reason, _):
            reason
        case .unreachable(_, let cause), .transport(_, let cause): Self.connectionReason(cause)
        case .authenticationFailed(let cause): String(describing: cause)
        default: nil
        }
    }

    /// How a connection's cause reads in a message: a `URLError`'s localized description, any
    /// other error's description.
    static func connectionReason(_ cause: any Error) -> String {
        (cause as? URLError)?.localizedDescription ?? String(describing: cause)
    }
}

extension APIError: Equatable {
    /// Whether two errors say the same thing: the same case with equal values, causes of the same
    /// type with the same description. An ``ErrorResponse`` is not compared (two `404`s for one
    /// URL with one message are equal whatever their `Date` fields say), nor a timeout's cause
    /// (its description does not show it).
    public static func == (lhs: APIError, rhs: APIError) -> Bool {
        func same(_ a: any Error, _ b: any Error) -> Bool {
            type(of: a) == type(of: b) && String(describing: a) == String(describing: b)
        }
        switch (lhs, rhs) {
        case (.invalidRequest(let a), .invalidRequest(let b)):
            return a == b
        case (.unreachable(let url1, let cause1), .unreachable(let url2, let cause2)),
             (.transport(let url1, let cause1), .transport(let url2, let cause2)):
            return url1 == url2 && same(cause1, cause2)
        case (.timedOut(let a, _), .timedOut(let b, _)):
            return a == b
        case (.cancelled, .cancelled):
            return true
        case (.httpStatus(let code1, let message1, let url1, _), .httpStatus(let code2, let message2, let url2, _)):
            return code1 == code2 && message1 == message2 && url1 == url2
        case (.decodingFailed(let type1, let path1, let reason1), .decodingFailed(let type2, let path2, let reason2)):
            return type1 == type2 && path1 == path2 && reason1 == reason2
        case (.bodyTooLarge(let limit1, let url1), .bodyTooLarge(let limit2, let url2)):
            return limit1 == limit2 && url1 == url2
        case (.rateLimited(let reset1, let message1, let url1, _), .rateLimited(let reset2, let message2, let url2, _)):
            return reset1 == reset2 && message1 == message2 && url1 == url2
        case (.retryLater(let code1, let at1, let url1, _), .retryLater(let code2, let at2, let url2, _)):
            return code1 == code2 && at1 == at2 && url1 == url2
        case (.redirectRefused(let reason1, let url1), .redirectRefused(let reason2, let url2)):
            return reason1 == reason2 && url1 == url2
        case (.authenticationFailed(let cause1), .authenticationFailed(let cause2)):
            return same(cause1, cause2)
        case (.fileAccess(let path1, let reason1), .fileAccess(let path2, let reason2)):
            return path1 == path2 && reason1 == reason2
        case (.undecodableBody(let coding1, let reason1, let url1), .undecodableBody(let coding2, let reason2, let url2)):
            return coding1 == coding2 && reason1 == reason2 && url1 == url2
        case (.notAnEventStream(let type1, let url1), .notAnEventStream(let type2, let url2)):
            return type1 == type2 && url1 == url2
        default:
            return false
        }
    }
}

extension APIError: CustomStringConvertible, LocalizedError {
    /// What happened and what to do, for a person.
    public var description: String {
        switch self {
        case .invalidRequest(let reason):
            return "Invalid request: \(reason)."
        case .unreachable(let url, let cause):
            let reason = Self.connectionReason(cause)
            return "Could not connect to \(url) (\(reason)). Check the network connection and the base URL."
        case .timedOut(let url, _):
            return "The server at \(url) did not answer in time. Try again later."
        case .cancelled:
            return "The request was cancelled."
        case .httpStatus(let code, let message, let url, _):
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
        case .rateLimited(let resetAt, let message, let url, _):
            var text = "Rate limit exceeded for \(url)"
            if let message, !message.isEmpty { text += ": \(message)" }
            if let resetAt {
                let seconds = max(0, Int(resetAt.timeIntervalSinceNow.rounded(.up)))
                text += ". It resets at \(Self.utcTime(resetAt)) (in \(seconds)s); try again then"
            }
            return text + "."
        case .transport(let url, let cause):
            let reason = Self.connectionReason(cause)
            return "The connection to \(url) failed: \(reason). Try again."
        case .retryLater(let code, let retryAt, let url, _):
            let seconds = max(0, Int(retryAt.timeIntervalSinceNow.rounded(.up)))
            return "HTTP \(code) from \(url): the server asks to retry after \(Self.utcTime(retryAt)) (in \(seconds)s), "
                + "longer than the client waits. Try again then."
        case .redirectRefused(let reason, let url):
            return "Redirect from \(url) not followed: \(reason)."
        case .authenticationFailed(let cause):
            let reason = String(describing: cause)
            return "Authentication failed: the credentials were refused and refreshing them failed (\(reason)). Sign in again."
        case .fileAccess(let path, let reason):
            return "The file \(path) could not be used: \(reason)."
        case .undecodableBody(let coding, let reason, let url):
            return "The response from \(url) is marked \(coding)-encoded but does not decode (\(reason)); it was not used. "
                + "The server sent a broken answer; try again later."
        case .notAnEventStream(let type, let url):
            return "\(url) did not answer with an event stream (Content-Type: \(type ?? "none")); it cannot be followed live."
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
    /// Maps any error thrown while sending a request to an ``APIError``, keeping it as the
    /// `cause` when it is not one already (a ``TransportFailure``, a `URLError`, any other).
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
            case .unreachable: return .unreachable(url: shown, cause: failure)
            case .timedOut: return .timedOut(url: shown, cause: failure)
            case .connectionLost: return .transport(url: shown, cause: failure)
            case .cancelled: return .cancelled
            }
        case let error as DecodingError:
            return .decoding(error, type: "the expected value")
        case let failure as ContentDecodingFailure:
            return .undecodableBody(coding: failure.coding, reason: failure.reason, url: shown)
        case let error as URLError:
            switch error.code {
            case .cancelled: return .cancelled
            case .timedOut: return .timedOut(url: shown, cause: error)
            case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet:
                return .unreachable(url: shown, cause: error)
            default:
                return .transport(url: shown, cause: error)
            }
        default:
            if Task.isCancelled { return .cancelled }
            return .transport(url: shown, cause: error)
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
