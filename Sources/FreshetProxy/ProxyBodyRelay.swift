import AsyncAlgorithms
import OpenAPIRuntime

/// Reads a client's request body in a task the proxy owns and hands it on as an `HTTPBody` the
/// transport sends to the origin.
///
/// Bodies stream chunk by chunk with back pressure (one chunk in flight), iterable once — except
/// a small body of known length (at most ``replayableLimit``) of an idempotent request, which is
/// read whole first and may be sent again: when a kept-alive connection to the origin turns out to
/// have been closed before the origin answered, the transport repeats such a request on a new
/// connection instead of failing it (as nginx does with the request bodies it buffers).
///
/// The server's body stream has exactly one reader, whose end the proxy controls: after the
/// answer, ``finish()`` stops the reading (when the origin answered without reading everything)
/// and waits for it, so the server may go on with the connection.
final class ProxyBodyRelay: Sendable {
    /// The largest body read whole so that the request can be sent again: 64 KiB.
    static let replayableLimit = 64 * 1024

    /// The body to forward.
    let body: HTTPBody
    /// Cancels the reading task and waits for it.
    private let stopReading: @Sendable () async -> Void

    /// Starts reading `source`.
    /// - Parameters:
    ///   - source: the body of the client's request, as the server receives it.
    ///   - length: the `Content-Length` of the request, if it has one.
    ///   - replayable: whether the request may be sent twice (an idempotent method); its body is
    ///     then read whole when `length` is at most ``replayableLimit``.
    init<Source: AsyncSequence & Sendable>(_ source: Source, length: Int?, replayable: Bool = false)
    where Source.Element == ArraySlice<UInt8> {
        if replayable, let length, length <= Self.replayableLimit {
            let whole = Task<[UInt8], any Error> {
                var bytes: [UInt8] = []
                bytes.reserveCapacity(length)
                for try await chunk in source {
                    try Task.checkCancellation()
                    bytes += chunk
                }
                return bytes
            }
            stopReading = { whole.cancel(); _ = try? await whole.value }
            body = HTTPBody(WholeBody(bytes: whole), length: .known(Int64(length)), iterationBehavior: .multiple)
            return
        }
        let channel = AsyncThrowingChannel<ArraySlice<UInt8>, any Error>()
        let pump = Task {
            do {
                for try await chunk in source {
                    try Task.checkCancellation()
                    await channel.send(chunk)
                }
                channel.finish()
            } catch {
                channel.fail(error)
            }
        }
        stopReading = { pump.cancel(); await pump.value }
        body = HTTPBody(channel, length: length.map { .known(Int64($0)) } ?? .unknown, iterationBehavior: .single)
    }

    /// Stops reading the client's body if that is still going on, and waits until it has stopped.
    func finish() async {
        await stopReading()
    }
}

/// A body read whole before it is sent: every iteration yields it as one chunk, once the read ends.
struct WholeBody: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>
    let bytes: Task<[UInt8], any Error>

    struct AsyncIterator: AsyncIteratorProtocol {
        var bytes: Task<[UInt8], any Error>?

        mutating func next() async throws -> ArraySlice<UInt8>? {
            guard let pending = bytes else { return nil }
            bytes = nil
            let whole = try await pending.value
            return whole.isEmpty ? nil : whole[...]
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(bytes: bytes) }
}
