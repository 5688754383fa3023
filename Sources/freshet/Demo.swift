import Foundation
import FreshetFeeds
import FreshetSimulator
import FreshetTerminal
@preconcurrency import Rainbow

/// The built-in demo (`--demo`, or `FRESHET_DEMO=1`): the simulated GitHub, Hacker News and Kakao
/// APIs (FreshetSimulator) served inside this process on 127.0.0.1, and every client pointed at
/// them, so the apps can be tried with no network, no GitHub token and no Kakao key.
///
/// The demo keeps its own database (`demo/` in the usual folder), so simulated data never mixes
/// with real data. Its data is generated once per demo folder: the first run writes the instant
/// the data counts back from, and it listens on the same port every run when that port is free,
/// so a second run finds the first one's responses in the cache (hits, then `304`s), as it would
/// with the real APIs.
enum Demo {
    /// The port the demo asks for first (`FRESHET_DEMO_PORT`, default 47117; `0` for any free
    /// one); when it is taken, any free one.
    static func preferredPort(environment: [String: String] = ProcessInfo.processInfo.environment) -> Int {
        guard let text = environment["FRESHET_DEMO_PORT"], let port = Int(text), (0...65_535).contains(port) else {
            return 47_117
        }
        return port
    }

    /// Whether the demo was asked for: `--demo`, or `FRESHET_DEMO` set to `1`, `true` or `yes`.
    static func isRequested(flag: Bool, environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        if flag { return true }
        guard let value = environment["FRESHET_DEMO"]?.trimmingCharacters(in: .whitespaces).lowercased() else { return false }
        return ["1", "true", "yes", "on"].contains(value)
    }

    /// A demo that could not start.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Starts the simulator and returns `configuration` pointed at it, with the demo's database
    /// folder and key. The server runs until the process exits.
    static func start(_ configuration: AppConfiguration) async throws(Failure) -> AppConfiguration {
        let home = configuration.home.appendingPathComponent("demo", isDirectory: true)
        let simulator = Simulator(configuration: SimulatorConfiguration(
            kakaoAPIKey: "freshet-demo", enforceRateLimits: false, anchorDate: anchor(in: home)))
        var lastError = "no port"
        for port in Set([preferredPort(), 0]).sorted(by: >) {
            let (bound, continuation) = AsyncStream<Result<Int, any Error>>.makeStream()
            Task {
                do {
                    try await simulator.run(port: port) { continuation.yield(.success($0)) }
                } catch {
                    continuation.yield(.failure(error))
                }
                continuation.finish()
            }
            for await outcome in bound {
                switch outcome {
                case .success(let port):
                    if Terminal.stderrIsTTY {
                        printError("demo: simulated GitHub, Hacker News and Kakao on 127.0.0.1:\(port); nothing leaves this machine".dim)
                    }
                    return pointed(configuration, at: URL(string: "http://127.0.0.1:\(port)")!, home: home)
                case .failure(let error):
                    lastError = "\(error)"
                }
                break
            }
        }
        throw Failure(description: "could not start the demo server on 127.0.0.1: \(lastError)")
    }

    /// `configuration` with every API at `base` (the simulator's layout), the demo's Kakao key,
    /// no GitHub token, and `home`.
    static func pointed(_ configuration: AppConfiguration, at base: URL, home: URL) -> AppConfiguration {
        var configuration = configuration
        configuration.gitHubURL = base
        configuration.hackerNewsURL = base.appendingPathComponent("v0")
        configuration.kakaoURL = base
        configuration.avatarsURL = base.appendingPathComponent("avatars")
        configuration.thumbnailsURL = base.appendingPathComponent("thumbnails")
        configuration.gitHubToken = nil
        configuration.kakaoAPIKey = "freshet-demo"
        configuration.home = home
        return configuration
    }

    /// The instant the demo's data counts back from: read from `home/demo-anchor`, or now,
    /// written there for the next run. `nil` (now, not kept) when the folder cannot be written.
    static func anchor(in home: URL) -> Date? {
        let file = home.appendingPathComponent("demo-anchor")
        if let text = try? String(contentsOf: file, encoding: .utf8),
           let seconds = Double(text.trimmingCharacters(in: .whitespacesAndNewlines)), seconds.isFinite, seconds > 0 {
            return Date(timeIntervalSince1970: seconds)
        }
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        do {
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            try Data("\(Int(now.timeIntervalSince1970))\n".utf8).write(to: file, options: .atomic)
        } catch {
            return nil
        }
        return now
    }
}
