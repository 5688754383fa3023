import Foundation
import OpenAPIRuntime
import Synchronization

/// What transports need to know about the exchange the current task is making.
public enum TransferContext {
    /// `true` while an upload or a download is sent (``APIClient/upload(_:from:)``,
    /// ``APIClient/download(_:to:)``). A transport that bounds a whole exchange, body included,
    /// does not bound a transfer's: sending or receiving gigabytes takes as long as it takes, and
    /// only the timeouts between reads apply.
    @TaskLocal public static var isTransfer = false

    /// `true` while an event stream's connection is open (``APIClient/events(_:options:)``): the
    /// response head is awaited as for any request, but the body is bounded neither by the
    /// exchange's deadline nor by the transport's read timeout — the stream's own idle timeout
    /// ends a connection that has gone silent. (A transport given an AsyncHTTPClient of the
    /// caller's keeps that client's read timeout.)
    @TaskLocal public static var isStream = false
}

/// How far a transfer has got: bytes moved so far, and the total when it is known.
public struct TransferProgress: Sendable, Equatable {
    /// Bytes sent (an upload) or on disk (a download, counting a resumed partial file).
    public var completed: Int64
    /// The total, when known (`Content-Length`, `Content-Range`, a file's size).
    public var total: Int64?

    /// Creates a progress value.
    public init(completed: Int64, total: Int64?) {
        self.completed = completed
        self.total = total
    }

    /// `completed / total` between 0 and 1, when the total is known.
    public var fractionCompleted: Double? {
        guard let total, total > 0 else { return total == 0 ? 1 : nil }
        return min(1, Double(completed) / Double(total))
    }
}

/// An upload or download under way: its ``progress`` as an `AsyncSequence`, and its result.
///
/// The work starts at once and runs whether or not anyone reads ``progress``. Awaiting
/// ``value`` from a task that is then cancelled cancels the transfer, as ``cancel()`` does.
public struct Transfer<Value: Sendable>: Sendable {
    /// Progress updates for one reader: when it is slow, only the newest value waits for it
    /// (older ones are dropped). The sequence ends when the transfer does.
    public let progress: AsyncStream<TransferProgress>
    private let task: Task<Value, any Error>

    init(progress: AsyncStream<TransferProgress>, task: Task<Value, any Error>) {
        self.progress = progress
        self.task = task
    }

    /// Starts `work`, handing it the reporter its progress goes to.
    static func start(_ work: @escaping @Sendable (ProgressReporter) async throws(APIError) -> Value) -> Transfer {
        let (stream, continuation) = AsyncStream.makeStream(of: TransferProgress.self, bufferingPolicy: .bufferingNewest(1))
        let reporter = ProgressReporter(continuation)
        let task = Task<Value, any Error> {
            defer { continuation.finish() }
            return try await TransferContext.$isTransfer.withValue(true) { try await work(reporter) }
        }
        return Transfer(progress: stream, task: task)
    }

    /// The result, once the transfer is over.
    /// - Throws: ``APIError`` (``APIError/cancelled`` after ``cancel()``).
    public var value: Value {
        get async throws(APIError) {
            do {
                return try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
            } catch let error as APIError {
                throw error
            } catch {
                throw APIError.wrapping(error, url: nil)
            }
        }
    }

    /// Cancels the transfer (a download keeps its partial file, to resume later).
    public func cancel() { task.cancel() }
}

/// Where a transfer's byte counts go: the ``Transfer/progress`` stream.
final class ProgressReporter: Sendable {
    private let continuation: AsyncStream<TransferProgress>.Continuation
    private let state = Mutex(TransferProgress(completed: 0, total: nil))

    init(_ continuation: AsyncStream<TransferProgress>.Continuation) {
        self.continuation = continuation
    }

    /// Sets the progress outright (a new attempt, a resumed download's starting point).
    func reset(completed: Int64, total: Int64?) {
        let value = state.withLock { state in
            state = TransferProgress(completed: completed, total: total)
            return state
        }
        continuation.yield(value)
    }

    /// Adds `count` bytes.
    func add(_ count: Int) {
        let value = state.withLock { state in
            state.completed += Int64(count)
            return state
        }
        continuation.yield(value)
    }

    /// `body`, counting each chunk as the transport pulls it; every new pass starts from zero.
    func counting(_ body: HTTPBody, total: Int64?) -> HTTPBody {
        body.observed(onPass: { [self] in reset(completed: 0, total: total) }, onChunk: { [self] in add($0) })
    }
}
