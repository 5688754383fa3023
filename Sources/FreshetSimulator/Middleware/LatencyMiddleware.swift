import Hummingbird
import Synchronization

/// Delays the response head by the latency set for the request's path (`POST /_sim/latency`;
/// the longest matching route prefix wins).
struct LatencyMiddleware: RouterMiddleware {
    let simulator: Simulator

    func handle(
        _ request: Request, context: SimRequestContext,
        next: (Request, SimRequestContext) async throws -> Response
    ) async throws -> Response {
        let delay = simulator.state.withLock { $0.latency(for: request.uri.path) }
        if delay > 0 {
            try await Task.sleep(for: .milliseconds(delay))
        }
        return try await next(request, context)
    }
}
