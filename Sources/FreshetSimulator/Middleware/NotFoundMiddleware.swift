import Hummingbird

/// What no API route answers gets GitHub's `404` body (the router's not-found error, turned
/// into a response here so the request log and the faults see it like any other answer).
struct NotFoundMiddleware: RouterMiddleware {
    func handle(
        _ request: Request, context: SimRequestContext,
        next: (Request, SimRequestContext) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            return HTTPSupport.json(404, GitHubResponses.notFound)
        }
    }
}

/// What no control route answers gets `404 {"error": "unknown control endpoint …"}`.
struct ControlNotFoundMiddleware: RouterMiddleware {
    func handle(
        _ request: Request, context: SimRequestContext,
        next: (Request, SimRequestContext) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let path = request.uri.path
            guard HTTPSupport.segments(path).count == 2 else {
                return HTTPSupport.controlError(404, "unknown control endpoint \(path)")
            }
            return HTTPSupport.controlError(404, "unknown control endpoint \(request.method.rawValue) \(path)")
        }
    }
}
