import Foundation
import FreshetSimulator

/// Runs the built `freshet` executable against a simulator, in a temporary `FRESHET_HOME`.
public struct FreshetCLI: Sendable {
    /// The simulator the APIs point at.
    public let sim: RunningSimulator
    /// The `FRESHET_HOME` of this run (removed by ``withFreshetCLI(_:_:)``).
    public let home: URL
    /// Extra environment for every run (e.g. tokens).
    public var environment: [String: String] = [:]

    /// A runner for `sim` with its database in `home`.
    public init(sim: RunningSimulator, home: URL, environment: [String: String] = [:]) {
        self.sim = sim
        self.home = home
        self.environment = environment
    }

    /// The environment pointing every API at the simulator.
    public var baseEnvironment: [String: String] {
        let base = sim.baseURL.absoluteString
        return [
            "FRESHET_GITHUB_URL": base, "FRESHET_HN_URL": base + "/v0", "FRESHET_KAKAO_URL": base,
            "FRESHET_AVATARS_URL": base + "/avatars", "FRESHET_THUMBNAILS_URL": base + "/thumbnails",
            // The avatar's wait is a wall-clock cap; a loaded machine must not decide a test.
            "FRESHET_AVATAR_WAIT": "120",
            "FRESHET_HOME": home.path, "KAKAO_REST_API_KEY": sim.simulator.configuration.kakaoAPIKey,
        ]
    }

    /// Runs `freshet ARGUMENTS…` and returns its status and output.
    public func run(_ arguments: String..., environment extra: [String: String] = [:], timeout: Double = 60)
        async throws -> ProcessResult
    {
        try await run(arguments, environment: extra, timeout: timeout)
    }

    /// Runs `freshet` with an argument array.
    public func run(_ arguments: [String], environment extra: [String: String] = [:], timeout: Double = 60)
        async throws -> ProcessResult
    {
        guard let executable = builtProduct("freshet") else {
            struct NotBuilt: Error, CustomStringConvertible {
                var description: String { "the freshet executable was not built next to the tests" }
            }
            throw NotBuilt()
        }
        let env = baseEnvironment.merging(environment) { _, new in new }.merging(extra) { _, new in new }
        return try await runProcess(executable, arguments, environment: env, timeout: timeout)
    }
}

/// Starts a simulator and a temporary home, and hands them to `body` as a ``FreshetCLI``.
public func withFreshetCLI<T: Sendable>(
    _ configuration: SimulatorConfiguration = .init(), _ body: @Sendable (FreshetCLI) async throws -> T
) async throws -> T {
    let home = FileManager.default.temporaryDirectory.appendingPathComponent("freshet-test-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: home) }
    return try await withSimulator(configuration) { sim in
        try await body(FreshetCLI(sim: sim, home: home))
    }
}
