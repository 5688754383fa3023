import Foundation
import Hummingbird
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How a faulted response breaks on the wire (`POST /_sim/fault-mode`). Unlike a ``Fault``,
/// which answers with a canned status and body, a fault mode serves the route's real answer
/// (with validators ignored, so it is always a full `200`-style answer with a body) and breaks
/// the connection or the timing.
public enum FaultModeKind: String, Sendable, Codable, CaseIterable {
    /// Waits ``FaultMode/delayMs`` before the response head, then answers normally.
    case delay
    /// Sends the body ``FaultMode/chunk`` bytes every ``FaultMode/intervalMs`` ms, with
    /// `Content-Length` (aborted on shutdown or after 120 s).
    case drip
    /// Sends the head (with `Content-Length`) and the first ``FaultMode/bytes`` of the body, then
    /// resets the connection (TCP RST: `SO_LINGER` 0 and close).
    case resetMidBody = "reset-mid-body"
    /// Announces the whole body in `Content-Length`, sends only the first ``FaultMode/bytes``,
    /// then closes the connection (FIN).
    case shortBody = "short-body"
    /// Sends the body chunked, stops after the first ``FaultMode/bytes`` and closes the
    /// connection without the final zero-length chunk.
    case chunkedCut = "chunked-cut"
    /// Answers `200` with a JSON object of ``FaultMode/size`` bytes (default 50 MiB), streamed,
    /// with `Content-Length` unless ``FaultMode/chunked``.
    case huge
    /// Sends the route's real head with `Content-Encoding: gzip` (whatever the request's
    /// `Accept-Encoding`) and a body that is not a valid gzip stream: a gzip header, then bytes
    /// no inflater accepts, as long as the real encoded body.
    case corruptGzip = "corrupt-gzip"
    /// Sends the route's real answer gzip-encoded (whatever the request's `Accept-Encoding`), cut
    /// before the end of the gzip stream: the trailer and the last ``FaultMode/bytes`` before it
    /// (default 16) are missing, and `Content-Length` counts what is sent, so only a decoder notices.
    case truncatedGzip = "truncated-gzip"
    /// Answers `200` with `Content-Encoding: gzip` and a small chunked body that decodes to
    /// ``FaultMode/size`` zero bytes (default 64 GiB, about 64 MB encoded), streamed: a decoder
    /// that inflates it whole runs out of memory, one that counts what it decodes stops early.
    case gzipBomb = "gzip-bomb"
}

/// A wire-level fault for the next ``times`` requests whose path (without query) starts with
/// ``route``. Consumed in the order added, before any ``Fault``.
///
/// ```json
/// {"route": "/repos/a/b/events", "mode": "reset-mid-body", "times": 1, "bytes": 100}
/// ```
public struct FaultMode: Sendable, Codable, Equatable {
    /// Path prefix; `""` matches every recorded request.
    public var route: String
    /// What goes wrong.
    public var mode: FaultModeKind
    /// How many matching requests get it (default 1).
    public var times: Int
    /// Body bytes sent before the cut (`reset-mid-body`, `short-body`, `chunked-cut`); default half
    /// of the body. Always less than the whole body.
    public var bytes: Int?
    /// `drip`: bytes per write (default 64).
    public var chunk: Int?
    /// `drip`: pause between writes in ms (default 100).
    public var intervalMs: Int?
    /// `delay`: wait before the head in ms (default 1000, at most 120 000).
    public var delayMs: Int?
    /// `huge`: body size in bytes (default 50 MiB, at most 512 MiB); `gzip-bomb`: decoded size
    /// (default 64 GiB, at most 1 TiB).
    public var size: Int?
    /// `huge`: chunked instead of `Content-Length`.
    public var chunked: Bool?

    /// The default size of a `huge` body: 50 MiB.
    public static let defaultHugeSize = 50 * 1024 * 1024

    /// Creates a fault mode.
    public init(
        route: String, mode: FaultModeKind, times: Int = 1, bytes: Int? = nil, chunk: Int? = nil,
        intervalMs: Int? = nil, delayMs: Int? = nil, size: Int? = nil, chunked: Bool? = nil
    ) {
        self.route = route
        self.mode = mode
        self.times = times
        self.bytes = bytes
        self.chunk = chunk
        self.intervalMs = intervalMs
        self.delayMs = delayMs
        self.size = size
        self.chunked = chunked
    }

    private enum CodingKeys: String, CodingKey { case route, mode, times, bytes, chunk, intervalMs, delayMs, size, chunked }

    /// Decodes the `/_sim/fault-mode` body; `route` defaults to `""`, `times` to `1`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        route = try c.decodeIfPresent(String.self, forKey: .route) ?? ""
        mode = try c.decode(FaultModeKind.self, forKey: .mode)
        times = try c.decodeIfPresent(Int.self, forKey: .times) ?? 1
        bytes = try c.decodeIfPresent(Int.self, forKey: .bytes)
        chunk = try c.decodeIfPresent(Int.self, forKey: .chunk)
        intervalMs = try c.decodeIfPresent(Int.self, forKey: .intervalMs)
        delayMs = try c.decodeIfPresent(Int.self, forKey: .delayMs)
        size = try c.decodeIfPresent(Int.self, forKey: .size)
        chunked = try c.decodeIfPresent(Bool.self, forKey: .chunked)
    }
}

extension Simulator {
    /// Queues a wire-level fault (`POST /_sim/fault-mode`).
    public func injectFaultMode(_ mode: FaultMode) async {
        guard mode.times > 0 else { return }
        state.withLock { $0.faultModes.append(mode) }
    }

    /// Removes every queued fault mode (`DELETE /_sim/fault-mode`).
    public func clearFaultModes() async {
        state.withLock { $0.faultModes.removeAll() }
    }

    /// The route's real answer (from `next`), broken as `fault` says.
    func faultModeResponse(
        _ fault: FaultMode, request: Request, context: SimRequestContext,
        next: (Request, SimRequestContext) async throws -> Response
    ) async throws -> Response {
        switch fault.mode {
        case .delay:
            let delay = min(max(fault.delayMs ?? 1000, 0), 120_000)
            try await pause(milliseconds: delay, deadline: ContinuousClock.now + .seconds(121))
            return try await next(request, context)
        case .huge:
            return bytesResponse(size: fault.size ?? FaultMode.defaultHugeSize, chunked: fault.chunked == true)
        case .gzipBomb:
            var headers = HTTPFields()
            headers[.contentType] = "application/json; charset=utf-8"
            headers[.contentEncoding] = "gzip"
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: try HTTPSupport.gzipBomb(decodedSize: fault.size ?? 64 << 30))
        case .drip, .resetMidBody, .shortBody, .chunkedCut, .corruptGzip, .truncatedGzip:
            break
        }

        // The full answer, whatever validators the client sent (and not encoded, when the fault
        // encodes it itself).
        var head = request.head
        head.headerFields[.ifNoneMatch] = nil
        head.headerFields[.ifModifiedSince] = nil
        if fault.mode == .corruptGzip || fault.mode == .truncatedGzip { head.headerFields[.acceptEncoding] = nil }
        let plain = try await next(Request(head: head, body: RequestBody(buffer: ByteBuffer())), context)
        let body = try await Self.collect(plain.body, limit: 16 * 1024 * 1024)
        var headers = plain.headers
        headers[.contentLength] = nil
        headers[.transferEncoding] = nil
        let total = body.readableBytes
        let cut = min(max(fault.bytes ?? total / 2, 0), max(total - 1, 0))
        let channel = context.channel

        switch fault.mode {
        case .drip:
            let response = dripBody(total: total, chunk: fault.chunk ?? 64, intervalMs: fault.intervalMs ?? 100) { from, count in
                body.getSlice(at: body.readerIndex + from, length: count) ?? ByteBuffer()
            }
            return Response(status: plain.status, headers: headers, body: response)
        case .resetMidBody, .shortBody:
            let reset = fault.mode == .resetMidBody
            let response = ResponseBody(contentLength: total) { writer in
                if cut > 0 { try await writer.write(body.getSlice(at: body.readerIndex, length: cut) ?? ByteBuffer()) }
                if reset { try await Self.reset(channel) }
                // Throwing makes the server close the connection with the body incomplete.
                throw StreamAborted()
            }
            return Response(status: plain.status, headers: headers, body: response)
        case .chunkedCut:
            let response = ResponseBody { writer in
                if cut > 0 { try await writer.write(body.getSlice(at: body.readerIndex, length: cut) ?? ByteBuffer()) }
                throw StreamAborted()
            }
            var cutResponse = Response(status: plain.status, headers: headers, body: response)
            cutResponse.headers[.contentLength] = nil
            return cutResponse
        case .corruptGzip:
            headers[.contentEncoding] = "gzip"
            return Response(status: plain.status, headers: headers, body: ResponseBody(byteBuffer: try HTTPSupport.corruptGzip(body)))
        case .truncatedGzip:
            let encoded = try HTTPSupport.gzip(body)
            let kept = max(encoded.readableBytes - 8 - max(fault.bytes ?? 16, 0), 10)
            headers[.contentEncoding] = "gzip"
            return Response(status: plain.status, headers: headers,
                            body: ResponseBody(byteBuffer: encoded.getSlice(at: encoded.readerIndex, length: kept) ?? ByteBuffer()))
        case .delay, .huge, .gzipBomb:
            return plain
        }
    }

    /// Resets `channel`: `SO_LINGER` with a zero timeout, then close, so the peer gets a TCP RST
    /// instead of a FIN.
    static func reset(_ channel: any Channel) async throws {
        if let provider = channel as? any SocketOptionProvider {
            try? await provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
        }
        try? await channel.close().get()
    }

    /// Reads a whole response body (at most `limit` bytes).
    static func collect(_ body: ResponseBody, limit: Int) async throws -> ByteBuffer {
        let collector = BodyCollector(limit: limit)
        try await body.write(CollectingWriter(collector: collector))
        return collector.buffer.withLock { $0 }
    }
}

extension SimulatorState {
    /// Takes the first queued fault mode matching `path`, counting it down.
    mutating func takeFaultMode(for path: String) -> FaultMode? {
        guard let i = faultModes.firstIndex(where: { path.hasPrefix($0.route) }) else { return nil }
        let mode = faultModes[i]
        faultModes[i].times -= 1
        if faultModes[i].times <= 0 { faultModes.remove(at: i) }
        return mode
    }
}

/// Collects what a `ResponseBody` writes.
private final class BodyCollector: Sendable {
    let buffer = Mutex(ByteBuffer())
    let limit: Int
    init(limit: Int) { self.limit = limit }
}

private struct CollectingWriter: ResponseBodyWriter {
    let collector: BodyCollector

    mutating func write(_ buffer: ByteBuffer) async throws {
        try collector.buffer.withLock { collected in
            guard collected.readableBytes + buffer.readableBytes <= collector.limit else { throw StreamAborted() }
            var buffer = buffer
            collected.writeBuffer(&buffer)
        }
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
