import AsyncAlgorithms
import OpenAPIRuntime
import Synchronization

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
/// answer, ``finish()`` stops handing the body on (when the origin answered without reading
/// everything) and waits until the reader has read the body to its end, so the server may go on
/// with the connection.
///
/// The reading task is never cancelled. The server's body stream is its connection's inbound
/// `NIOAsyncChannel` stream: a read from it in a cancelled task ends that stream for good, the
/// request parts already received after it (the client's next request on the kept-alive
/// connection) are dropped, and the server closes the connection once the answer is written. A
/// client that had sent its next request saw the connection drop without an answer (the
/// conformance suite's "fetch failed" after a `POST` the origin answered before reading its
/// body). Reading the rest of the body instead is what the server does itself when a handler
/// leaves it unread.
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
                for try await chunk in source { bytes += chunk }
                return bytes
            }
            // Not cancelled (see above): the body is small and read to its end anyway.
            stopReading = { _ = try? await whole.value }
            body = HTTPBody(WholeBody(bytes: whole), length: .known(Int64(length)), iterationBehavior: .multiple)
            return
        }
        let channel = AsyncThrowingChannel<ArraySlice<UInt8>, any Error>()
        let stopped = Atomic<Bool>(false)
        let pump = Task {
            do {
                for try await chunk in source {
                    // After the answer nobody takes the body: the rest is read and dropped.
                    if stopped.load(ordering: .acquiring) { continue }
                    await channel.send(chunk)
                }
                channel.finish()
            } catch {
                channel.fail(error)
            }
        }
        stopReading = {
            stopped.store(true, ordering: .releasing)
            // Ends the transport's side, and resumes a `send` that nobody will take.
            channel.finish()
            await pump.value
        }
        body = HTTPBody(channel, length: length.map { .known(Int64($0)) } ?? .unknown, iterationBehavior: .single)
    }

    /// Stops handing the client's body on, and waits until it has been read to its end (or the
    /// connection failed).
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
