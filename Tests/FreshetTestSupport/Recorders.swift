import Foundation
import HTTPTypes
import OpenAPIRuntime
import Logging
import Synchronization

/// Records the waits a middleware asks for and returns at once: no real sleeps in tests.
public final class SleepRecorder: Sendable {
    private let recorded = Mutex<[Duration]>([])
    private let onSleep: @Sendable (Int) async throws -> Void

    /// `onSleep` runs on each wait with its 1-based number (e.g. to change the server, or to stop).
    public init(onSleep: @escaping @Sendable (Int) async throws -> Void = { _ in }) {
        self.onSleep = onSleep
    }

    /// The waits asked for so far.
    public var sleeps: [Duration] { recorded.withLock { $0 } }

    /// The sleep function to inject.
    public var sleep: @Sendable (Duration) async throws -> Void {
        { [self] duration in
            let count = recorded.withLock { list -> Int in
                list.append(duration)
                return list.count
            }
            try Task.checkCancellation()
            try await onSleep(count)
        }
    }
}

/// A swift-log handler that keeps every line (message and metadata) in memory.
public final class CapturedLog: Sendable {
    private let lines = Mutex<[String]>([])

    /// Creates an empty capture.
    public init() {}

    /// Everything logged so far, one string per line, metadata included.
    public var text: String { lines.withLock { $0.joined(separator: "\n") } }

    /// A logger writing into this capture at `trace` level.
    public func logger(label: String = "test") -> Logger {
        var logger = Logger(label: label) { _ in Handler(capture: self) }
        logger.logLevel = .trace
        return logger
    }

    fileprivate func append(_ line: String) {
        lines.withLock { $0.append(line) }
    }

    struct Handler: LogHandler {
        let capture: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { _, new in new }
            capture.append("\(event.level) \(event.message) \(all.map { "\($0)=\($1)" }.sorted().joined(separator: " "))")
        }
    }
}

/// A middleware that holds every request until ``open()`` is called, so a test can act while
/// a request is in flight without depending on how long anything takes. A held request that is
/// cancelled ends at once with `CancellationError` and never reaches the server.
///
/// Made with `holdsAnswers`, it sends the request first and holds its answer instead: the
/// server has answered, and the middlewares outside the gate have not seen it yet.
public final class GateMiddleware: ClientMiddleware, Sendable {
    private struct State {
        var isOpen = false
        var arrivals = 0
        var held: [Int: CheckedContinuation<Void, any Error>] = [:]
    }
    private let state = Mutex(State())
    private let holdsAnswers: Bool

    /// Creates a closed gate that holds requests, or (`holdsAnswers`) their answers.
    public init(holdsAnswers: Bool = false) {
        self.holdsAnswers = holdsAnswers
    }

    /// The number of requests that have reached the gate so far.
    public var arrivals: Int { state.withLock { $0.arrivals } }

    /// Lets every held request, and every later one, through.
    public func open() {
        let held = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.isOpen = true
            defer { state.held = [:] }
            return Array(state.held.values)
        }
        for request in held { request.resume() }
    }

    /// Holds the request (or its answer) until the gate opens, then passes it on.
    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard holdsAnswers else {
            try await hold()
            return try await next(request, body, baseURL)
        }
        let answer = try await next(request, body, baseURL)
        try await hold()
        return answer
    }

    private func hold() async throws {
        let id = state.withLock { state -> Int in
            state.arrivals += 1
            return state.arrivals
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let isOpen = state.withLock { state -> Bool in
                    if state.isOpen { return true }
                    state.held[id] = continuation
                    return false
                }
                if isOpen { continuation.resume() }
                if Task.isCancelled { release(id) }
            }
        } onCancel: {
            release(id)
        }
    }

    private func release(_ id: Int) {
        let continuation = state.withLock { $0.held.removeValue(forKey: id) }
        continuation?.resume(throwing: CancellationError())
    }
}
