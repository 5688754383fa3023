// freshet-sim: serves the simulated GitHub, Hacker News and Kakao APIs on loopback.
//
//   freshet-sim [--host 127.0.0.1] [--port 0] [--seed 42] [--no-rate-limits] [--kakao-key K]
//
// Prints exactly one line, `listening on http://HOST:PORT`, then serves until SIGINT or
// SIGTERM, after which it stops promptly (open responses are aborted) and exits 0.

import ArgumentParser
import Dispatch
import Foundation
import FreshetSimulator

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

struct FreshetSim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "freshet-sim",
        abstract: "Simulate the GitHub, Hacker News and Kakao blog search APIs on loopback."
    )

    @Option(help: "Loopback address to bind (127.0.0.1, ::1 or localhost).")
    var host = "127.0.0.1"

    @Option(help: "Port to bind; 0 picks a free one (printed on start).")
    var port = 0

    @Option(help: "Seed for all generated data.")
    var seed: UInt64 = 42

    @Flag(name: .customLong("no-rate-limits"), help: "Never decrement or exhaust GitHub rate limits.")
    var noRateLimits = false

    @Option(name: .customLong("kakao-key"), help: "The only Kakao REST API key accepted (Authorization: KakaoAK <key>).")
    var kakaoKey = "sim-kakao-key"

    @Option(name: .customLong("poll-interval"), help: "The X-Poll-Interval (seconds) sent with repository events.")
    var pollInterval = 60

    @Option(name: .customLong("repo"), help: "A repository (owner/name) to guarantee; repeatable. Defaults to well-known Swift repositories.")
    var repos: [String] = []

    func validate() throws {
        guard ["127.0.0.1", "::1", "localhost"].contains(host.lowercased()) else {
            throw ValidationError("--host must be a loopback address (127.0.0.1, ::1 or localhost); the simulator never listens beyond this machine.")
        }
        guard (1...86_400).contains(pollInterval) else {
            throw ValidationError("--poll-interval must be between 1 and 86400 seconds.")
        }
        guard (0...65_535).contains(port) else {
            throw ValidationError("--port must be between 0 and 65535.")
        }
    }

    func run() async throws {
        var configuration = SimulatorConfiguration(seed: seed, kakaoAPIKey: kakaoKey, enforceRateLimits: !noRateLimits)
        if !repos.isEmpty { configuration.repos = repos }
        configuration.pollInterval = pollInterval
        let simulator = Simulator(configuration: configuration)
        let displayHost = host.contains(":") ? "[\(host)]" : host
        let bindHost = host

        let server = Task {
            try await simulator.run(host: bindHost, port: port) { boundPort in
                // Unbuffered write: the line is visible to a parent process immediately.
                FileHandle.standardOutput.write(Data("listening on http://\(displayHost):\(boundPort)\n".utf8))
            }
        }

        // SIGINT / SIGTERM: cancel the server task, which stops it promptly.
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let queue = DispatchQueue(label: "freshet-sim.signals")
        let sources = [SIGINT, SIGTERM].map { sig in
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { server.cancel() }
            source.resume()
            return source
        }
        defer { sources.forEach { $0.cancel() } }

        do {
            try await server.value
        } catch is CancellationError {
            // Normal shutdown.
        }
    }
}

do {
    let command = try FreshetSim.parse()
    try await command.run()
} catch {
    FreshetSim.exit(withError: error)
}
