import Hummingbird
import NIOCore

/// Answers gzip when the request accepts it, as GitHub, Hacker News (Firebase) and Kakao do:
/// the JSON and text answers under the three APIs' roots (``roots``) go out with
/// `Content-Encoding: gzip` and the encoded `Content-Length` (so `HEAD` announces it too), and
/// every answer there, encoded or not, varies on `Accept-Encoding`. The `ETag` stays the same for
/// both encodings (GitHub's are weak). `304`s have no body to encode.
///
/// What lives elsewhere is sent as it is: images (`/avatars`, `/thumbnails`), `/files`,
/// `/upload`, `/scripted`, `/_sim/drip` and `/_sim/bytes`, and the control endpoints (which
/// have a router of their own). It sits inside the fault middleware: a canned ``Fault`` is sent
/// as written, and a ``FaultMode`` breaks the encoded answer.
struct CompressionMiddleware: RouterMiddleware {
    /// The first path segments of the GitHub (`repos`, `users`, `search`), Hacker News (`v0`) and
    /// Kakao (`v2`) APIs.
    static let roots: Set<String> = ["repos", "users", "search", "v0", "v2"]

    /// Bodies larger than this are sent as they are (none of the APIs' answers comes close).
    static let limit = 16 * 1024 * 1024

    func handle(
        _ request: Request, context: SimRequestContext,
        next: (Request, SimRequestContext) async throws -> Response
    ) async throws -> Response {
        var response = try await next(request, context)
        guard let root = HTTPSupport.segments(request.uri.path).first, Self.roots.contains(root) else { return response }
        HTTPSupport.varyOnAcceptEncoding(&response.headers)
        guard HTTPSupport.acceptsGzip(request.headers), Self.isCompressible(response) else { return response }
        let body = try await Simulator.collect(response.body, limit: Self.limit)
        let encoded = try HTTPSupport.gzip(body)
        response.headers[.contentEncoding] = "gzip"
        response.headers[.contentLength] = nil
        response.body = ResponseBody(byteBuffer: encoded)
        response.headers[.contentLength] = String(encoded.readableBytes)
        return response
    }

    /// A JSON or text answer with a body that is not encoded already.
    static func isCompressible(_ response: Response) -> Bool {
        guard response.status != .notModified, response.status != .noContent, response.headers[.contentEncoding] == nil,
            let contentLength = response.body.contentLength, contentLength > 0, contentLength <= limit,
            let type = response.headers[.contentType]?.lowercased()
        else { return false }
        return type.hasPrefix("application/json") || type.hasPrefix("text/")
    }
}
