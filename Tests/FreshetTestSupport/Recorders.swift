import Foundation
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
