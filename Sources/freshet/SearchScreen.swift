import Foundation
import Freshet
import FreshetFeeds
import FreshetTerminal
@preconcurrency import Rainbow

/// What a search-as-you-type screen shows for one kind of result (`repos`, `blogs`).
protocol SearchScreenContent {
    associatedtype Results: Sendable
    /// The prompt before the field, e.g. `repos`.
    var prompt: String { get }
    /// How many items `results` has.
    func count(_ results: Results) -> Int
    /// One line per item, each at most `width` columns.
    func rows(_ results: Results, width: Int, color: Bool) -> [String]
    /// The status line for results that arrived for `query`.
    func summary(_ results: Results, query: String) -> String
    /// Extra key help for the status line (e.g. the sort key).
    var keyHelp: String { get }
    /// A person's one-line explanation of a failed query.
    func explain(_ error: APIError) -> String
    /// Handles a key the screen does not; `true` when the list changed (the selection resets).
    mutating func handle(_ key: Key) -> Bool
}

extension SearchScreenContent {
    var keyHelp: String { "" }
    mutating func handle(_ key: Key) -> Bool { false }

    func explain(_ error: APIError) -> String { defaultExplanation(error) }

    /// The screen's standard explanation: a countdown for rate limits, else the error's description.
    func defaultExplanation(_ error: APIError) -> String {
        if case .rateLimited(let resetAt, _, _, _) = error {
            var text = "rate limit reached"
            if let resetAt {
                let seconds = max(0, Int(resetAt.timeIntervalSinceNow.rounded(.up)))
                text += seconds > 0 ? " — resets in \(seconds)s" : " — it has reset; edit the query to search again"
            }
            return text
        }
        return TextLayout.singleLine(error.description)
    }
}

/// How a search screen ended.
enum SearchScreenOutcome<Results: Sendable> {
    /// Enter on the item at `index` of `results` (in the order shown).
    case selected(Results, index: Int)
    /// Esc, Ctrl-C or Ctrl-D.
    case quit
}

/// The interactive search shared by `freshet repos` and `freshet blogs`: a prompt line, a status
/// line (spinner, counts, errors with the rate-limit countdown) and the result list. Every edit
/// of the field goes into one ``SearchSession`` (debounce, drop empty, remove duplicates,
/// switch to latest); ↑/↓ select, Enter picks, Esc or Ctrl-C quits.
struct SearchScreen<Content: SearchScreenContent> {
    var content: Content
    let session: SearchSession<Content.Results>
    let color: Bool

    /// Runs the screen on `terminal` until the user picks an item or quits.
    mutating func run(on terminal: TerminalUI) async -> SearchScreenOutcome<Content.Results> {
        let (events, sink) = AsyncStream.makeStream(of: SearchScreenEvent<Content.Results>.self)
        let (field, fieldSink) = AsyncStream.makeStream(of: String.self)
        let keys = terminal.keys()
        let keyTask = Task {
            for await key in keys { sink.yield(.key(key)) }
            sink.yield(.inputEnded)
        }
        let updates = session.updates(for: field)
        let updateTask = Task {
            for await update in updates { sink.yield(.update(update)) }
        }
        let tickTask = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(100))
                sink.yield(.tick)
            }
        }
        defer {
            fieldSink.finish()
            keyTask.cancel()
            updateTask.cancel()
            tickTask.cancel()
            sink.finish()
        }

        var view = ViewState()
        render(&view, on: terminal)
        for await event in events {
            switch event {
            case .key(let key):
                switch key {
                case .escape, .ctrl("c"), .ctrl("d"):
                    return .quit
                case .enter:
                    if let results = view.search.results, content.count(results) > 0 {
                        return .selected(results, index: min(view.selected, content.count(results) - 1))
                    }
                case .up:
                    view.selected = max(0, view.selected - 1)
                case .down:
                    view.selected = min(max(0, view.count(content) - 1), view.selected + 1)
                case .pageUp:
                    view.selected = max(0, view.selected - view.pageSize)
                case .pageDown:
                    view.selected = min(max(0, view.count(content) - 1), view.selected + view.pageSize)
                case .backspace:
                    if !view.text.isEmpty {
                        view.text.removeLast()
                        fieldSink.yield(view.text)
                    }
                case .ctrl("u"):
                    view.text = ""
                    fieldSink.yield(view.text)
                case .ctrl("w"):
                    let trimmed = view.text.reversed().drop { $0 == " " }.drop { $0 != " " }
                    view.text = String(trimmed.reversed())
                    fieldSink.yield(view.text)
                case .character(let character):
                    view.text.append(character)
                    fieldSink.yield(view.text)
                default:
                    if content.handle(key) { view.selected = 0 }
                }
            case .update(let update):
                view.search.apply(update)
                if case .results = update { view.selected = 0 }
            case .tick:
                view.frame += 1
                guard view.needsTicks else { continue }
            case .inputEnded:
                return .quit
            }
            render(&view, on: terminal)
        }
        return .quit
    }

    private struct ViewState {
        var text = ""
        var search = SearchState<Content.Results>()
        var selected = 0
        var scroll = 0
        var frame = 0
        var pageSize = 10

        func count(_ content: Content) -> Int { search.results.map(content.count) ?? 0 }

        /// Loading spinners and rate-limit countdowns move with the clock.
        var needsTicks: Bool {
            if search.isLoading { return true }
            if case .rateLimited? = search.error { return true }
            return false
        }
    }

    private static var spinner: [String] { ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"] }

    private func render(_ view: inout ViewState, on terminal: TerminalUI) {
        let (columns, rows) = terminal.size
        let width = max(columns - 1, 10)
        let prompt = content.prompt + "› "
        let promptWidth = TextLayout.width(prompt)
        // Show the end of a field too long for the line.
        var shown = view.text
        while TextLayout.width(shown) > width - promptWidth - 1, !shown.isEmpty { shown.removeFirst() }
        var lines = [(color ? prompt.bold : prompt) + shown]

        let help = "↑↓ select · Enter details · Esc quit" + (content.keyHelp.isEmpty ? "" : " · " + content.keyHelp)
        var status: String
        var statusIsError = false
        if view.search.isLoading, let query = view.search.query {
            status = Self.spinner[view.frame % Self.spinner.count] + " searching “\(query)”…"
        } else if let error = view.search.error {
            status = "! " + content.explain(error)
            statusIsError = true
        } else if let results = view.search.results, let query = view.search.resultsQuery {
            status = content.summary(results, query: query) + " · " + help
        } else {
            status = "type to search · " + help
        }
        status = TextLayout.truncate(status, to: width)
        if color { status = statusIsError ? status.red : status.dim }
        lines.append(status)

        let visible = max(rows - lines.count, 1)
        view.pageSize = visible
        if let results = view.search.results {
            let items = content.rows(results, width: width - 2, color: color)
            let selected = min(view.selected, max(items.count - 1, 0))
            var scroll = min(view.scroll, max(items.count - visible, 0))
            if selected < scroll { scroll = selected }
            if selected >= scroll + visible { scroll = selected - visible + 1 }
            view.scroll = scroll
            for index in scroll..<min(items.count, scroll + visible) {
                if index == selected {
                    lines.append(color ? ("› " + items[index]).swap : "› " + items[index])
                } else {
                    lines.append("  " + items[index])
                }
            }
        }

        var frame = ANSI.hideCursor + ANSI.home
        frame += lines.joined(separator: ANSI.eraseToLineEnd + "\r\n") + ANSI.eraseToLineEnd + ANSI.eraseBelow
        frame += ANSI.moveTo(row: 1, column: promptWidth + TextLayout.width(shown) + 1) + ANSI.showCursor
        terminal.write(frame)
    }
}

/// What the screen's loop reacts to.
private enum SearchScreenEvent<Results: Sendable>: Sendable {
    case key(Key)
    case update(SearchUpdate<Results>)
    case tick
    case inputEnded
}
