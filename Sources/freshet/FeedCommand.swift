import ArgumentParser
import Foundation
import Freshet
import FreshetFeeds
import FreshetTerminal
import GitHubAPI
@preconcurrency import Rainbow

struct FeedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feed", _superCommandName: "freshet",
        abstract: "Latest events of a GitHub repository, instantly from disk, then refreshed.",
        discussion: """
            Stored events print at once; the refresh is a conditional request (an unchanged feed \
            costs a 304, not a rate-limit hit) and is skipped entirely while the last answer is fresh.
            """)

    @Argument(help: "The repository as OWNER/REPO (default: ReactiveX/RxSwift).")
    var repository: String?

    @Option(help: ArgumentHelp("Merge the feeds of the top N Swift repositories instead.", valueName: "N"))
    var topSwift: Int?

    @Flag(help: "Keep polling, as often as the API allows (X-Poll-Interval); Ctrl-C to stop.")
    var watch = false

    /// `--limit` as given; ``count`` is the number shown (no declared default: ``OptionDefault``).
    @Option(help: ArgumentHelp("How many events to show (1–300)." + OptionDefault.note(Self.defaultCount)))
    var limit: Int?

    static let defaultCount = 50
    /// How many events to show.
    private var count: Int { limit ?? Self.defaultCount }

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard (1...FeedStore.maxPerRepository).contains(count) else {
            throw ValidationError("--limit must be between 1 and \(FeedStore.maxPerRepository).")
        }
        if let topSwift, !(1...30).contains(topSwift) {
            throw ValidationError("--top-swift must be between 1 and 30.")
        }
        if let repository {
            if topSwift != nil {
                throw ValidationError("give a repository or --top-swift N, not both.")
            }
            if RepositoryName(repository) == nil {
                throw ValidationError("'\(repository)' is not a repository; expected OWNER/REPO, like ReactiveX/RxSwift.")
            }
        }
    }

    func run() async throws {
        let context = try await common.makeContext()
        let feed = FeedService(context: context)
        let repositories: [RepositoryName]
        if let topSwift {
            do {
                repositories = try await feed.topSwiftRepositories(count: topSwift, force: common.refresh)
            } catch {
                throw report(error, subject: "the top Swift repositories")
            }
        } else {
            repositories = [RepositoryName(repository ?? "ReactiveX/RxSwift")!]
        }
        let multi = repositories.count > 1
        let subject = multi ? "the feeds" : "repository \(repositories[0])"

        let stored = await feed.stored(repositories, limit: count)
        let live = Terminal.stdoutIsTTY && !common.json
        var shownLines = 0
        var progressShown = false
        if live, !stored.isEmpty {
            shownLines = render(stored, multi: multi)
            if Terminal.stderrIsTTY {
                printError(Terminal.styled("refreshing…", \.dim))
                progressShown = true
            }
        }

        let results = await feed.refresh(repositories, force: common.refresh)
        var failures: [(RepositoryName, APIError)] = []
        var staleReasons: [String] = []
        var pollIntervals: [Int] = []
        var storeChanged = false
        for (index, result) in results.enumerated() {
            switch result {
            case .success(let refresh):
                if let reason = refresh.staleReason { staleReasons.append(reason.description) }
                if let poll = refresh.pollInterval { pollIntervals.append(poll) }
                if refresh.merged { storeChanged = true }
            case .failure(let error): failures.append((repositories[index], error))
            }
        }
        // Nothing merged (each answer was the page stored last time): the stored events stand.
        let events = storeChanged ? await feed.stored(repositories, limit: count) : stored
        if events.isEmpty, let (repository, error) = failures.first {
            throw report(error, subject: multi ? "the feed of \(repository)" : subject)
        }
        if common.json {
            try printJSON(await feed.storedEvents(repositories, limit: count), encoder: GitHub.encoder)
        } else if live, shownLines > 0 {
            if progressShown { FileHandle.standardError.write(Data((ANSI.cursorUp(1) + ANSI.clearLine).utf8)) }
            if events.map(\.id) != stored.map(\.id) {
                // Redraw in place: move up over the stored rows and clear to the end of the screen.
                FileHandle.standardOutput.write(Data((ANSI.cursorUp(shownLines) + ANSI.eraseBelow).utf8))
                _ = render(events, multi: multi)
            }
        } else if events.isEmpty {
            printError("no public events in \(multi ? "these repositories" : "\(repositories[0])") in the last 30 days.")
        } else {
            _ = render(events, multi: multi)
        }
        for (repository, error) in failures {
            staleReasons.append("\(repository): \(explain(error, subject: "repository \(repository)"))")
        }
        if watch {
            // The polls go on, so say now what failed, as each later poll does.
            try await FeedWatcher(feed: feed, repositories: repositories, limit: count, multi: multi, context: context)
                .run(initial: events, interval: FeedWatcher.interval(pollIntervals),
                     warnings: staleReasons.map { "warning: refresh failed: \($0)" })
            return
        }
        if !staleReasons.isEmpty {
            try finishStale(reason: staleReasons.joined(separator: "; "), allowStale: common.allowStale)
        }
    }

    /// Prints the events as aligned rows; returns the number of lines written.
    @discardableResult
    func render(_ events: [FeedEntry], multi: Bool) -> Int {
        let lines = FeedFormat.lines(events, multi: multi, width: Terminal.width, color: Terminal.colorEnabled)
        output(lines.joined(separator: "\n"))
        return lines.count
    }
}
