import Hummingbird
import Synchronization

/// Records every request it sees in the request log (`GET /_sim/log`): method, target, headers,
/// then the status, the body bytes as they are written and whether the body finished or aborted.
struct RequestLogMiddleware: RouterMiddleware {
    let simulator: Simulator

    func handle(
        _ request: Request, context: SimRequestContext,
        next: (Request, SimRequestContext) async throws -> Response
    ) async throws -> Response {
        var headers: [String: String] = [:]
        if let authority = request.head.authority { headers["host"] = authority }
        for field in request.headers {
            let name = field.name.canonicalName.lowercased()
            if let existing = headers[name] {
                headers[name] = existing + ", " + field.value
            } else {
                headers[name] = field.value
            }
        }
        let target = request.head.path ?? request.uri.string
        let id = simulator.state.withLock { $0.begin(method: request.method.rawValue, path: target, headers: headers) }
        let tracker = RequestTracker(id: id, simulator: simulator)
        var request = request
        let inbound = request.body
        // The request body is counted as the route reads it (a test can see an upload arrive).
        request.body = RequestBody(asyncSequence: inbound.map { [simulator] buffer in
            simulator.state.withLock { $0.update(id) { $0.bytesReceived += buffer.readableBytes } }
            return buffer
        })
        do {
            let response = try await next(request, context)
            tracker.setStatus(Int(response.status.code))
            return Self.tracked(response, tracker: tracker)
        } catch {
            tracker.complete(finished: false)
            throw error
        }
    }

    /// Wraps the body so the tracker sees every byte and the end (or the failure).
    static func tracked(_ response: Response, tracker: RequestTracker) -> Response {
        var response = response
        let original = response.body
        let contentLength = response.headers[.contentLength]
        response.body = ResponseBody(contentLength: original.contentLength) { writer in
            let counting = CountingWriter(base: writer, tracker: tracker)
            do {
                try await original.write(counting)
                tracker.complete(finished: true)
            } catch {
                tracker.complete(finished: false)
                throw error
            }
        }
        response.headers[.contentLength] = contentLength
        return response
    }
}

/// Tracks one recorded request from arrival until its body finished or aborted. If the
/// response is dropped without being written, `deinit` records it as aborted.
final class RequestTracker: Sendable {
    let id: Int
    let simulator: Simulator
    private let done = Mutex(false)

    init(id: Int, simulator: Simulator) {
        self.id = id
        self.simulator = simulator
    }

    func setStatus(_ status: Int) {
        simulator.state.withLock { $0.update(id) { $0.status = status } }
    }

    func addBytes(_ count: Int) {
        simulator.state.withLock { $0.update(id) { $0.bytesSent += count } }
    }

    func complete(finished: Bool) {
        let first = done.withLock { done -> Bool in
            if done { return false }
            done = true
            return true
        }
        guard first else { return }
        simulator.state.withLock { state in
            state.inFlight -= 1
            state.update(id) {
                $0.finished = finished
                $0.aborted = !finished
            }
        }
    }

    deinit {
        complete(finished: false)
    }
}

/// Forwards body writes and counts the bytes.
struct CountingWriter: ResponseBodyWriter {
    var base: any ResponseBodyWriter
    let tracker: RequestTracker

    mutating func write(_ buffer: ByteBuffer) async throws {
        let n = buffer.readableBytes
        try await base.write(buffer)
        tracker.addBytes(n)
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        let base = self.base
        try await base.finish(trailingHeaders)
    }
}
