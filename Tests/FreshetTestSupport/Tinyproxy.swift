import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A real forward proxy for the tests: tinyproxy (Debian's `tinyproxy` package), started in the
/// foreground on 127.0.0.1 with a generated configuration and its log in a temporary file, which
/// the tests read to see what the proxy was asked.
///
/// tinyproxy cannot take port 0, so a port the system just handed out is tried, and another
/// when tinyproxy cannot bind it (at most 10 tries). `.ci/run` installs tinyproxy; without it,
/// ``start(credentials:connectPorts:)`` fails saying so.
public final class Tinyproxy: Sendable {
    /// The port it listens on (127.0.0.1).
    public let port: Int
    /// The credentials it requires (`BasicAuth`), if any.
    public let credentials: (user: String, password: String)?
    /// Its log file.
    public let logPath: String
    private let directory: URL
    private let pid: pid_t
    private let exit: OneShot<ChildExit>

    private init(port: Int, credentials: (user: String, password: String)?, directory: URL, pid: pid_t,
                 exit: OneShot<ChildExit>) {
        self.port = port
        self.credentials = credentials
        self.directory = directory
        self.logPath = directory.appendingPathComponent("tinyproxy.log").path
        self.pid = pid
        self.exit = exit
    }

    /// `http://127.0.0.1:PORT`, without credentials.
    public var url: String { "http://127.0.0.1:\(port)" }

    /// `http://USER:PASSWORD@127.0.0.1:PORT` with ``credentials`` (or `password` in their place).
    public func url(password: String? = nil) -> String {
        guard let credentials else { return url }
        return "http://\(credentials.user):\(password ?? credentials.password)@127.0.0.1:\(port)"
    }

    /// The tinyproxy executable, if installed.
    public static var executable: String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for directory in path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/sbin", "/usr/local/bin"] {
            let candidate = (directory as NSString).appendingPathComponent("tinyproxy")
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Why a tinyproxy could not be started.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        public var description: String
    }

    /// Starts tinyproxy on 127.0.0.1, allowing clients from 127.0.0.1 only, requiring `credentials`
    /// when given, and allowing `CONNECT` to `connectPorts` only (to every port when empty).
    public static func start(credentials: (user: String, password: String)? = nil,
                             connectPorts: [Int] = []) async throws -> Tinyproxy {
        guard let executable else {
            throw Failure(description: "tinyproxy is not installed (apt-get install tinyproxy; .ci/run installs it)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("freshet-tinyproxy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let logPath = directory.appendingPathComponent("tinyproxy.log").path
        var lastProblem = ""
        for _ in 0..<10 {
            let (fd, port) = try loopbackSocket()
            close(fd)
            var lines = [
                "Port \(port)", "Listen 127.0.0.1", "Timeout 30", "LogFile \"\(logPath)\"", "LogLevel Info",
                "MaxClients 64", "Allow 127.0.0.1", "DisableViaHeader Yes",
            ]
            lines += connectPorts.map { "ConnectPort \($0)" }
            if let credentials { lines.append("BasicAuth \(credentials.user) \(credentials.password)") }
            let configuration = directory.appendingPathComponent("tinyproxy.conf")
            try (lines.joined(separator: "\n") + "\n").write(to: configuration, atomically: true, encoding: .utf8)
            try? FileManager.default.removeItem(atPath: logPath)
            var arguments = ["-d", "-c", configuration.path]
            var launched = URL(fileURLWithPath: executable)
            #if os(Linux)
            // Killed with the test process if it dies, instead of living on as an orphan.
            let setpriv = "/usr/bin/setpriv"
            if FileManager.default.isExecutableFile(atPath: setpriv) {
                arguments = ["--pdeathsig", "KILL", "--", executable] + arguments
                launched = URL(fileURLWithPath: setpriv)
            }
            #endif
            guard let (pid, exit) = await spawnQuietly(launched, arguments, environment: [:]) else {
                throw Failure(description: "tinyproxy (\(executable)) could not be launched")
            }
            let proxy = Tinyproxy(port: port, credentials: credentials, directory: directory, pid: pid, exit: exit)
            // Ready once it logs that it accepts connections; exit status 71 (EX_OSERR): it could not bind.
            let ready = await eventually(within: 15) {
                exit.delivered != nil || proxy.log.contains("Accepting connections")
            }
            if let ended = exit.delivered {
                lastProblem = "tinyproxy exited with status \(ended.status) on port \(port): \(proxy.log.suffix(500))"
                if ended.status == 71 { continue }
                throw Failure(description: lastProblem)
            }
            guard ready else {
                await proxy.stop()
                throw Failure(description: "tinyproxy did not start accepting connections within 15 s: \(proxy.log.suffix(500))")
            }
            return proxy
        }
        throw Failure(description: "tinyproxy could not bind a port in 10 tries; last: \(lastProblem)")
    }

    /// Everything it has logged so far.
    public var log: String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    /// The requests it received, as it logs them: `GET http://127.0.0.1:PORT/path HTTP/1.1`,
    /// `CONNECT 127.0.0.1:PORT HTTP/1.1`.
    public var requests: [String] {
        log.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "]: Request (file descriptor ") else { return nil }
            let rest = line[range.upperBound...]
            guard let colon = rest.range(of: "): ") else { return nil }
            return String(rest[colon.upperBound...])
        }
    }

    /// Stops it (SIGTERM, then SIGKILL after 10 s) and removes its files.
    public func stop() async {
        if exit.delivered == nil {
            kill(pid, SIGTERM)
            let ended = await eventually(within: 10) { [exit] in exit.delivered != nil }
            if !ended {
                kill(pid, SIGKILL)
                _ = await eventually(within: 10) { [exit] in exit.delivered != nil }
            }
        }
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Runs `body` with a running ``Tinyproxy``, stopped afterwards however `body` ends.
public func withTinyproxy<T: Sendable>(
    credentials: (user: String, password: String)? = nil, connectPorts: [Int] = [],
    _ body: (Tinyproxy) async throws -> T
) async throws -> T {
    let proxy = try await Tinyproxy.start(credentials: credentials, connectPorts: connectPorts)
    do {
        let value = try await body(proxy)
        await proxy.stop()
        return value
    } catch {
        await proxy.stop()
        throw error
    }
}
