import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// Thrown inside a streaming body to abort it (shutdown or duration limit).
struct StreamAborted: Error {}

/// `/_sim/drip` and `/_sim/bytes`: streamed bodies for transport tests. Unlike the other `/_sim/`
/// endpoints they are recorded in the request log (and can be delayed and faulted).
struct StreamingController {
    let simulator: Simulator

    func addRoutes(to routes: SimRoutes) {
        routes.get("/_sim/drip", "?bytes=N&chunk=K&intervalMs=M", use: drip)
        routes.get("/_sim/bytes", "?size=N[&chunked=1]", use: bytes)
        routes.get("/_sim/sse", "?count=N&retryMs=R&chunk=K&intervalMs=M&end=close|abort|stall|keepalive|endless&stopAt=N&auth=1&expire=1&cache=1", use: sse)
    }

    /// `GET /_sim/sse`: a Server-Sent Events stream for client tests. Each connection sends a
    /// comment, `retry: R` when asked, then `count` events (default 3) numbered on from the
    /// request's `Last-Event-ID` (`id: n`, `event: tick`, two `data:` lines that join into
    /// `{"n":n,"text":"…"}`), written `chunk` bytes at a time (default: an event per write),
    /// `intervalMs` apart. Then, by `end`: `close` ends the body (default), `abort` breaks the
    /// connection, `stall` goes silent, `keepalive` sends a comment every 50 ms until the client
    /// leaves, `endless` sends one event that never ends (`data:` lines, 16 KiB a write, no blank
    /// line) until the client leaves. `stopAt=N`: a `Last-Event-ID` of N or more is answered `204 No Content`.
    /// `auth=1`: only the current access token of `/auth/me` is let in (else `401`);
    /// `expire=1`: that token stops working once the connection's events are sent. `cache=1`:
    /// `Cache-Control: public, max-age=60` instead of `no-store`.
    @Sendable func sse(_ request: Request, context: SimRequestContext) -> Response {
        let query = QueryItems(request.uri.query)
        if query["auth"] == "1" {
            let current = simulator.state.withLock { Simulator.accessToken(generation: $0.authGeneration) }
            guard request.headers[.authorization] == "Bearer " + current else {
                var headers = HTTPFields()
                headers[.wwwAuthenticate] = #"Bearer realm="sim", error="invalid_token""#
                return HTTPSupport.json(401, obj(("message", "Bad credentials")).rendered, headers: headers)
            }
        }
        let last = request.headers[HTTPField.Name("Last-Event-ID")!].flatMap { Int($0) } ?? 0
        if let stop = query.int("stopAt"), last >= stop { return Response(status: .noContent) }
        var text = ": freshet-sim test stream\n\n"
        if let retry = query.int("retryMs") { text += "retry: \(retry)\n\n" }
        var events: [String] = [text]
        let count = min(max(query.int("count") ?? 3, 0), 10_000)
        for n in stride(from: last + 1, through: last + count, by: 1) {
            events.append("id: \(n)\nevent: tick\ndata: {\"n\":\(n),\ndata: \"text\":\"event \(n)\"}\n\n")
        }
        let chunk = query.int("chunk").map { max(1, $0) }
        let interval = min(max(query.int("intervalMs") ?? 0, 0), 10_000)
        let end = query["end"] ?? "close"
        let expire = query["expire"] == "1"
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        // `cache=1`: headers a cache would store the answer by (a client must not).
        headers[.cacheControl] = query["cache"] == "1" ? "public, max-age=60" : "no-store"
        let body = ResponseBody { [simulator, events] writer in
            defer { if expire { simulator.state.withLock { $0.authGeneration += 1 } } }
            let deadline = ContinuousClock.now + .seconds(120)
            for (index, event) in events.enumerated() {
                let bytes = Array(event.utf8)
                var from = 0
                while from < bytes.count {
                    let to = min(bytes.count, from + (chunk ?? bytes.count))
                    try await writer.write(ByteBuffer(bytes: bytes[from..<to]))
                    from = to
                }
                if index > 0 && interval > 0 { try await simulator.pause(milliseconds: interval, deadline: deadline) }
            }
            switch end {
            case "abort":
                throw StreamAborted()
            case "stall":
                while true { try await simulator.pause(milliseconds: 1000, deadline: deadline) }
            case "endless":
                let line = ByteBuffer(string: "data: " + String(repeating: "x", count: 16 * 1024 - 7) + "\n")
                while true {
                    try await writer.write(line)
                    if simulator.isShuttingDown || ContinuousClock.now > deadline { throw StreamAborted() }
                }
            case "keepalive":
                while true {
                    try await simulator.pause(milliseconds: 50, deadline: deadline)
                    try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                }
            default:
                try await writer.finish(nil)
            }
        }
        return Response(status: .ok, headers: headers, body: body)
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
