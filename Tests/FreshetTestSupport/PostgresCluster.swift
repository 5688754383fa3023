import Foundation

/// A throwaway PostgreSQL server on loopback, made by `scripts/pg-cluster` in a temporary
/// directory: a real server, its own port, gone when the test ends.
public struct PostgresCluster: Sendable {
    /// The directory holding the cluster.
    public let directory: URL
    /// `postgres://freshet@127.0.0.1:PORT/freshet` (no password in it).
    public let url: String
    /// The password of the `freshet` user, passed as `PGPASSWORD`.
    public static let password = "freshet-test"

    /// The environment a client needs besides the URL.
    public var environment: [String: String] { ["PGPASSWORD": Self.password] }

    /// Stops the server at once, keeping its data ("PostgreSQL lost").
    public func kill() async throws {
        try await Self.script(["kill", directory.path])
    }

    /// Starts the server again on the same port.
    public func restart() async throws {
        try await Self.script(["restart", directory.path])
    }

    /// Whether `scripts/pg-cluster` can find PostgreSQL's server binaries, where it looks.
    static var serverInstalled: Bool {
        let fileManager = FileManager.default
        let environment = ProcessInfo.processInfo.environment
        if let bin = environment["PG_BIN"], !bin.isEmpty { return fileManager.isExecutableFile(atPath: bin + "/initdb") }
        var directories = (environment["PATH"] ?? "").split(separator: ":").map(String.init)
        for parent in ["/usr/lib/postgresql", "/opt/homebrew/opt", "/usr/local/opt"] {
            let children = (try? fileManager.contentsOfDirectory(atPath: parent)) ?? []
            directories += children.filter { parent == "/usr/lib/postgresql" || $0.hasPrefix("postgresql") }
                .map { "\(parent)/\($0)/bin" }
        }
        return directories.contains { fileManager.isExecutableFile(atPath: $0 + "/initdb") }
    }

    /// `scripts/pg-cluster` in this package.
    static var scriptURL: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/pg-cluster")
    }

    /// Runs the script; its stdout.
    @discardableResult
    static func script(_ arguments: [String]) async throws -> String {
        let result = try await runProcess(URL(fileURLWithPath: "/bin/bash"), [scriptURL.path] + arguments, timeout: 90)
        guard result.status == 0 else {
            throw PostgresClusterFailure(description: "scripts/pg-cluster \(arguments.first ?? "") failed (\(result.status)): \(result.stderr)")
        }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// `scripts/pg-cluster` could not do what it was asked.
public struct PostgresClusterFailure: Error, CustomStringConvertible {
    public var description: String
}

/// Starts a new PostgreSQL cluster for `body` and removes it afterwards, whatever happens.
/// PostgreSQL must be installed (`.ci/run` installs Debian's `postgresql`).
public func withPostgres<T: Sendable>(_ body: (PostgresCluster) async throws -> T) async throws -> T {
    guard PostgresCluster.serverInstalled else {
        throw PostgresClusterFailure(description: """
            PostgreSQL's server is not installed: no initdb in $PG_BIN, /usr/lib/postgresql/*/bin, on PATH or in \
            Homebrew's opt/postgresql*/bin (scripts/pg-cluster looks there). Install it (Debian: apt-get install \
            postgresql; .ci/run does) to run the tests on a PostgreSQL store.
            """)
    }
    let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("freshet-pg-\(UUID().uuidString.prefix(8))")
    let url = try await PostgresCluster.script(["start", directory.path])
    let cluster = PostgresCluster(directory: directory, url: url)
    do {
        let value = try await body(cluster)
        _ = try? await PostgresCluster.script(["stop", directory.path])
        return value
    } catch {
        _ = try? await PostgresCluster.script(["stop", directory.path])
        throw error
    }
}
