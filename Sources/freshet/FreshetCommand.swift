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
        Allocator.configure()
        do {
            var command = try parseDirectly(CommandLine.arguments.dropFirst())
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

    /// The leaf commands ``parseDirectly(_:)`` parses by name.
    /// Each names `freshet` as its `_superCommandName`: parsed on its own (``parseDirectly(_:)``),
    /// ArgumentParser then skips its check for `--generate-completion-script`, two more parses of
    /// the arguments by reflection (~11M instructions, 3–4 ms, on every start); the completion
    /// scripts come from `freshet` itself, whose whole-line parse still checks.
    static let leaves: [any AsyncParsableCommand.Type] = [
        FeedCommand.self, HNCommand.self, UserCommand.self, RepoCommand.self, ReposCommand.self, BlogsCommand.self,
        ProxyCommand.self,
    ]

    /// The command `arguments` ask for. When the first names one of ``leaves`` and the rest parses
    /// as that command on its own, that is the command; otherwise ``parseAsRoot(_:)`` parses the
    /// whole line, so help, errors and completion scripts come from it, under `freshet`.
    ///
    /// ArgumentParser's walk from the root builds a matched subcommand's argument set twice, once
    /// only to ask whether it takes every remaining argument (none of ours does), through
    /// `Mirror`: a warm `feed` runs 2.2 M instructions (3 %) fewer this way.
    private static func parseDirectly(_ arguments: ArraySlice<String>) throws -> any ParsableCommand {
        if let name = arguments.first, let leaf = leaves.first(where: { $0.configuration.commandName == name }),
            let command = try? leaf.parseAsRoot(Array(arguments.dropFirst())),
            // Not the help command ArgumentParser answers `--help` with, which would name no `freshet`.
            ObjectIdentifier(type(of: command)) == ObjectIdentifier(leaf)
        {
            return command
        }
        return try parseAsRoot(Array(arguments))
    }

    /// The commands ``runKnown(_:)`` tells by type: the leaves, and `cache`'s two.
    static let known: [any AsyncParsableCommand.Type] = leaves + [CacheCommand.Stats.self, CacheCommand.Clear.self]

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
