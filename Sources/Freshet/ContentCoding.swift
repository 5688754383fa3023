import Foundation
import HTTPTypes

/// A response body that did not decode from its content coding (`Content-Encoding`): corrupt or
/// cut short. A decoding middleware (FreshetTransports' `DecompressionMiddleware`) throws it as
/// the body is read; ``APIClient`` reports it as ``APIError/undecodableBody(coding:reason:url:)``.
public struct ContentDecodingFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The coding the response claimed (`gzip`, `deflate`).
    public var coding: String
    /// What was wrong, for a person ("the data is corrupt", "the stream ends early").
    public var reason: String

    /// A failure to decode `coding`, for `reason`.
    public init(coding: String, reason: String) {
        self.coding = coding
        self.reason = reason
    }

    /// `<coding> body: <reason>`.
    public var description: String { "\(coding) body: \(reason)" }
}

/// A middleware that changes a request and its answer on their way between ``APIClient`` and a
/// ``StoredResponseSource`` beneath it — content decoding does: it asks for `gzip` and decodes
/// what comes back.
///
/// ``APIClient/sendOrStored(_:)`` asks the source for a stored answer without going through the
/// chain; it lets every adapter above the source shape that lookup's request and the stored
/// answer, so the answer reaches the caller as one sent through the chain would.
public protocol StoredResponseAdapter: Sendable {
    /// The request as this middleware would send it on (the fields it adds).
    func storedRequest(_ request: HTTPRequest) -> HTTPRequest
    /// A stored answer as this middleware would hand it up; `limit` bounds the bytes it may make.
    /// - Throws: ``ContentDecodingFailure`` (or ``APIError``) when the stored body cannot be used.
    func storedResponse(_ response: HTTPResponse, body: Data, limit: Int) async throws -> (HTTPResponse, Data)
}

/// Decodes a whole body from its content coding, for a middleware beneath content decoding that
/// must judge the bytes themselves: the cache, which stores no JSON answer that does not parse,
/// judges an encoded one by what it decodes to.
///
/// The content-decoding middleware offers itself as ``ContentDecoding/decoder`` to the middlewares
/// beneath it while its request is under way.
public protocol ContentDecoder: Sendable {
    /// `body` decoded from the coding `fields` name (`Content-Encoding`); `nil` when they name no
    /// coding this decoder decodes, or the body decodes to more than `limit` bytes.
    /// - Throws: ``ContentDecodingFailure`` when the body does not decode (corrupt, cut short).
    func decode(_ body: Data, fields: HTTPFields, limit: Int) async throws -> Data?
}

/// The content decoder above the current request, if any (see ``ContentDecoder``).
public enum ContentDecoding {
    /// Bound by the content-decoding middleware around the rest of the chain.
    @TaskLocal public static var decoder: (any ContentDecoder)?
}
