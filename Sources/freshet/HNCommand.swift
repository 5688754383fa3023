import ArgumentParser
import Foundation
import Freshet
import FreshetFeeds
import FreshetTerminal
import HackerNewsAPI

struct HNCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hn", _superCommandName: "freshet",
        abstract: "Hacker News stories: top, new, best, ask, show or job; `hn item ID` for a thread.",
        discussion: """
            Stories are fetched as the API requires, one request per item, at most --concurrency \
            at a time, and shown in the order asked for. The rank is the story's position in \
            the list: null, deleted and dead items are skipped (and counted on stderr) and the \
            next stories take their places, so --limit N shows N stories and a skipped item \
            leaves a gap in the ranks. An item that still fails after retries is named on stderr and the rest \
            is shown (exit 0); exit 2 only when nothing could be shown.

            Lists stay fresh for 60 seconds and items for 5 minutes: a repeat within that time \
            makes no request at all. --refresh asks the server again.

            `freshet hn item ID` prints the item and its whole comment tree, fetched level by \
            level with the same bound, indented two spaces per level. Deleted and dead comments \
            are left out, or shown as [deleted]/[dead] when replies hang below them.

            `freshet hn --live [list]` follows the list as it changes, from Hacker News' own \
            event stream: new stories slide in and ranks move, each new story fetched once. On a \
            terminal the list is redrawn in place under a status line (live, or reconnecting); \
            with --json each change prints one line, a JSON array of the shown stories; otherwise \
            the whole list is printed again, then a blank line. A dropped stream is reconnected \
            with backoff; a server that answers plain JSON instead of a stream is polled every \
            --interval seconds. Ctrl-C ends it (exit 0).
            """)

    // The list, `--limit`, `--sort`, `--concurrency` and `--interval` as given, each beside the
    // value used: they declare no default (see `OptionDefault`).
    @Argument(help: ArgumentHelp(
        "The list: top, new, best, ask, show or job; or `item` followed by an ID." + OptionDefault.note(Self.defaultList),
        valueName: "list"))
    var listArgument: String?
    var list: String { listArgument ?? Self.defaultList }

    @Argument(help: "The item ID, after `item`.")
    var id: Int?

    @Option(name: .customLong("limit"), help: ArgumentHelp(
        "How many stories (1–500 for top, new, best; 1–200 for ask, show, job)." + OptionDefault.note(Self.defaultLimit),
        valueName: "limit"))
    var limitOption: Int?
    var limit: Int { limitOption ?? Self.defaultLimit }

    @Option(name: .customLong("sort"), help: ArgumentHelp(
        "Order: rank (the list's), score or time (newest first)." + OptionDefault.note(Self.defaultSort), valueName: "sort"))
    var sortOption: String?
    var sort: String { sortOption ?? Self.defaultSort }

    @Option(name: .customLong("concurrency"), help: ArgumentHelp(
        "How many item requests in flight at once (1–100)." + OptionDefault.note(StoryLoader.defaultConcurrency),
        valueName: "concurrency"))
    var concurrencyOption: Int?
    var concurrency: Int { concurrencyOption ?? StoryLoader.defaultConcurrency }

    @Flag(help: "Follow the list live, as it changes, until Ctrl-C.")
    var live = false

    @Option(name: .customLong("interval"), help: ArgumentHelp(
        "With --live: seconds between two polls when the server does not stream (1–3600)." + OptionDefault.note(Self.defaultInterval),
        valueName: "interval"))
    var intervalOption: Int?
    var interval: Int { intervalOption ?? Self.defaultInterval }

    static let defaultList = "top"
    static let defaultLimit = 30
    static let defaultSort = "rank"
    static let defaultInterval = 30

    @OptionGroup var common: CommonOptions

    func validate() throws {
        let range = StoryLoader.concurrencyRange
        guard range.contains(concurrency) else {
            throw ValidationError("--concurrency must be between \(range.lowerBound) and \(range.upperBound).")
        }
        guard StoryLoader.Sort(rawValue: sort.lowercased()) != nil else {
            throw ValidationError("unknown --sort '\(sort)'; expected rank, score or time.")
        }
        guard (1...3600).contains(interval) else {
            throw ValidationError("--interval must be between 1 and 3600 seconds, got \(interval).")
        }
        #if !canImport(Darwin)
        if live && common.transport == .urlsession {
            throw ValidationError("--live needs --transport ahc: URLSession on Linux hands a response over only once it has ended, and a stream does not end.")
        }
        #endif
        if list.lowercased() == "item" {
            if live { throw ValidationError("--live follows a story list, not an item: `freshet hn --live top`.") }
            guard let id else {
                throw ValidationError("`freshet hn item` needs an item ID, like `freshet hn item 8863`.")
            }
            guard id > 0 else { throw ValidationError("an item ID is a positive number, got \(id).") }
            return
        }
        guard let storyList = HackerNews.StoryList(rawValue: list.lowercased()) else {
            throw ValidationError(
                "unknown list '\(list.prefix(40))'; expected top, new, best, ask, show or job (or `item ID`).")
        }
        if let id {
            throw ValidationError("unexpected argument '\(id)' after the list; did you mean `freshet hn item \(id)`?")
        }
        guard (1...storyList.maxCount).contains(limit) else {
            throw ValidationError("--limit must be between 1 and \(storyList.maxCount) for the \(storyList.rawValue) list.")
        }
    }

    func run() async throws {
        let context = try await common.makeContext()
        if let storyList = HackerNews.StoryList(rawValue: list.lowercased()) {
            if live { return try await follow(storyList, context: context) }
            try await showList(storyList, context: context)
        } else if let id {
            try await showItem(id, context: context)
        }
    }

    // MARK: - A story list

    /// The loader of a list's stories: rows need no item's comments; `--json` writes each item whole.
    private func storyLoader(_ context: AppContext) -> StoryLoader {
        var loader = StoryLoader(context: context, concurrency: concurrency)
        if !common.json { loader.fields = .listing }
        return loader
    }

    private func showList(_ storyList: HackerNews.StoryList, context: AppContext) async throws {
        let loader = storyLoader(context)
        let order = StoryLoader.Sort(rawValue: sort.lowercased()) ?? .rank
        let (width, color) = (Terminal.width, Terminal.colorEnabled)
        // On a terminal the rows fill in under the progress line as items land, each in its place;
        // in a pipe the list is printed once, as it ends.
        let live = Terminal.stdoutIsTTY && !common.json ? LiveRegion() : nil
        let bar = ProgressLine(noun: "stories")
        var landed: [RankedStory] = []
        // With --json each story is encoded as it lands, while the others are still on their way,
        // not all at the end: the compact array is its elements' encodings joined by commas.
        var encoded: [Int: (rank: Int, json: Data)] = [:]
        let json = common.json
        let page: StoryPage
        do {
            page = try await loader.load(storyList, limit: limit, sort: order, force: common.refresh) { progress in
                if json, case .item(let item) = progress.latest, let rank = progress.rank,
                   let data = try? HackerNews.encoder.encode(RankedStory(rank: rank, item: item).decodedForJSON) {
                    encoded[item.id] = (rank, data)
                }
                guard let live else { return bar.show(progress.completed, of: progress.total) }
                if case .item(let item) = progress.latest, let rank = progress.rank {
                    landed.append(RankedStory(rank: rank, item: item))
                }
                let line = ProgressLine.text(progress.completed, of: progress.total, noun: "stories")
                live.update { [landed] in
                    [line] + HNFormat.storyLines(order.apply(landed), width: width, header: false, color: color)
                }
            }
        } catch {
            live?.clear()
            bar.clear()
            throw report(error, subject: "the Hacker News \(storyList.rawValue) list")
        }
        bar.clear()

        if page.stories.isEmpty { live?.clear() }
        if page.stories.isEmpty, let failure = page.failures.first {
            reportFailures(page.failures, noun: "stories")
            throw report(failure.error, subject: "item \(failure.id)")
        }
        if json {
            var array = Data(utf8: "[")
            for (index, story) in page.stories.enumerated() {
                if index > 0 { array.append(UInt8(ascii: ",")) }
                if let early = encoded[story.id], early.rank == story.rank {
                    array.append(early.json)
                } else {
                    array.append(try HackerNews.encoder.encode(story.decodedForJSON))
                }
            }
            FileHandle.standardOutput.write(array + Data(utf8: "]\n"))
        } else if page.stories.isEmpty {
            printError("no stories in the \(storyList.rawValue) list.")
        } else {
            // No column header, on a terminal either: the screen shows what a pipe gets.
            let lines = HNFormat.storyLines(page.stories, width: width, header: false, color: color)
            if let live { live.finish(with: lines) } else { output(lines.joined(separator: "\n")) }
        }
        if !page.skipped.isEmpty {
            let count = page.skipped.count
            printError("note: skipped \(counted(count, "deleted or dead item")).")
        }
        reportFailures(page.failures, noun: "stories")
        if let reason = Self.staleSummary(page.staleReasons) {
            try finishStale(reason: reason, allowStale: common.allowStale)
        }
    }

    // MARK: - A list, live

    private func follow(_ storyList: HackerNews.StoryList, context: AppContext) async throws {
        let loader = storyLoader(context)
        let order = StoryLoader.Sort(rawValue: sort.lowercased()) ?? .rank
        let following = LiveStories(loader: loader, list: storyList, limit: limit, sort: order, interval: .seconds(interval))
        let screen = Terminal.stdoutIsTTY && !common.json ? LiveScreen(list: storyList) : nil
        let json = common.json
        if Demo.isRunning { Demo.keepHackerNewsMoving() }
        let interrupted = try await untilInterrupted {
            try await following.run(onStatus: { status in
                if let screen { screen.show(status) } else { printError(LiveScreen.text(status, list: storyList)) }
            }, onPage: { page in
                if let screen {
                    screen.show(page.stories)
                } else if json {
                    let line = (try? HackerNews.encoder.encode(page.stories.map(\.decodedForJSON))) ?? Data(utf8: "[]")
                    FileHandle.standardOutput.write(line + Data(utf8: "\n"))
                } else {
                    let lines = HNFormat.storyLines(page.stories, width: Terminal.width, header: false, color: Terminal.colorEnabled)
                    output(lines.joined(separator: "\n") + "\n")
                }
            })
        }
        screen?.finish()
        if interrupted { printError("stopped following the \(storyList.rawValue) list.") }
    }

    // MARK: - One item and its comments

    private func showItem(_ id: Int, context: AppContext) async throws {
        let loader = CommentTreeLoader(context: context, concurrency: concurrency)
        let bar = ProgressLine(noun: "comments")
        let loaded: CommentThread?
        do {
            loaded = try await loader.load(id: id, force: common.refresh) { progress in
                bar.show(progress.completed, of: progress.total)
            }
        } catch {
            bar.clear()
            throw report(error, subject: "item \(id)")
        }
        bar.clear()
        guard let thread = loaded else {
            printError("error: item \(id) not found.")
            throw ExitStatus.nothingShown
        }
        if common.json {
            try printJSON(thread.decodedForJSON, encoder: HackerNews.encoder)
        } else {
            output(HNFormat.threadLines(thread, width: Terminal.width, color: Terminal.colorEnabled).joined(separator: "\n"))
        }
        reportFailures(thread.failures, noun: "comments")
        if let reason = Self.staleSummary(thread.staleReasons) {
            try finishStale(reason: reason, allowStale: common.allowStale)
        }
    }

    /// The first reason a stored response was served stale, and how many more there were.
    static func staleSummary(_ reasons: [StaleReason]) -> String? {
        guard let first = reasons.first?.description else { return nil }
        return reasons.count == 1 ? first : "\(first) (and \(reasons.count - 1) more requests)"
    }

    /// Names the items that could not be loaded (the first few) on stderr.
    private func reportFailures(_ failures: [ItemFailure], noun: String) {
        guard !failures.isEmpty else { return }
        let shown = 5
        for failure in failures.prefix(shown) {
            printError("warning: could not load \(failure)")
        }
        if failures.count > shown {
            printError("warning: … and \(failures.count - shown) more items could not be loaded.")
        }
        printError("warning: \(counted(failures.count, "item")) left out; the other \(noun) are shown.")
    }
}
