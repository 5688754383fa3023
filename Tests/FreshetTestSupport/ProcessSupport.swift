import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A long-running child process (a server) started by a test: its first line of standard output
/// is read at start, the rest of its output is collected as it comes.
///
/// Pipes are read on threads of their own, never on the cooperative pool: on a 2-core machine a
/// blocking read there would starve the in-process simulator the child talks to.
public final class RunningProcess: Sendable {
    /// The child's process id.
    public let pid: Int32
    /// The first line the child wrote on standard output (without the newline).
    public let firstLine: String
    private let process: ProcessBox
    private let state: ChildState
    private let exits: AsyncStream<Int32>

    fileprivate init(pid: Int32, firstLine: String, process: ProcessBox, state: ChildState, exits: AsyncStream<Int32>) {
        self.pid = pid
        self.firstLine = firstLine
        self.process = process
        self.state = state
        self.exits = exits
    }

    /// Standard output after the first line, so far.
    public var stdout: String { state.output.withLock { String(decoding: $0.stdout, as: UTF8.self) } }
    /// Standard error so far.
    public var stderr: String { state.output.withLock { String(decoding: $0.stderr, as: UTF8.self) } }
    /// The exit status once the child has ended.
    public var exitStatus: Int32? { state.exit.withLock { $0 } }
    /// Whether the child is still running.
    public var isRunning: Bool { exitStatus == nil }

    /// Sends `signal` (default SIGTERM) to the child.
    public func signal(_ signal: Int32 = SIGTERM) {
        guard isRunning else { return }
        _ = kill(pid, signal)
    }

    /// Waits until the child has ended, at most `timeout` seconds; then kills it (SIGKILL) and
    /// returns `nil`, so a hanging child fails the test instead of hanging it.
    @discardableResult
    public func waitForExit(timeout: Double = 30) async -> Int32? {
        let box = process
        let watchdog = Task {
            try await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
            _ = kill(box.process.processIdentifier, SIGKILL)
        }
        var status: Int32?
        for await code in exits { status = code }
        watchdog.cancel()
        let killed = box.process.terminationReason == .uncaughtSignal && box.process.terminationStatus == SIGKILL
        return killed ? nil : status ?? exitStatus
    }
}

/// Starts `executable` (standard input closed, environment added to a minimal base), waits for
/// its first line on standard output (at most `timeout` seconds), and returns the running child.
/// - Throws: ``ProcessStartFailure`` when the child ends or stays silent before its first line;
///   the child is killed then.
public func startProcess(
    _ executable: URL, _ arguments: [String], environment: [String: String] = [:], timeout: Double = 30
) async throws -> RunningProcess {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    #if os(Linux)
    // Killed with its parent: if the test process dies (a timeout ends it), the child dies too
    // instead of living on as an orphan. `setpriv` execs the child, so its pid stays the same.
    let setpriv = "/usr/bin/setpriv"
    if FileManager.default.isExecutableFile(atPath: setpriv) {
        process.executableURL = URL(fileURLWithPath: setpriv)
        process.arguments = ["--pdeathsig", "KILL", "--", executable.path] + arguments
    }
    #endif
    process.environment = childEnvironment(environment)
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
    let state = ChildState()
    let (exits, exitContinuation) = AsyncStream<Int32>.makeStream(bufferingPolicy: .unbounded)
    let exited = DispatchSemaphore(value: 0)
    process.terminationHandler = { finished in
        state.exit.withLock { $0 = finished.terminationStatus }
        exitContinuation.yield(finished.terminationStatus)
        exitContinuation.finish()
        exited.signal()
    }
    let box = ProcessBox(process)
    let firstLine = FirstLine()

    // This thread launches the child and reads its stdout. On Linux it is the child's parent
    // thread, whose end sends the parent-death signal, so it lasts until the child has exited.
    let stdoutReader = Thread {
        do {
            try box.process.run()
        } catch {
            state.launchError.withLock { $0 = String(describing: error) }
            firstLine.deliver(.failure(.failedToLaunch))
            return
        }
        let handle = out.fileHandleForReading
        var pending = Data()
        var lineSeen = false
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            if lineSeen {
                state.output.withLock { $0.stdout.append(chunk) }
                continue
            }
            pending.append(chunk)
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                lineSeen = true
                firstLine.deliver(.success(String(decoding: pending[..<newline], as: UTF8.self)))
                let rest = pending[pending.index(after: newline)...]
                state.output.withLock { $0.stdout.append(contentsOf: rest) }
            }
        }
        if !lineSeen { firstLine.deliver(.failure(.endedEarly)) }
        exited.wait()
    }
    stdoutReader.start()
    let stderrReader = Thread {
        let handle = err.fileHandleForReading
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            state.output.withLock { $0.stderr.append(chunk) }
        }
    }
    stderrReader.start()

    let watchdog = Task {
        try await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
        firstLine.deliver(.failure(.silent))
    }
    let line = await firstLine.value()
    watchdog.cancel()
    switch line {
    case .success(let text):
        return RunningProcess(pid: process.processIdentifier, firstLine: text, process: box, state: state, exits: exits)
    case .failure(let reason):
        if let launchError = state.launchError.withLock({ $0 }) {
            throw ProcessStartFailure(reason: reason, status: nil, stderr: launchError)
        }
        _ = kill(process.processIdentifier, SIGKILL)
        for await _ in exits {}
        let stderr = state.output.withLock { String(decoding: $0.stderr, as: UTF8.self) }
        throw ProcessStartFailure(reason: reason, status: state.exit.withLock { $0 }, stderr: stderr)
    }
}

/// Starts a child with ``startProcess(_:_:environment:timeout:)``, runs `body`, and makes sure the
/// child is gone afterwards (SIGKILL if `body` left it running).
public func withRunningProcess<T: Sendable>(
    _ executable: URL, _ arguments: [String], environment: [String: String] = [:], timeout: Double = 30,
    _ body: (RunningProcess) async throws -> T
) async throws -> T {
    let child = try await startProcess(executable, arguments, environment: environment, timeout: timeout)
    do {
        let value = try await body(child)
        if child.isRunning {
            child.signal(SIGKILL)
            await child.waitForExit(timeout: 10)
        }
        return value
    } catch {
        child.signal(SIGKILL)
        await child.waitForExit(timeout: 10)
        throw error
    }
}

/// A child process ended, or said nothing, before its first line of output.
public struct ProcessStartFailure: Error, CustomStringConvertible {
    /// Why the start failed.
    public enum Reason: Error, Sendable { case failedToLaunch, endedEarly, silent }
    /// Why the start failed.
    public var reason: Reason
    /// The exit status, when the child ended by itself.
    public var status: Int32?
    /// What the child wrote on standard error.
    public var stderr: String

    /// Says what happened, with the child's standard error.
    public var description: String {
        let what = switch reason {
        case .failedToLaunch: "could not be launched"
        case .silent: "printed no line in time"
        case .endedEarly: "ended before its first line (status \(status.map(String.init) ?? "?"))"
        }
        return "the child process \(what): \(stderr.prefix(2000))"
    }
}

/// A one-shot result, delivered by a reader thread or a watchdog, whichever comes first.
private final class FirstLine: Sendable {
    private let state = Mutex<(result: Result<String, ProcessStartFailure.Reason>?, waiter: CheckedContinuation<Result<String, ProcessStartFailure.Reason>, Never>?)>((nil, nil))

    func deliver(_ result: Result<String, ProcessStartFailure.Reason>) {
        let waiter = state.withLock { state -> CheckedContinuation<Result<String, ProcessStartFailure.Reason>, Never>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: result)
    }

    func value() async -> Result<String, ProcessStartFailure.Reason> {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Result<String, ProcessStartFailure.Reason>? in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// What the reader threads and the termination handler record.
private final class ChildState: Sendable {
    let output = Mutex<(stdout: Data, stderr: Data)>((Data(), Data()))
    let exit = Mutex<Int32?>(nil)
    let launchError = Mutex<String?>(nil)
}

/// Lets threads and tasks reach the `Process` (which is not `Sendable`).
private final class ProcessBox: @unchecked Sendable {
    let process: Process
    init(_ process: Process) { self.process = process }
}
