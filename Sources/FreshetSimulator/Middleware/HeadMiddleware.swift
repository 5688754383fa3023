import Hummingbird

/// Answers `HEAD` with the head of the `GET` answer, `Content-Length` included, and no body.
struct HeadMiddleware: RouterMiddleware {
    func handle(
        _ request: Request, context: SimRequestContext,
        next: (Request, SimRequestContext) async throws -> Response
    ) async throws -> Response {
        let response = try await next(request, context)
        guard request.method == .head else { return response }
        let contentLength = response.headers[.contentLength]
        var head = Response(status: response.status, headers: response.headers, body: ResponseBody())
        head.headers[.contentLength] = contentLength
        return head
    }
}
