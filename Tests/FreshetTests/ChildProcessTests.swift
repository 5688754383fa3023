import Foundation
import FreshetTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The test helpers that run child processes, cancelled as a test's time limit cancels them: they
/// kill the child and return, and never crash the test process (Foundation's `Process` did, read
/// while its child still ran).
@Suite("Test support: cancelled waits for child processes", .timeLimit(.minutes(1)))
struct ChildProcessTests {
    @Test("A cancelled runProcess kills its child and returns")
    func cancelledRun() async throws {
        let directory = try StoreTemporaryDirectory()
        defer { directory.remove() }
        let pidFile = directory.url.appendingPathComponent("pid").path
        let task = Task {
            try await runProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", "echo $$ > \(pidFile).tmp && mv \(pidFile).tmp \(pidFile); exec sleep 30"], timeout: 60)
        }
        let started = await eventually { FileManager.default.fileExists(atPath: pidFile) }
        try #require(started, "the child wrote its pid")
        let pid = try #require(Int32(String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        task.cancel()
        _ = await task.result
        #expect(kill(pid, 0) != 0, "the child is gone")
    }

    @Test("A cancelled waitForExit kills the running child and returns nil (killed)")
    func cancelledWaitForExit() async throws {
        let child = try await startProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", "echo ready; exec sleep 30"])
        #expect(child.firstLine == "ready")
        let task = Task { await child.waitForExit(timeout: 60) }
        task.cancel()
        #expect(await task.value == nil)
        #expect(!child.isRunning)
    }

    @Test("runProcess: the exit status, both outputs and standard input; startProcess: the first line, then the rest")
    func outputs() async throws {
        let result = try await runProcess(
            URL(fileURLWithPath: "/bin/sh"), ["-c", "read line; echo \"out $line\"; echo err >&2; exit 3"], stdin: "in\n")
        #expect(result.status == 3)
        #expect(result.stdout == "out in\n")
        #expect(result.stderr == "err\n")
        try await withRunningProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", "echo first; echo second; echo oops >&2; exit 4"]) { child in
            #expect(child.firstLine == "first")
            #expect(await child.waitForExit() == 4)
            #expect(child.stdout == "second\n")
            #expect(child.stderr == "oops\n")
        }
    }
}
