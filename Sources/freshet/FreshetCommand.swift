import ArgumentParser
import Foundation

/// `freshet`: GitHub activity, Hacker News, GitHub users and repositories, and Daum blog search
/// in the terminal, over Freshet's typed, cache-aware HTTP client.
@main
struct FreshetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "freshet",
        abstract: "GitHub activity, Hacker News, GitHub users and repos, and Daum blog search in your terminal.",
        discussion: """
            Data commands print aligned, human-readable output, or JSON with --json. \
            Try them with no network, token or key: --demo (or FRESHET_DEMO=1) serves simulated \
            data from inside the process. Or point them at the simulator with FRESHET_GITHUB_URL, FRESHET_HN_URL and \
            FRESHET_KAKAO_URL (see `freshet-sim`). Credentials: GITHUB_TOKEN or GH_TOKEN, KAKAO_REST_API_KEY.

            Exit status: 0 success; 1 usage or other error; 2 nothing could be shown; \
            3 stale data shown after a failed refresh (0 with --allow-stale).
            """,
        version: "0.1.0",
        subcommands: [
            FeedCommand.self, HNCommand.self, UserCommand.self, RepoCommand.self, ReposCommand.self,
            BlogsCommand.self, ProxyCommand.self, CacheCommand.self,
        ]
    )

    /// Parses and runs the command; usage errors exit 1 (not sysexits' 64), as the CLI contract says.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if try await runKnown(command) {
                // Ran.
            } else if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            await OpenContexts.shared.closeAll()
        } catch {
            await OpenContexts.shared.closeAll()
            let code = exitCode(for: error)
            if code == .validationFailure {
                printError(fullMessage(for: error))
                Foundation.exit(ExitStatus.failure.rawValue)
            }
            exit(withError: error)
        }
    }

    /// The commands ``runKnown(_:)`` tells by type.
    static let known: [any AsyncParsableCommand.Type] = [
        FeedCommand.self, HNCommand.self, UserCommand.self, RepoCommand.self, ReposCommand.self, BlogsCommand.self,
        ProxyCommand.self, CacheCommand.Stats.self, CacheCommand.Clear.self,
    ]

    /// Runs `command` when it is one of ``known``, told by its type; `false` for any other. A cast
    /// to a concrete type compares metadata, where the first cast of a type to
    /// `any AsyncParsableCommand` reads every conformance record of the process (about a million
    /// instructions, in every run).
    private static func runKnown(_ command: any ParsableCommand) async throws -> Bool {
        func run<Known: AsyncParsableCommand>(_: Known.Type) async throws -> Bool {
            guard var known = command as? Known else { return false }
            try await known.run()
            return true
        }
        for type in known {
            if try await run(type) { return true }
        }
        return false
    }
}
