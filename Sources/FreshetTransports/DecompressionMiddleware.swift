import Foundation
import Freshet
import HTTPTypes
import OpenAPIRuntime
import Synchronization

/// Transparent compression: asks for `gzip` and `deflate` and hands up the body decoded, as
/// OkHttp does by default.
///
/// A request that names no `Accept-Encoding` of its own goes on with `Accept-Encoding: gzip,
/// deflate`; an answer in exactly one of those codings comes back decoded as it is read, without
/// `Content-Encoding` and `Content-Length` (its `ETag` stays: it names the stored representation).
/// A request that sets `Accept-Encoding` itself, asks for a `Range`, or belongs to an upload or
/// download (`TransferContext`) is left alone, and so is an answer in any other coding.
///
/// In the standard chain (`Middlewares.standard(decompression:)`)
/// it sits above coalescing and the cache, so the cache stores the encoded bytes (with their
/// validators and `Vary`) and the caller's body limit counts the decoded ones: the body is decoded
/// a window at a time as the client reads it, so a gzip bomb stops at the limit
/// (`APIError.bodyTooLarge`) without being inflated whole. A body the cache beneath already
/// decoded whole to judge it (`ContentDecoding`) comes up as that decoding, not inflated again.
/// A corrupt or cut-off stream fails as `APIError.undecodableBody`.
///
/// `APIClient.live` puts it into the chain it is given (`decompressing: false` leaves it out);
/// build a chain with it yourself with `Middlewares.standard(decompression:)`. URLSession decodes
/// on its own: leave it out in front of URLSession (`Transports.urlSession()`, FreshetURLSession).
public struct DecompressionMiddleware: ClientMiddleware, StoredResponseAdapter, ContentDecoder {
    /// The `Accept-Encoding` sent: `gzip, deflate`.
    public static let acceptEncoding = "gzip, deflate"

    /// Noted once, so that `APIClient` tells content decoding by its type (`StoredRoles`).
    private static let noted: Void = StoredRoles.note(adapter: DecompressionMiddleware.self)

    /// Creates the middleware.
    public init() {
        _ = Self.noted
    }

    /// Adds `Accept-Encoding` and decodes the answer (see the type's description).
    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard Self.applies(to: request) else { return try await next(request, body, baseURL) }
        var request = request
        request.headerFields.append(HTTPField(name: .acceptEncoding, value: Self.acceptEncoding))
        let (response, responseBody): (HTTPResponse, HTTPBody?)
        // Beneath, the cache judges an encoded body by what it decodes to (`ContentDecoder`);
        // what it decoded is kept, so that the same bytes coming back are not decoded again.
        let decoder = KeepingDecoder()
        do {
            (response, responseBody) = try await ContentDecoding.$decoder.withValue(decoder) {
                try await next(request, body, baseURL)
            }
        } catch let error as APIError {
            // A refusal raised beneath (the rate limit's) carries its body as it came: decoded here.
            guard let answer = error.response, let coding = ContentCoding.single(in: answer.headerFields),
                  let decoded = try? await coding.decode(answer.body, limit: APIError.ErrorResponse.bodyLimit)
            else { throw error }
            throw error.replacingResponse(.init(head: Self.decodedHead(answer.head), body: Data(decoded)))
        }
        guard let coding = ContentCoding.single(in: response.headerFields) else { return (response, responseBody) }
        guard let responseBody else { return (Self.decodedHead(response), nil) }
        if let kept = decoder.kept, case .known(let count) = responseBody.length, count == Int64(kept.source.count) {
            // The body beneath was read whole already (the cache's check): when its bytes are the
            // ones decoded, the decoding is the answer.
            let bytes = if let whole = ExchangeReport.current?.wholeData(of: responseBody) { whole } else {
                try await Data(collecting: responseBody, upTo: kept.source.count)
            }
            let body = bytes == kept.source ? HTTPBody.whole(kept.decoded) : coding.decoding(HTTPBody(bytes))
            return (Self.decodedHead(response), body)
        }
        return (Self.decodedHead(response), coding.decoding(responseBody))
    }

    /// The request with `Accept-Encoding: gzip, deflate` when it applies.
    public func storedRequest(_ request: HTTPRequest) -> HTTPRequest {
        guard Self.applies(to: request) else { return request }
        var request = request
        request.headerFields.append(HTTPField(name: .acceptEncoding, value: Self.acceptEncoding))
        return request
    }

    /// A stored answer decoded whole, up to `limit` bytes.
    public func storedResponse(_ response: HTTPResponse, body: Data, limit: Int) async throws -> (HTTPResponse, Data) {
        guard let coding = ContentCoding.single(in: response.headerFields) else { return (response, body) }
        return (Self.decodedHead(response), try coding.decodedWhole(body, limit: limit))
    }

    /// `body` decoded whole from the coding `fields` name, up to `limit` bytes (`nil` past it, or
    /// for a coding this middleware leaves alone).
    public func decode(_ body: Data, fields: HTTPFields, limit: Int) async throws -> Data? {
        try Self.decoded(body, fields: fields, limit: limit)
    }

    static func decoded(_ body: Data, fields: HTTPFields, limit: Int) throws -> Data? {
        guard let coding = ContentCoding.single(in: fields) else { return nil }
        return try coding.decodedWithin(body, limit: limit)
    }

    /// The decoder offered beneath for one request: decodes as `decode(_:fields:limit:)` does and
    /// keeps the last body it decoded with its decoding.
    final class KeepingDecoder: ContentDecoder {
        private let last = Mutex<(source: Data, decoded: Data)?>(nil)

        /// The last body decoded beneath, and what it decoded to.
        var kept: (source: Data, decoded: Data)? { last.withLock { $0 } }

        func decode(_ body: Data, fields: HTTPFields, limit: Int) async throws -> Data? {
            guard let decoded = try DecompressionMiddleware.decoded(body, fields: fields, limit: limit) else { return nil }
            last.withLock { $0 = (body, decoded) }
            return decoded
        }
    }

    /// Whether a request is one to ask for compression on: it names no `Accept-Encoding` and no
    /// `Range`, and is no transfer.
    static func applies(to request: HTTPRequest) -> Bool {
        !request.headerFields.contains { $0.name == .acceptEncoding || $0.name == .range } && !TransferContext.isTransfer
    }

    /// `head` without the fields that describe the encoded body.
    static func decodedHead(_ head: HTTPResponse) -> HTTPResponse {
        var head = head
        head.headerFields[.contentEncoding] = nil
        head.headerFields[.contentLength] = nil
        return head
    }
}
