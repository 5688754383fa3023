import Foundation
import Hummingbird

/// Thrown inside a streaming body to abort it (shutdown or duration limit).
struct StreamAborted: Error {}

/// `/_sim/drip` and `/_sim/bytes`: streamed bodies for transport tests. Unlike the other `/_sim/`
/// endpoints they are recorded in the request log (and can be delayed and faulted).
struct StreamingController {
    let simulator: Simulator

    func addRoutes(to routes: SimRoutes) {
        routes.get("/_sim/drip", "?bytes=N&chunk=K&intervalMs=M", use: drip)
        routes.get("/_sim/bytes", "?size=N[&chunked=1]", use: bytes)
    }

    /// `GET /_sim/drip?bytes=N&chunk=K&intervalMs=M`: `N` bytes (a JSON string) with
    /// `Content-Length`, `K` bytes every `M` ms. Aborted on shutdown or after 120 s.
    @Sendable func drip(_ request: Request, context: SimRequestContext) -> Response {
        let query = QueryItems(request.uri.query)
        let total = min(max(query.int("bytes") ?? 1024, 0), 50_000_000)
        let padding = HTTPSupport.PaddedString(size: total)
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.cacheControl] = "no-store"
        let body = simulator.dripBody(total: total, chunk: query.int("chunk") ?? 64, intervalMs: query.int("intervalMs") ?? 100) {
            padding.chunk(from: $0, count: $1)
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    /// `GET /_sim/bytes?size=N[&chunked=1]`: a JSON object of exactly `N` bytes.
    @Sendable func bytes(_ request: Request, context: SimRequestContext) -> Response {
        let query = QueryItems(request.uri.query)
        let chunked = ["1", "true", "yes"].contains(query["chunked"]?.lowercased() ?? "")
        return simulator.bytesResponse(size: query.int("size") ?? 1024, chunked: chunked)
    }
}

extension Simulator {
    /// A body of `total` bytes (`slice(from, count)` gives them) with `Content-Length`, written
    /// `chunk` bytes every `intervalMs` ms; aborted on shutdown or after 120 s.
    func dripBody(
        total: Int, chunk: Int, intervalMs: Int, slice: @escaping @Sendable (_ from: Int, _ count: Int) -> ByteBuffer
    ) -> ResponseBody {
        let chunk = min(max(chunk, 1), max(total, 1))
        let interval = min(max(intervalMs, 0), 10_000)
        return ResponseBody(contentLength: total) { [self] writer in
            let deadline = ContinuousClock.now + .seconds(120)
            var sent = 0
            while sent < total {
                let n = min(chunk, total - sent)
                try await writer.write(slice(sent, n))
                sent += n
                if sent < total && interval > 0 {
                    try await pause(milliseconds: interval, deadline: deadline)
                }
            }
            try await writer.finish(nil)
        }
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

    /// `200` with a JSON object of exactly `size` bytes (at most 512 MiB), streamed in 64 KiB
    /// writes, with `Content-Length` unless `chunked`.
    func bytesResponse(size: Int, chunked: Bool) -> Response {
        let size = min(max(size, 0), 512 * 1024 * 1024)
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
