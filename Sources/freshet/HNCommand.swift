import ArgumentParser
import Foundation
import Freshet
import FreshetFeeds
import HackerNewsAPI
@preconcurrency import Rainbow

struct HNCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hn", abstract: "Hacker News stories: top, new, best, ask, show or job; `hn item ID` for a thread.",
        discussion: """
            Stories are fetched as the API requires, one request per item, at most --concurrency
            at a time, and shown in the order asked for. The rank is the story's position in
            the list: null, deleted and dead items are skipped (and counted on stderr), so they
            leave gaps. An item that still fails after retries is named on stderr and the rest
            is shown (exit 0); exit 2 only when nothing could be shown.

            Lists stay fresh for 60 seconds and items for 5 minutes: a repeat within that time
            makes no request at all. --refresh asks the server again.

            `freshet hn item ID` prints the item and its whole comment tree, fetched level by
            level with the same bound, indented two spaces per level. Deleted and dead comments
            are left out, or shown as [deleted]/[dead] when replies hang below them.
            """)

    @Argument(help: "The list: top, new, best, ask, show or job; or `item` followed by an ID.")
    var list = "top"

    @Argument(help: "The item ID, after `item`.")
    var id: Int?

    @Option(help: "How many stories (1–500 for top, new, best; 1–200 for ask, show, job).")
    var limit = 30

    @Option(help: "Order: rank (the list's), score or time (newest first).")
    var sort = "rank"

    @Option(help: "How many item requests in flight at once (1–100).")
    var concurrency = StoryLoader.defaultConcurrency

    @OptionGroup var common: CommonOptions

    func validate() throws {
        let range = StoryLoader.concurrencyRange
        guard range.contains(concurrency) else {
            throw ValidationError("--concurrency must be between \(range.lowerBound) and \(range.upperBound).")
        }
        guard StoryLoader.Sort(rawValue: sort.lowercased()) != nil else {
            throw ValidationError("unknown --sort '\(sort)'; expected rank, score or time.")
        }
        if list.lowercased() == "item" {
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
        let context = try common.makeContext()
        if let storyList = HackerNews.StoryList(rawValue: list.lowercased()) {
            try await showList(storyList, context: context)
        } else if let id {
            try await showItem(id, context: context)
        }
    }

    // MARK: - A story list

    private func showList(_ storyList: HackerNews.StoryList, context: AppContext) async throws {
        let loader = StoryLoader(context: context, concurrency: concurrency)
        let order = StoryLoader.Sort(rawValue: sort.lowercased()) ?? .rank
        let bar = ProgressLine(noun: "stories")
        let page: StoryPage
        do {
            page = try await loader.load(storyList, limit: limit, sort: order, force: common.refresh) { progress in
                bar.show(progress.completed, of: progress.total)
            }
        } catch {
            bar.clear()
            throw report(error, subject: "the Hacker News \(storyList.rawValue) list")
        }
        bar.clear()

        if page.stories.isEmpty, let failure = page.failures.first {
            reportFailures(page.failures, noun: "stories")
            throw report(failure.error, subject: "item \(failure.id)")
        }
        if common.json {
            try printJSON(page.stories, encoder: HackerNews.encoder)
        } else if page.stories.isEmpty {
            printError("no stories in the \(storyList.rawValue) list.")
        } else {
            let header = Terminal.stdoutIsTTY
            output(HNFormat.storyLines(page.stories, width: Terminal.width, header: header).joined(separator: "\n"))
        }
        if !page.skipped.isEmpty {
            let count = page.skipped.count
            printError("note: skipped \(count) deleted or dead item\(count == 1 ? "" : "s").")
        }
        reportFailures(page.failures, noun: "stories")
        if let reason = Self.staleSummary(page.staleReasons) {
            try finishStale(reason: reason, allowStale: common.allowStale)
        }
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
            try printJSON(thread, encoder: HackerNews.encoder)
        } else {
            output(HNFormat.threadLines(thread, width: Terminal.width).joined(separator: "\n"))
        }
        reportFailures(thread.failures, noun: "comments")
        if let reason = Self.staleSummary(thread.staleReasons) {
            try finishStale(reason: reason, allowStale: common.allowStale)
        }
    }

    /// The first reason a stored response was served stale, and how many more there were.
    static func staleSummary(_ reasons: [String]) -> String? {
        guard let first = reasons.first else { return nil }
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
        printError("warning: \(failures.count) item\(failures.count == 1 ? "" : "s") left out; the other \(noun) are shown.")
    }
}

/// A one-line progress bar on stderr ("[=====>    ] 142/500 stories"), only when stderr is a
/// terminal; cleared when done.
final class ProgressLine {
    private let noun: String
    private let enabled = Terminal.stderrIsTTY
    private var drawn = false
    private var last = ""

    init(noun: String) {
        self.noun = noun
    }

    func show(_ completed: Int, of total: Int) {
        guard enabled, total > 0 else { return }
        let cells = 24
        let filled = min(cells, completed * cells / total)
        let bar = String(repeating: "=", count: filled) + (filled < cells ? ">" : "")
            + String(repeating: " ", count: max(0, cells - filled - 1))
        let text = "[\(bar)] \(completed)/\(total) \(noun)"
        guard text != last else { return }
        last = text
        drawn = true
        FileHandle.standardError.write(Data("\r\u{1B}[2K\(text)".utf8))
    }

    func clear() {
        guard drawn else { return }
        drawn = false
        FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
    }
}

/// How Hacker News looks in a terminal.
enum HNFormat {
    /// One aligned row per story: rank, score, title, site, author, age, comment count; cut to
    /// `width`. With `header`, a first line names the columns.
    static func storyLines(_ stories: [RankedStory], width: Int, header: Bool, now: Date = Date()) -> [String] {
        var rows = stories.map { story -> [String] in
            let item = story.item
            return [
                "\(story.rank).", item.score.map(String.init) ?? "",
                item.displayTitle.map(singleLine) ?? "(untitled)", singleLine(story.domain), singleLine(item.by ?? ""),
                item.date.map { TextLayout.relativeTime($0, now: now) } ?? "",
                item.descendants.map(String.init) ?? "",
            ]
        }
        var names = ["#", "score", "title", "site", "by", "age", "comments"]
        var caps: [Int?] = [nil, nil, nil, 22, 15, nil, nil]
        func drop(_ column: Int) {
            for index in rows.indices { rows[index].remove(at: column) }
            names.remove(at: column)
            caps.remove(at: column)
        }
        // A column empty in every row (no comment counts among jobs) gives its room to the title.
        for column in (0..<names.count).reversed() where names[column] != "title" {
            if rows.allSatisfy({ $0[column].isEmpty }) { drop(column) }
        }
        if header { rows.insert(names, at: 0) }
        // On a narrow terminal the site, then the author, then the age make way for the title.
        var titleWidth = 0
        for expendable in ["", "site", "by", "age"] {
            if let column = names.firstIndex(of: expendable) { drop(column) }
            var fixed = 0
            for column in names.indices where names[column] != "title" {
                let widest = rows.map { TextLayout.width($0[column]) }.max() ?? 0
                fixed += min(widest, caps[column] ?? .max)
            }
            titleWidth = width - fixed - 2 * (names.count - 1)
            if titleWidth >= 30 { break }
        }
        let titleColumn = names.firstIndex(of: "title") ?? 0
        caps[titleColumn] = max(20, titleWidth)
        let alignRight: Set<String> = ["#", "score", "age", "comments"]
        let right = Set(names.indices.filter { alignRight.contains(names[$0]) })
        let lines = TextLayout.columns(rows, widths: caps, alignRight: right).map { line in
            var line = TextLayout.truncate(line, to: width)
            while line.last == " " { line.removeLast() }
            return line
        }
        guard header, Terminal.colorEnabled, let first = lines.first else { return lines }
        return [first.dim] + lines.dropFirst()
    }

    /// The item's header and text, then every comment indented two spaces per level.
    static func threadLines(_ thread: CommentThread, width: Int, now: Date = Date()) -> [String] {
        let root = thread.root
        var lines: [String] = []
        if let title = root.displayTitle {
            lines.append(Terminal.colorEnabled ? singleLine(title).bold : singleLine(title))
        }
        if let url = root.url, !url.isEmpty { lines.append(url) }
        var meta: [String] = []
        if let score = root.score, root.type != .comment { meta.append("\(score) point\(score == 1 ? "" : "s")") }
        var byline = root.by.map { "by \($0)" } ?? ""
        if let date = root.date { byline += (byline.isEmpty ? "" : " ") + TextLayout.relativeTime(date, now: now) }
        if !byline.isEmpty { meta.append(byline) }
        if let count = root.descendants { meta.append("\(count) comment\(count == 1 ? "" : "s")") }
        if root.type == .comment, let parent = root.parent { meta.append("reply to \(parent)") }
        if root.deleted == true { meta.append("[deleted]") }
        if root.dead == true { meta.append("[dead]") }
        meta.append("id \(root.id)")
        lines.append(meta.joined(separator: " | "))
        if let text = root.text, !text.isEmpty {
            lines.append("")
            lines += textLines(text, indent: 0, width: width)
        }
        if !thread.pollOptions.isEmpty {
            lines.append("")
            let rows = thread.pollOptions.map { option in
                ["  " + (option.text.map(CommentText.plain) ?? "?"), option.score.map { "\($0)" } ?? ""]
            }
            lines += TextLayout.columns(rows, alignRight: [1])
        }
        for node in thread.flattened {
            let indent = 2 * (node.depth + 1)
            let pad = String(repeating: " ", count: indent)
            let item = node.item
            lines.append("")
            var parts: [String] = []
            if item.deleted == true {
                parts.append("[deleted]")
            } else if item.dead == true {
                parts.append("[dead]")
            } else {
                parts.append(item.by ?? "?")
            }
            if let date = item.date, item.isVisible { parts.append(TextLayout.relativeTime(date, now: now)) }
            parts.append("id \(item.id)")
            let header = TextLayout.truncate(pad + parts.joined(separator: " · "), to: width)
            lines.append(Terminal.colorEnabled ? header.dim : header)
            if item.isVisible, let text = item.text {
                lines += textLines(text, indent: indent, width: width)
            }
        }
        return lines
    }

    /// Comment HTML as wrapped lines, each starting with `indent` spaces; blank lines between
    /// paragraphs, code blocks kept as they are.
    static func textLines(_ html: String, indent: Int, width: Int) -> [String] {
        let pad = String(repeating: " ", count: indent)
        let available = max(20, width - indent)
        var lines: [String] = []
        for (index, block) in CommentText.blocks(html).enumerated() {
            if index > 0 { lines.append("") }
            switch block {
            case .paragraph(let text):
                lines += wrap(singleLine(text), width: available).map { pad + $0 }
            case .code(let text):
                lines += text.split(separator: "\n", omittingEmptySubsequences: false).map { pad + singleLine(String($0)) }
            }
        }
        return lines
    }

    /// `text` broken into lines of at most `width` columns at spaces; a longer word (a URL)
    /// gets a line of its own.
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        var used = 0
        for word in text.split(separator: " ") {
            let columns = TextLayout.width(word)
            if used > 0, used + 1 + columns > width {
                lines.append(line)
                line = ""
                used = 0
            }
            if used > 0 {
                line += " "
                used += 1
            }
            line += word
            used += columns
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }

    /// Control characters (newlines, tabs, escapes) replaced by spaces: a title is one line.
    static func singleLine(_ text: String) -> String {
        // The control characters (general category Cc) are exactly U+0000–U+001F and U+007F–U+009F:
        // in UTF-8, bytes 00–1F and 7F, and C2 80–C2 9F. Text without them is returned as it is.
        var utf8 = text.utf8.makeIterator()
        var previous: UInt8 = 0
        var clean = true
        while let byte = utf8.next() {
            if byte < 0x20 || byte == 0x7F || (previous == 0xC2 && byte < 0xA0) {
                clean = false
                break
            }
            previous = byte
        }
        if clean { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.map { scalar in
            scalar.value < 0x20 || (0x7F..<0xA0).contains(scalar.value) ? " " : scalar
        }))
    }
}
