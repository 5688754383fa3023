import Foundation
import Hummingbird
import Synchronization

/// Thrown inside a streaming body to abort it (shutdown or duration limit).
struct StreamAborted: Error {}

extension Simulator {
    /// Entry point for every request.
    func respond(to request: Request) async throws -> Response {
        let path = request.uri.path
        let target = request.head.path ?? request.uri.string
        if path.hasPrefix("/_sim/") && path != "/_sim/drip" && path != "/_sim/bytes" {
            return try await control(request, path: path)
        }

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
        let id = state.withLock { $0.begin(method: request.method.rawValue, path: target, headers: headers) }
        let tracker = RequestTracker(id: id, simulator: self)

        do {
            let delay = state.withLock { $0.latency(for: path) }
            if delay > 0 {
                try await Task.sleep(for: .milliseconds(delay))
            }
            var response: Response
            if let mode = state.withLock({ $0.takeFaultMode(for: path) }) {
                response = try await faultModeResponse(mode, request: request, path: path)
            } else if let fault = state.withLock({ $0.takeFault(for: path) }) {
                response = faultResponse(fault)
            } else {
                response = try await route(request, path: path)
            }
            if request.method == .head {
                // Same head (Content-Length included), no body.
                let contentLength = response.headers[.contentLength]
                response = Response(status: response.status, headers: response.headers, body: ResponseBody())
                response.headers[.contentLength] = contentLength
            }
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

    func faultResponse(_ fault: Fault) -> Response {
        var headers = HTTPFields()
        for (name, value) in fault.headers.sorted(by: { $0.key < $1.key }) {
            headers.set(name, value)
        }
        if let body = fault.body {
            if headers[.contentType] == nil { headers[.contentType] = "application/json; charset=utf-8" }
            return Response(status: HTTPSupport.status(fault.status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
        }
        return Response(status: HTTPSupport.status(fault.status), headers: headers, body: ResponseBody())
    }

    func route(_ request: Request, path: String) async throws -> Response {
        let segments = HTTPSupport.segments(path)
        let query = QueryItems(request.uri.query)
        let isGet = request.method == .get || request.method == .head

        switch segments.first {
        case "repos", "users", "search":
            return github(request, segments: segments, query: query)
        case "avatars" where isGet:
            return avatar(request, segments: segments, query: query)
        case "v0" where isGet:
            return hackerNewsRoute(segments: segments)
        case "v2" where isGet && segments == ["v2", "search", "blog"]:
            return kakaoBlogSearch(request, query: query)
        case "scripted":
            return scripted(request, path: path)
        case "_sim" where isGet && segments == ["_sim", "drip"]:
            return drip(query)
        case "_sim" where isGet && segments == ["_sim", "bytes"]:
            return bytes(query)
        default:
            return HTTPSupport.json(404, GitHubResponses.notFound)
        }
    }

    // MARK: - Streaming test endpoints

    /// `GET /_sim/drip?bytes=N&chunk=K&intervalMs=M`: `N` bytes (a JSON string) with
    /// `Content-Length`, `K` bytes every `M` ms. Aborted on shutdown or after 120 s.
    func drip(_ query: QueryItems) -> Response {
        let total = min(max(query.int("bytes") ?? 1024, 0), 50_000_000)
        let chunk = min(max(query.int("chunk") ?? 64, 1), max(total, 1))
        let interval = min(max(query.int("intervalMs") ?? 100, 0), 10_000)
        let padding = HTTPSupport.PaddedString(size: total)
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.cacheControl] = "no-store"
        let body = ResponseBody(contentLength: total) { [self] writer in
            let deadline = ContinuousClock.now + .seconds(120)
            var sent = 0
            while sent < total {
                let n = min(chunk, total - sent)
                try await writer.write(padding.chunk(from: sent, count: n))
                sent += n
                if sent < total && interval > 0 {
                    try await pause(milliseconds: interval, deadline: deadline)
                }
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    /// Sleeps in short slices so shutdown and the deadline are noticed promptly.
    func pause(milliseconds: Int, deadline: ContinuousClock.Instant) async throws {
        let end = ContinuousClock.now + .milliseconds(milliseconds)
        while ContinuousClock.now < end {
            if isShuttingDown || ContinuousClock.now > deadline { throw StreamAborted() }
            let slice = min(end - ContinuousClock.now, .milliseconds(25))
            try await Task.sleep(for: slice)
        }
        if isShuttingDown { throw StreamAborted() }
    }

    /// `GET /_sim/bytes?size=N[&chunked=1]`: a JSON object of exactly `N` bytes.
    func bytes(_ query: QueryItems) -> Response {
        let size = min(max(query.int("size") ?? 1024, 0), 512 * 1024 * 1024)
        let chunked = ["1", "true", "yes"].contains(query["chunked"]?.lowercased() ?? "")
        let padded = HTTPSupport.PaddedObject(size: size)
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.cacheControl] = "no-store"
        let body = ResponseBody(contentLength: chunked ? nil : size) { [self] writer in
            var sent = 0
            let step = 64 * 1024
            while sent < size {
                if isShuttingDown { throw StreamAborted() }
                let n = min(step, size - sent)
                try await writer.write(padded.chunk(from: sent, count: n))
                sent += n
            }
            try await writer.finish(nil)
        }
        var response = Response(status: .ok, headers: headers, body: body)
        if chunked { response.headers[.contentLength] = nil }
        return response
    }
}
