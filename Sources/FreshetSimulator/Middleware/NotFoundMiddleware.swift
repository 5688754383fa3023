import Hummingbird

/// What no route of its router answers gets `answer`'s response (turned into a response here,
/// inside the other middleware, so the request log and the faults see it like any other answer).
struct NotFoundMiddleware: RouterMiddleware {
    /// The response for a request no route answers.
    let answer: SimHandler

    func handle(
        _ request: Request, context: SimRequestContext,
        next: (Request, SimRequestContext) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            return try await answer(request, context)
        }
    }
}
