import Foundation
import FreshetSimulator
import Testing

/// Runs the built `github-openapi` with `environment` only (and PATH), at most 60 s.
func runCommand(_ arguments: [String], environment: [String: String]) async throws -> (status: Int32, stdout: String, stderr: String) {
    let executable = Bundle.main.executableURL.map { $0.deletingLastPathComponent() } ?? URL(fileURLWithPath: ".")
    let candidates = [executable, executable.deletingLastPathComponent(),
                      URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
        .map { $0.appendingPathComponent("github-openapi") }
    let path = try #require(candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) })
    let process = Process()
    process.executableURL = path
    process.arguments = arguments
    process.environment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"].merging(environment) { _, new in new }
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
    let (exits, exit) = AsyncStream<Int32>.makeStream()
    process.terminationHandler = { exit.yield($0.terminationStatus); exit.finish() }
    try process.run()
    // The pipes are read on threads of their own: a blocking read on the cooperative pool (two
    // threads here) would starve the simulator this process serves the command from.
    let stdout = readToEnd(out.fileHandleForReading), stderr = readToEnd(err.fileHandleForReading)
    let killer = Task {
        try await Task.sleep(for: .seconds(60))
        process.terminate()
    }
    var status: Int32 = -1
    for await code in exits { status = code }
    killer.cancel()
    return (status, String(decoding: await stdout.value, as: UTF8.self), String(decoding: await stderr.value, as: UTF8.self))
}

/// Reads `handle` to its end on a thread of its own.
func readToEnd(_ handle: FileHandle) -> Task<Data, Never> {
    Task {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: handle.readDataToEndOfFile()) }.start()
        }
    }
}

@Suite("github-openapi, the command")
struct CommandTests {
    @Test("user and events: one line per call with the cache's outcome; the cache is on disk in FRESHET_HOME")
    func lines() async throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("github-openapi-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        try await withSimulator { sim in
            let environment = ["FRESHET_GITHUB_URL": sim.baseURL.absoluteString, "FRESHET_HOME": home.path]
            let user = try await runCommand(["user", "octocat", "--repeat", "2"], environment: environment)
            #expect(user.status == 0, "\(user.stderr)")
            #expect(user.stdout == "login=octocat name=The Octocat cache=miss\nlogin=octocat name=The Octocat cache=hit\n")
            let again = try await runCommand(["user", "octocat"], environment: environment)
            #expect(again.stdout == "login=octocat name=The Octocat cache=hit\n", "the cache outlives the process")
            let events = try await runCommand(["events", "ReactiveX/RxSwift"], environment: environment)
            #expect(events.status == 0, "\(events.stderr)")
            #expect(events.stdout == "events=30 cache=miss\n")
        }
    }

    @Test("Errors: an unknown user exits 2; a spent rate limit names its reset time; bad input exits non-zero")
    func errors() async throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("github-openapi-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        try await withSimulator { sim in
            let environment = ["FRESHET_GITHUB_URL": sim.baseURL.absoluteString, "FRESHET_HOME": home.path]
            let missing = try await runCommand(["user", "no-such-user-x"], environment: environment)
            #expect(missing.status == 2 && missing.stderr.contains("GitHub user no-such-user-x not found."), "\(missing.stderr)")
            let reset = Int(Date().timeIntervalSince1970) + 600
            await sim.simulator.setRateLimit(resource: .core, remaining: 0, reset: reset)
            let limited = try await runCommand(["events", "apple/swift"], environment: environment)
            #expect(limited.status == 2)
            let resetText = Date(timeIntervalSince1970: TimeInterval(reset)).formatted(.iso8601)
            #expect(limited.stderr.contains("rate limit is spent") && limited.stderr.contains(resetText), "\(limited.stderr)")
            let bad = try await runCommand(["events", "not-a-repo"], environment: environment)
            #expect(bad.status != 0 && bad.stderr.contains("OWNER/REPO"))
        }
    }
}
