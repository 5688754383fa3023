import Hummingbird
import Synchronization

/// Delays the response head by the latency set for the request's path (`POST /_sim/latency`;
/// the longest matching route prefix wins).
///
/// A waiting request follows later changes: lowering or removing the latency releases it (a test
/// can hold one route with a long latency, look at the client meanwhile, then let it go).
///
/// A client that gives up while its request waits is not noticed here: the server allows
/// half-closed connections, so a client's close is only seen when a response is written
/// (`/_sim/drip` is the route for watching a client cancel).
struct LatencyMiddleware: RouterMiddleware {
    let simulator: Simulator

    func handle(
        _ request: Request, context: SimRequestContext,
        next: (Request, SimRequestContext) async throws -> Response
    ) async throws -> Response {
        let path = request.uri.path
        let start = ContinuousClock.now
        while true {
            let delay = simulator.state.withLock { $0.latency(for: path) }
            let remaining = start + .milliseconds(delay) - .now
            guard remaining > .zero else { break }
            try await Task.sleep(for: min(remaining, .milliseconds(20)))
        }
        return try await next(request, context)
    }
}
