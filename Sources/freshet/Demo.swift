import Foundation
import FreshetFeeds
import FreshetSimulator
import FreshetTerminal
import HTTPTypes
import OpenAPIRuntime
@preconcurrency import Rainbow
import Synchronization

/// The built-in demo (`--demo`, or `FRESHET_DEMO=1`): the simulated GitHub, Hacker News and Kakao
/// APIs (FreshetSimulator) served inside this process on 127.0.0.1, and every client pointed at
/// them, so the apps can be tried with no network, no GitHub token and no Kakao key.
///
/// The demo keeps its own database (`demo/` in the usual folder, `0700`), so simulated data never
/// mixes with real data. Its data is generated once per demo folder: the first run writes the
/// instant the data counts back from. The clients address the demo at one fixed origin
/// (127.0.0.1 on the preferred port) whatever port the server got, and ``DemoTransport`` sends
/// there, so a second run finds the first one's responses in the cache (hits, then `304`s), as it
/// would with the real APIs, even when the preferred port was busy.
enum Demo {
    /// The port the demo asks for when `FRESHET_DEMO_PORT` does not name one.
    static let defaultPort = 47_117

    /// Whether this process started the demo (an error that could not reach an API then does not
    /// suggest `--demo`).
    static var isRunning: Bool { running.load(ordering: .relaxed) }
    private static let running = Atomic(false)
    /// The demo's simulator, once started.
    private static let simulator = Mutex<Simulator?>(nil)

    /// Makes the demo's Hacker News lists move on (a new story every 20 s), for `hn --live`:
    /// the demo streams as Firebase does, and this gives the stream something to say.
    static func keepHackerNewsMoving() {
        guard let simulator = simulator.withLock({ $0 }) else { return }
        Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(20))
                simulator.advanceHackerNews()
            }
        }
    }

    /// The port the demo asks for first (`FRESHET_DEMO_PORT`, default 47117; `0` for any free
    /// one); when it is taken, any free one.
    /// - Throws: ``Failure`` when `FRESHET_DEMO_PORT` is set to anything but a port number.
    static func preferredPort(environment: [String: String] = ProcessEnvironment.values) throws(Failure) -> Int {
        guard let text = environment["FRESHET_DEMO_PORT"] else { return defaultPort }
        guard let port = Int(text.trimmingCharacters(in: .whitespaces)), (0...65_535).contains(port) else {
            throw Failure(description: "FRESHET_DEMO_PORT must be a port number from 0 to 65535 (0: any free port), not '\(text.prefix(40))'")
        }
        return port
    }

    /// Whether the demo was asked for: `--demo`, or `FRESHET_DEMO` set to `1`, `true` or `yes`.
    static func isRequested(flag: Bool, environment: [String: String] = ProcessEnvironment.values) -> Bool {
        if flag { return true }
        guard let value = environment["FRESHET_DEMO"]?.trimmingCharacters(in: .whitespaces).lowercased() else { return false }
        return ["1", "true", "yes", "on"].contains(value)
    }

    /// A demo that could not start.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The running demo: the configuration every client uses (the demo's origin, folder and key)
    /// and where the server really listens.
    struct Started {
        /// The configuration pointed at ``origin``.
        var configuration: AppConfiguration
        /// The origin the clients address (and the HTTP cache keys on): 127.0.0.1 on the
        /// preferred port, the same on every run.
        var origin: URL
        /// Where the server listens: the origin, or another port when that one was busy.
        var listening: URL

        /// `transport`, sending what is addressed to ``origin`` to ``listening``.
        func transport(over transport: any ClientTransport) -> any ClientTransport {
            origin == listening ? transport : DemoTransport(base: transport, origin: origin, listening: listening)
        }
    }

    /// The demo's folder in `home`, made `0700` like the rest of Freshet's files.
    static func folder(in home: URL) -> URL {
        let folder = home.appendingPathComponent("demo", isDirectory: true)
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        _ = chmod(folder.path, 0o700)
        return folder
    }

    /// Starts the simulator and returns `configuration` pointed at it, with the demo's database
    /// folder and key. The server runs until the process exits.
    static func start(_ configuration: AppConfiguration) async throws(Failure) -> Started {
        let preferred = try preferredPort()
        let home = folder(in: configuration.home)
        let simulator = Simulator(configuration: SimulatorConfiguration(
            kakaoAPIKey: "freshet-demo", enforceRateLimits: false, anchorDate: anchor(in: home)))
        let origin = URL(string: "http://127.0.0.1:\(preferred == 0 ? defaultPort : preferred)")!
        var lastError = "no port"
        for port in Set([preferred, 0]).sorted(by: >) {
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
                        printError(Terminal.styled("demo: simulated GitHub, Hacker News and Kakao on 127.0.0.1:\(port); nothing leaves this machine", \.dim))
                    }
                    running.store(true, ordering: .relaxed)
                    Self.simulator.withLock { $0 = simulator }
                    return Started(configuration: pointed(configuration, at: origin, home: home), origin: origin,
                                   listening: URL(string: "http://127.0.0.1:\(port)")!)
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
            try Data("\(Int(now.timeIntervalSince1970))\n".utf8).write(to: file, options: .atomic)
        } catch {
            return nil
        }
        return now
    }
}

/// The demo's transport: a request addressed to the demo's fixed origin goes to the port its server
/// really got, so the HTTP cache, the logs and the stored URLs see the same origin on every run.
struct DemoTransport: ClientTransport {
    let base: any ClientTransport
    let origin: URL
    let listening: URL

    func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws -> (HTTPResponse, HTTPBody?) {
        var baseURL = baseURL
        if baseURL.host == origin.host, baseURL.port == origin.port,
           var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false) {
            components.port = listening.port
            baseURL = components.url ?? baseURL
        }
        return try await base.send(request, body: body, baseURL: baseURL, operationID: operationID)
    }
}
