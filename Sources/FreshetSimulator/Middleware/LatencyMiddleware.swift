import Hummingbird
import Synchronization

/// Delays the response head by the latency set for the request's path when it arrives
/// (`POST /_sim/latency`; the longest matching route prefix wins), then keeps it while a hold
/// covers the path (`POST /_sim/hold`, until `DELETE /_sim/hold`, 120 s at most): a test can
/// hold one request, look at the client meanwhile, then let it go.
struct LatencyMiddleware: RouterMiddleware {
    let simulator: Simulator

    func handle(
        _ request: Request, context: SimRequestContext,
        next: (Request, SimRequestContext) async throws -> Response
    ) async throws -> Response {
        let path = request.uri.path
        let delay = simulator.state.withLock { $0.latency(for: path) }
        if delay > 0 {
            try await Task.sleep(for: .milliseconds(delay))
        }
        let deadline = ContinuousClock.now + .seconds(120)
        while simulator.state.withLock({ $0.isHeld(path) }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        return try await next(request, context)
    }
}
