import Hummingbird
import Synchronization

/// Serves the faults queued for the request's path (`POST /_sim/fault-mode`, `POST /_sim/faults`):
/// a fault mode first (the real answer, broken on the wire or in time), else a canned fault; each
/// taken once per request and counted down.
struct FaultMiddleware: RouterMiddleware {
    let simulator: Simulator

    func handle(
        _ request: Request, context: SimRequestContext,
        next: (Request, SimRequestContext) async throws -> Response
    ) async throws -> Response {
        let path = request.uri.path
        if let mode = simulator.state.withLock({ $0.takeFaultMode(for: path) }) {
            return try await simulator.faultModeResponse(mode, request: request, context: context, next: next)
        }
        if let fault = simulator.state.withLock({ $0.takeFault(for: path) }) {
            return Self.response(fault)
        }
        return try await next(request, context)
    }

    /// The canned answer: the fault's status, headers and body (JSON unless it says otherwise).
    static func response(_ fault: Fault) -> Response {
        var headers = HTTPFields()
        for (name, value) in fault.headers.sorted(by: { $0.key < $1.key }) {
            headers.set(name, value)
        }
        let status = HTTPSupport.status(fault.status)
        guard let body = fault.body else {
            return Response(status: status, headers: headers, body: ResponseBody())
        }
        if headers[.contentType] == nil { headers[.contentType] = "application/json; charset=utf-8" }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
}
