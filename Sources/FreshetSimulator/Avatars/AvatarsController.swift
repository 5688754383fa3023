import Foundation
import Hummingbird

/// The simulated image hosts, both serving identicon PNGs with caching headers
/// (`Cache-Control: max-age=300`, an `ETag` and `Last-Modified`; `If-None-Match` gets a `304`):
///
/// - `GET /avatars/u/{id}?v=4&s=N`: avatars.githubusercontent.com. Each user gets a GitHub-style
///   identicon (5 × 5 cells, mirrored, one colour from the id) of `s` pixels (16…460, default
///   460). Unknown ids get GitHub's `404`.
/// - `GET /thumbnails/{host}/argon/{size}/{key}`: Kakao's thumbnail hosts
///   (`https://{host}/argon/{size}/{key}`, the `thumbnail` of a blog post), 130 pixels, the
///   picture chosen by the key.
struct AvatarsController {
    let simulator: Simulator

    func addRoutes(to routes: SimRoutes) {
        routes.get("/avatars/u/{id}", "?v=4&s=16…460 (identicon PNG, as avatars.githubusercontent.com/u/{id})", use: avatar)
        routes.get("/thumbnails/{host}/argon/{size}/{key}", " (a blog post's thumbnail as https://{host}/argon/{size}/{key}; PNG)",
                   use: thumbnail)
    }

    @Sendable func thumbnail(_ request: Request, context: SimRequestContext) -> Response {
        let key = context.parameter("key")
        guard context.parameter("host").hasSuffix(".kakaocdn.net"), !key.isEmpty else {
            return HTTPSupport.json(404, #"{"message":"not found"}"#)
        }
        // FNV-1a of the key: the same key, the same picture, on every run.
        let id = key.utf8.reduce(UInt64(0xCBF2_9CE4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }
        return image(Identicon.png(id: Int(truncatingIfNeeded: id & 0xFFFF_FFFF), size: 130),
                     etag: "\"t\(String(id, radix: 16))\"", request: request)
    }

    @Sendable func avatar(_ request: Request, context: SimRequestContext) -> Response {
        let github = simulator.github
        guard let id = Int(context.parameter("id")), github.users.contains(where: { $0.id == id }) else {
            return HTTPSupport.json(404, GitHubResponses.notFound)
        }
        let query = QueryItems(request.uri.query)
        let size = min(max(query.int("s") ?? 460, 16), 460)
        let etag = "\"\(String(UInt64(truncatingIfNeeded: id) &* 0x9E37_79B9 &+ UInt64(size), radix: 16))\""
        return image(Identicon.png(id: id, size: size), etag: etag, request: request)
    }

    /// `png` with the image hosts' caching headers, or a `304` when `If-None-Match` matches `etag`.
    private func image(_ png: [UInt8], etag: String, request: Request) -> Response {
        var headers = HTTPFields()
        headers.set("Cache-Control", "max-age=300")
        headers.set("ETag", etag)
        headers.set("Last-Modified", SimDate.rfc1123(simulator.github.anchor - 86_400 * 30))
        if let match = request.headers[.ifNoneMatch], HTTPSupport.ifNoneMatch(match, matches: etag) {
            return HTTPSupport.empty(304, headers: headers)
        }
        headers[.contentType] = "image/png"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: png)))
    }
}
