import CompressNIO
import Foundation
import Freshet
import FreshetCache
import FreshetTransports
import HTTPTypes
import NIOCore
import NIOFoundationCompat
import OpenAPIRuntime

/// What one client is sent, beyond what the origin or the cache answered: the body decoded when
/// the answer is gzip and the client does not take gzip (nginx's `gunzip`), and the origin's
/// absolute URLs in `Link`, `Location` and `Content-Location` turned into the proxy's (so a client
/// following pagination stays on the proxy).
struct ProxyDelivery: Sendable {
    /// The client's request fields (its `Accept-Encoding` is read when an answer is gzip).
    var request: HTTPFields
    /// The origin's URL as it appears in its own absolute links (`https://api.github.com`, with the
    /// origin's path prefix when it has one).
    var originPrefix: String
    /// `--public-url`, when given.
    var publicBase: String?
    /// The `Host` the client sent.
    var authority: String?

    /// Where clients reach the proxy: `--public-url`, else `http://` and the `Host` the client
    /// sent; `nil` when neither is known (nothing is rewritten). Made only when a link needs it:
    /// a hit pays nothing for it.
    var base: String? {
        publicBase ?? authority.flatMap { $0.isEmpty ? nil : "http://\($0)" }
    }

    /// The most a stored body is decoded to in one piece for a client; a larger one is decoded as
    /// it streams.
    static let wholeDecodeLimit = 8 * 1024 * 1024

    /// The delivery for a client's `request` to a proxy whose origin's links start with
    /// `originPrefix`, and whose clients reach it at `publicBase` (else at the `Host` they sent).
    init(request: HTTPRequest, originPrefix: String, publicBase: String?) {
        self.request = request.headerFields
        self.originPrefix = originPrefix
        self.publicBase = publicBase
        authority = request.authority
    }

    /// `url` as the prefix links start with: no trailing slash.
    static func prefix(_ url: URL) -> String {
        var text = url.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }

    /// Whether a stored response sent whole needs nothing of this delivery (its head can be the
    /// one prepared for every client).
    func leavesAlone(_ fields: HTTPFields) -> Bool {
        !mentionsOrigin(fields) && takesEncoding(of: fields)
    }

    /// Whether this client takes a body with `fields`' encoding as it is (not gzip, or the
    /// client takes gzip): nothing to decode.
    func takesEncoding(of fields: HTTPFields) -> Bool {
        !fields.contains(.contentEncoding) || !Self.isGzip(fields) || acceptsGzip
    }

    private var acceptsGzip: Bool { AcceptEncoding.acceptsGzip(request) }

    /// `response` as this client gets it.
    func shape(_ response: ProxyResponse) -> ProxyResponse {
        var shaped = response
        rewriteLinks(&shaped.head.headerFields)
        guard response.head.headerFields[.contentEncoding] != nil, Self.isGzip(response.head.headerFields),
              !acceptsGzip else { return shaped }
        shaped.head.headerFields[.contentEncoding] = nil
        shaped.head.headerFields[.contentLength] = nil
        // The decoded bytes are another representation: a strong tag would claim byte equality.
        if let tag = shaped.head.headerFields[.eTag], !tag.hasPrefix("W/") { shaped.head.headerFields[.eTag] = "W/" + tag }
        if let complete = response.complete, let decoded = Self.gunzip(complete, limit: Self.wholeDecodeLimit) {
            shaped.complete = decoded
            shaped.body = HTTPBody(decoded)
            shaped.head.headerFields[.contentLength] = String(decoded.count)
        } else {
            shaped.complete = nil
            shaped.body = response.body.map(Self.gunzipping)
        }
        return shaped
    }

    /// `fields` with the origin's URLs in `Link`, `Location` and `Content-Location` turned into
    /// the proxy's.
    func rewriteLinks(_ fields: inout HTTPFields) {
        guard mentionsOrigin(fields) else { return }
        for name in Self.linkFields {
            let values = fields[values: name]
            guard !values.isEmpty else { continue }
            fields[values: name] = values.map { rewrittenLink($0) ?? $0 }
        }
    }

    /// The value of a `Link`, `Location` or `Content-Location` line as this client gets it, or
    /// `nil` when it names no URL of the origin (or where clients reach the proxy is not known).
    func rewrittenLink(_ value: String) -> String? {
        guard let base, value.contains(originPrefix) else { return nil }
        return Self.rewritten(value, from: originPrefix, to: base)
    }

    /// The fields whose URLs are rewritten.
    static let linkFields: [HTTPField.Name] = [.link, .location, .contentLocation]
    /// Whether the lowercase field name `name` is one of theirs (compared, not hashed: it is asked
    /// of every field of every answer forwarded).
    static func isLinkField(_ name: String) -> Bool {
        switch name.utf8.count {
        case 4: name == "link"
        case 8: name == "location"
        case 16: name == "content-location"
        default: false
        }
    }

    private func mentionsOrigin(_ fields: HTTPFields) -> Bool {
        guard publicBase != nil || authority?.isEmpty == false else { return false }
        for field in fields where Self.isLinkField(field.name.canonicalName) {
            if field.value.contains(originPrefix) { return true }
        }
        return false
    }

    /// `value` with every URL that starts with `from` (at a path boundary) starting with `to`.
    static func rewritten(_ value: String, from: String, to: String) -> String {
        var result = ""
        var rest = Substring(value)
        while let range = rest.range(of: from) {
            let after = rest[range.upperBound...]
            let boundary = after.first.map { "/?#>\";, ".contains($0) } ?? true
            result += rest[..<range.lowerBound]
            result += boundary ? to : from
            rest = after
        }
        return result + rest
    }

    // MARK: - Content coding

    /// Whether a response's body is gzip, and only gzip.
    static func isGzip(_ fields: HTTPFields) -> Bool {
        ContentCoding.single(in: fields) == .gzip
    }

    /// `data` decoded, or `nil` when it is not a gzip stream or decodes to more than `limit` bytes.
    static func gunzip(_ data: Data, limit: Int) -> Data? {
        var buffer = ByteBuffer(data: data)
        guard let decoded = try? buffer.decompress(with: .gzip, maxSize: limit) else { return nil }
        return Data(decoded.readableBytesView)
    }

    /// `body` decoded as it streams, 64 KiB at a time; a stream that is not gzip, or is cut
    /// short, ends the body with an error (the client sees a cut-off answer).
    static func gunzipping(_ body: HTTPBody) -> HTTPBody {
        ContentCoding.gzip.decoding(body)
    }
}
