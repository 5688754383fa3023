import Foundation
import Hummingbird

/// `GET /avatars/u/{id}?v=4&s=N`: the simulated avatars.githubusercontent.com. Each user gets a
/// GitHub-style identicon (5 × 5 cells, mirrored, one colour from the id) as a PNG of `s` pixels
/// (16…460, default 460), with the real host's caching headers: `Cache-Control: max-age=300`,
/// an `ETag` and `Last-Modified`; `If-None-Match` gets a `304`. Unknown ids get GitHub's `404`.
struct AvatarsController {
    let simulator: Simulator

    func addRoutes(to routes: SimRoutes) {
        routes.get("/avatars/u/{id}", "?v=4&s=16…460 (identicon PNG, as avatars.githubusercontent.com/u/{id})", use: avatar)
    }

    @Sendable func avatar(_ request: Request, context: SimRequestContext) -> Response {
        let github = simulator.github
        guard let id = Int(context.parameter("id")), github.users.contains(where: { $0.id == id }) else {
            return HTTPSupport.json(404, GitHubResponses.notFound)
        }
        let query = QueryItems(request.uri.query)
        let size = min(max(query.int("s") ?? 460, 16), 460)
        let etag = "\"\(String(UInt64(truncatingIfNeeded: id) &* 0x9E37_79B9 &+ UInt64(size), radix: 16))\""
        var headers = HTTPFields()
        headers.set("Cache-Control", "max-age=300")
        headers.set("ETag", etag)
        headers.set("Last-Modified", SimDate.rfc1123(github.anchor - 86_400 * 30))
        if let match = request.headers[.ifNoneMatch], HTTPSupport.ifNoneMatch(match, matches: etag) {
            return HTTPSupport.empty(304, headers: headers)
        }
        headers[.contentType] = "image/png"
        let png = Identicon.png(id: id, size: size)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: png)))
    }
}
