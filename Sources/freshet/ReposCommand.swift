import ArgumentParser
import Foundation
import Freshet
import FreshetFeeds
import FreshetTerminal
import GitHubAPI

struct ReposCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "repos", _superCommandName: "freshet",
        abstract: "Search GitHub repositories; without a query on a terminal, search as you type.",
        discussion: """
            With QUERY: one search (GitHub search syntax, e.g. "language:swift networking").

            Without QUERY on a terminal: interactive search. Results follow your typing once it \
            pauses (--debounce), an unchanged query is not searched again, and a newer query \
            cancels the request still running for an older one. ↑/↓ select, Enter prints the \
            selected repository (as `freshet repo`), Esc or Ctrl-C quits.

            Without QUERY and without a terminal: reads one query per line from standard input \
            and prints each one's results (with --json: one JSON document per line). Exits 2 if \
            any query failed.

            GitHub allows 10 searches a minute without a token (30 with GITHUB_TOKEN).
            """)

    @Argument(help: "The search query (GitHub search syntax).")
    var query: String?

    @Option(help: "Order: stars, forks or updated (default: best match).")
    var sort: RepositorySort?

    @Option(help: "How many results (1–100).")
    var limit = 20

    @Option(help: ArgumentHelp("Interactive mode: quiet time before a query is sent.", valueName: "ms"))
    var debounce = 300

    @OptionGroup var common: CommonOptions

    enum RepositorySort: String, ExpressibleByArgument, CaseIterable {
        case stars, forks, updated
    }

    func validate() throws {
        guard (1...GitHub.maxPerPage).contains(limit) else {
            throw ValidationError("--limit must be between 1 and \(GitHub.maxPerPage).")
        }
        guard (0...10_000).contains(debounce) else { throw ValidationError("--debounce must be between 0 and 10000 ms.") }
    }

    func run() async throws {
        let context = try await common.makeContext()
        let client = context.gitHub()
        if let query {
            let response: Response<RepositorySearchResult>
            do {
                response = try await search(query, client: client)
            } catch {
                printError("error: " + Self.explainSearch(error, query: query))
                throw error == .cancelled ? ExitStatus.failure : ExitStatus.nothingShown
            }
            show(response.value, query: query)
            if response.cache == .stale {
                try finishStale(reason: response.staleReason?.description ?? "the server could not be used", allowStale: common.allowStale)
            }
        } else if TerminalUI.isInteractive, !common.json {
            try await interactive(client: client)
        } else {
            try await readQueries(client: client)
        }
    }

    /// A failed search, for a person: GitHub's own message for a refused query (422).
    static func explainSearch(_ error: APIError, query: String?) -> String {
        guard case .httpStatus(422, let message, _, _) = error else {
            return explain(error, subject: query.map { "the search for “\($0)”" } ?? "the search")
        }
        let text = "GitHub refused the search" + (query.map { " “\($0)”" } ?? "") + ": " + (message ?? "validation failed")
        return text.hasSuffix(".") ? text : text + "."
    }

    private func search(_ query: String, client: APIClient) async throws(APIError) -> Response<RepositorySearchResult> {
        let endpoint = GitHub.searchRepositories(
            query: query, sort: sort?.rawValue, order: sort == nil ? nil : "desc", perPage: limit)
        return try await client.send(endpoint.revalidating(common.refresh))
    }

    private func show(_ result: RepositorySearchResult, query: String) {
        if common.json {
            try? printJSON(result, encoder: GitHub.encoder)
            return
        }
        var lines = [GitHubFormat.searchSummary(result, query: query, shown: result.items.count)]
        lines += GitHubFormat.searchRows(result.items, width: Terminal.width)
        output(lines.joined(separator: "\n"))
    }

    /// One query per line of standard input; each one's results, in order.
    private func readQueries(client: APIClient) async throws {
        try await SearchInput.runQueries(
            allowStale: common.allowStale, json: common.json,
            search: { query throws(APIError) in try await search(query, client: client) },
            show: show,
            describe: { error, query in Self.explainSearch(error, query: query) })
    }

    private func interactive(client: APIClient) async throws {
        let session = SearchSession.repositories(
            client: client, sort: sort?.rawValue, perPage: limit, debounce: .milliseconds(debounce))
        let terminal: TerminalUI
        do {
            terminal = try TerminalUI.start()
        } catch {
            printError("error: \(error)")
            throw ExitStatus.failure
        }
        var screen = SearchScreen(content: RepositorySearchContent(), session: session, color: Terminal.colorEnabled)
        let outcome = await screen.run(on: terminal)
        terminal.restore()
        guard case .selected(let results, let index) = outcome,
              let name = RepositoryName(results.items[index].fullName) else { return }
        try await RepoCommand.show(name, client: client, common: common)
    }
}

/// The repository list of the interactive `freshet repos`.
struct RepositorySearchContent: SearchScreenContent {
    var prompt: String { "repos" }

    func count(_ results: RepositorySearchResult) -> Int { results.items.count }

    func rows(_ results: RepositorySearchResult, width: Int, color: Bool) -> [String] {
        GitHubFormat.searchRows(results.items, width: width)
    }

    func summary(_ results: RepositorySearchResult, query: String) -> String {
        GitHubFormat.searchSummary(results, query: query)
    }

    func explain(_ error: APIError) -> String {
        if case .rateLimited = error { return defaultExplanation(error) + " (30 a minute with GITHUB_TOKEN)" }
        return TextLayout.singleLine(ReposCommand.explainSearch(error, query: nil))
    }
}
