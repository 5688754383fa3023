import Foundation
import Subprocess
import Synchronization
#if canImport(System)
import System
#else
import SystemPackage
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// Child processes of the tests are started with swift-subprocess (posix_spawn, with every other
// descriptor closed by close_range), never Foundation's `Process`: in Swift 6.3 on Linux,
// `Process.run()` copies 256 bytes from each entry of `/proc/self/fd`, and with the thousand
// descriptors a parallel test run holds, that copy ran off its 32 KiB buffer into an unmapped
// page and crashed the whole test process ("Bad pointer dereference", swift-corelibs-foundation
// issue 5472).

/// Runs an executable built by this package (e.g. `freshet`) and collects its output.
public struct ProcessResult: Sendable {
    /// Exit status (the signal's number when a signal ended the child).
    public var status: Int32
    /// Everything written to standard output.
    public var stdout: String
    /// Everything written to standard error.
    public var stderr: String
}

/// Runs `executable` with `arguments` and `environment` (added to a minimal base environment),
/// with standard input empty (or reading `stdin` when given), and waits at most `timeout`
/// seconds (then kills it and says so). A cancelled run kills the child.
public func runProcess(
    _ executable: URL, _ arguments: [String], environment: [String: String] = [:], timeout: Double = 60,
    stdin: String? = nil
) async throws -> ProcessResult {
    let pid = OneShot<pid_t>()
    let watchdog = Task {
        try await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
        if let pid = pid.delivered { _ = kill(pid, SIGTERM) }
    }
    defer { watchdog.cancel() }
    let result = try await Subprocess.run(
        childConfiguration(executable, arguments, environment),
        input: .string(stdin ?? ""), output: .string(limit: outputLimit), error: .string(limit: outputLimit)
    ) { execution in
        pid.deliver(execution.processIdentifier.value)
    }
    let ended = ChildExit(result.terminationStatus)
    return ProcessResult(
        status: ended.status, stdout: result.standardOutput,
        stderr: result.standardError + (ended.signalled ? "\n[test: ended by signal]" : ""))
}

/// A long-running child process (a server) started by a test: its first line of standard output
/// is read at start, the rest of its output is collected as it comes.
public final class RunningProcess: Sendable {
    /// The child's process id.
    public let pid: Int32
    /// The first line the child wrote on standard output (without the newline).
    public let firstLine: String
    private let child: Child

    fileprivate init(pid: Int32, firstLine: String, child: Child) {
        self.pid = pid
        self.firstLine = firstLine
        self.child = child
    }

    /// Standard output after the first line, so far.
    public var stdout: String { child.output.withLock { String(decoding: $0.stdout, as: UTF8.self) } }
    /// Standard error so far.
    public var stderr: String { child.output.withLock { String(decoding: $0.stderr, as: UTF8.self) } }
    /// The exit status once the child has ended.
    public var exitStatus: Int32? { child.exit.delivered?.status }
    /// Whether the child is still running.
    public var isRunning: Bool { exitStatus == nil }

    /// Sends `signal` (default SIGTERM) to the child.
    public func signal(_ signal: Int32 = SIGTERM) {
        guard isRunning else { return }
        _ = kill(pid, signal)
    }

    /// Waits until the child has ended, at most `timeout` seconds; then kills it (SIGKILL) and
    /// returns `nil`, so a hanging child fails the test instead of hanging it. A cancelled wait
    /// (the test's time limit ran out) kills the child at once and still waits for its end.
    @discardableResult
    public func waitForExit(timeout: Double = 30) async -> Int32? {
        let pid = pid
        let watchdog = Task {
            try await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
            _ = kill(pid, SIGKILL)
        }
        let ended = await withTaskCancellationHandler { await child.exit.value() } onCancel: { _ = kill(pid, SIGKILL) }
        watchdog.cancel()
        return ended.signalled && ended.status == SIGKILL ? nil : ended.status
    }
}

/// Starts `executable` (standard input empty, environment added to a minimal base), waits for
/// its first line on standard output (at most `timeout` seconds), and returns the running child.
/// - Throws: ``ProcessStartFailure`` when the child ends or stays silent before its first line;
///   the child is killed then.
public func startProcess(
    _ executable: URL, _ arguments: [String], environment: [String: String] = [:], timeout: Double = 30
) async throws -> RunningProcess {
    var executable = executable
    var arguments = arguments
    #if os(Linux)
    // Killed with its parent: if the test process dies (a timeout ends it), the child dies too
    // instead of living on as an orphan. `setpriv` execs the child, so its pid stays the same.
    let setpriv = "/usr/bin/setpriv"
    if FileManager.default.isExecutableFile(atPath: setpriv) {
        arguments = ["--pdeathsig", "KILL", "--", executable.path] + arguments
        executable = URL(fileURLWithPath: setpriv)
    }
    #endif
    let child = Child()
    let firstLine = OneShot<Result<String, ProcessStartFailure.Reason>>()
    let pid = OneShot<pid_t>()
    Task { [executable, arguments] in
        do {
            let result = try await Subprocess.run(
                childConfiguration(executable, arguments, environment), input: .none, output: .sequence, error: .sequence
            ) { execution in
                pid.deliver(execution.processIdentifier.value)
                async let errors: Void = {
                    for try await chunk in execution.standardError {
                        let bytes = chunk.withUnsafeBytes { Data($0) }
                        child.output.withLock { $0.stderr.append(bytes) }
                    }
                }()
                var pending = Data()
                for try await chunk in execution.standardOutput {
                    let bytes = chunk.withUnsafeBytes { Data($0) }
                    if firstLine.delivered != nil {
                        child.output.withLock { $0.stdout.append(bytes) }
                        continue
                    }
                    pending.append(bytes)
                    if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                        firstLine.deliver(.success(String(decoding: pending[..<newline], as: UTF8.self)))
                        let rest = pending[pending.index(after: newline)...]
                        child.output.withLock { $0.stdout.append(contentsOf: rest) }
                    }
                }
                try await errors
            }
            firstLine.deliver(.failure(.endedEarly))
            child.exit.deliver(ChildExit(result.terminationStatus))
        } catch {
            child.launchError.withLock { $0 = String(describing: error) }
            firstLine.deliver(.failure(.failedToLaunch))
            child.exit.deliver(ChildExit(status: -1, signalled: false))
        }
    }

    let watchdog = Task {
        try await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
        firstLine.deliver(.failure(.silent))
    }
    let line = await firstLine.value()
    watchdog.cancel()
    switch line {
    case .success(let text):
        return RunningProcess(pid: await pid.value(), firstLine: text, child: child)
    case .failure(let reason):
        if pid.delivered == nil, let launchError = child.launchError.withLock({ $0 }) {
            throw ProcessStartFailure(reason: reason, status: nil, stderr: launchError)
        }
        if let pid = pid.delivered { _ = kill(pid, SIGKILL) }
        let ended = await child.exit.value()
        let stderr = child.output.withLock { String(decoding: $0.stderr, as: UTF8.self) }
        throw ProcessStartFailure(reason: reason, status: ended.signalled ? nil : ended.status, stderr: stderr)
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

/// A value delivered once (by a reader, the end of a run or a watchdog, whichever comes first)
/// and awaited by any number of tasks. Waiting ignores task cancellation: a cancelled test still
/// waits for what it started, each wait bounded by its caller's watchdog.
public final class OneShot<Value: Sendable>: Sendable {
    private let state = Mutex<(value: Value?, waiters: [CheckedContinuation<Value, Never>])>((nil, []))

    /// Nothing delivered yet.
    public init() {}

    /// Delivers `value`, unless a value came first.
    public func deliver(_ value: Value) {
        let waiters = state.withLock { state -> [CheckedContinuation<Value, Never>] in
            guard case .none = state.value else { return [] }
            state.value = value
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: value) }
    }

    /// The value, once delivered.
    public var delivered: Value? { state.withLock { $0.value } }

    /// Waits for the value.
    public func value() async -> Value {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Value? in
                if let value = state.value { return value }
                state.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// How a child process ended.
public struct ChildExit: Sendable {
    /// The exit status, or the signal's number when `signalled`.
    public var status: Int32
    /// Whether a signal ended the child.
    public var signalled: Bool

    /// An exit with `status`, or by the signal `status` when `signalled`.
    public init(status: Int32, signalled: Bool) {
        self.status = status
        self.signalled = signalled
    }

    /// How a Subprocess run ended.
    public init(_ termination: TerminationStatus) {
        switch termination {
        case .exited(let code): self.init(status: code, signalled: false)
        case .signaled(let signal): self.init(status: signal, signalled: true)
        }
    }
}

/// Runs `executable` with its output discarded, for a test that ends it at a moment of its
/// choosing: `pid` is known once the child runs, `exit` once it has ended. A cancelled run kills
/// the child.
public func spawnQuietly(
    _ executable: URL, _ arguments: [String], environment: [String: String]
) async -> (pid: pid_t, exit: OneShot<ChildExit>)? {
    let pid = OneShot<pid_t?>()
    let exit = OneShot<ChildExit>()
    Task {
        do {
            let result = try await Subprocess.run(
                childConfiguration(executable, arguments, environment), input: .none, output: .discarded, error: .discarded
            ) { execution in
                pid.deliver(execution.processIdentifier.value)
            }
            exit.deliver(ChildExit(result.terminationStatus))
        } catch {
            pid.deliver(nil)
            exit.deliver(ChildExit(status: -1, signalled: false))
        }
    }
    guard let started = await pid.value() else { return nil }
    return (started, exit)
}

/// The environment of a child process: a minimal base (PATH, NO_COLOR, a temporary HOME), the
/// sanitizer options of this process when set (so `scripts/sanitize` reaches children), then `extra`.
func childEnvironment(_ extra: [String: String]) -> [String: String] {
    let parent = ProcessInfo.processInfo.environment
    var env = ["PATH": parent["PATH"] ?? "/usr/bin:/bin", "NO_COLOR": "1",
               "HOME": FileManager.default.temporaryDirectory.path]
    for name in ["TSAN_OPTIONS", "ASAN_OPTIONS"] { env[name] = parent[name] }
    env.merge(extra) { _, new in new }
    return env
}

/// `executable` run with `arguments` in ``childEnvironment(_:)`` plus `environment`, as
/// Subprocess takes it.
private func childConfiguration(_ executable: URL, _ arguments: [String], _ environment: [String: String]) -> Configuration {
    let variables = childEnvironment(environment).map { (Environment.Key(stringLiteral: $0.key), $0.value) }
    return Configuration(executable: .path(FilePath(executable.path)), arguments: Arguments(arguments),
                         environment: .custom(Dictionary(uniqueKeysWithValues: variables)))
}

/// The most a child may write on each of standard output and standard error: 64 MiB.
private let outputLimit = 64 << 20

/// What the readers of a ``RunningProcess`` record, and how it ended.
private final class Child: Sendable {
    let output = Mutex<(stdout: Data, stderr: Data)>((Data(), Data()))
    let launchError = Mutex<String?>(nil)
    let exit = OneShot<ChildExit>()
}
