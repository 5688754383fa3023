import Foundation
import Freshet
import FreshetFeeds
import FreshetTerminal
import GitHubAPI
@preconcurrency import Rainbow

/// `freshet feed --watch`: polls no faster than the server's `X-Poll-Interval` (GitHub: 60 s;
/// 60 s when it sends none), each poll a conditional request (an unchanged feed is a `304`),
/// shows new events on top as they arrive, and the rate-limit budget with the time of the next
/// poll. Ctrl-C ends it cleanly (exit 0).
struct FeedWatcher {
    let feed: FeedService
    let repositories: [RepositoryName]
    let limit: Int
    let multi: Bool
    let context: AppContext

    /// The wait between polls when the server names none.
    static let defaultInterval = 60

    /// The wait the server asks for (the longest of several feeds'), at least 1 s.
    static func interval(_ pollIntervals: [Int]) -> Int {
        max(1, pollIntervals.max() ?? defaultInterval)
    }

    /// Polls until Ctrl-C. `warnings`: what the first refresh said (failures), shown with the list.
    func run(initial: [FeedEntry], interval: Int, warnings: [String]) async throws {
        let watcher = self
        do {
            if try await untilInterrupted({ try await watcher.loop(initial: initial, interval: interval, warnings: warnings) }) {
                printError("stopped watching.")
            }
        } catch let error as APIError where error == .cancelled {
            printError("stopped watching.")
        }
    }

    private func loop(initial: [FeedEntry], interval firstInterval: Int, warnings firstWarnings: [String]) async throws {
        var shown = initial
        var interval = firstInterval
        var warnings = firstWarnings
        // On a terminal the list and the status line are redrawn in place, only as much as fits
        // on the screen (a list longer than the screen used to be drawn over the wrong rows).
        let screen = Terminal.stdoutIsTTY ? LiveRegion() : nil
        if screen != nil {
            FileHandle.standardOutput.write(Data(ANSI.clearScreen.utf8))
        } else {
            warnings.forEach(printError)
        }
        defer { screen?.finish(with: lines(shown)) }
        while true {
            let next = Date().addingTimeInterval(TimeInterval(interval))
            if let screen {
                // Warnings go in the frame: a line on standard error would move the rows under it.
                let frame = [Terminal.styled(status(next: next), \.dim)]
                    + warnings.map { Terminal.styled(TextLayout.truncate($0, to: Terminal.width), \.yellow) } + lines(shown)
                screen.update { frame }
            } else {
                printError(Terminal.styled(status(next: next), \.dim))
            }
            try await Task.sleep(for: .seconds(interval))
            let results = await feed.refresh(repositories, force: true)
            var intervals: [Int] = []
            warnings = []
            for result in results {
                switch result {
                case .success(let refresh):
                    if let poll = refresh.pollInterval { intervals.append(poll) }
                    if let reason = refresh.staleReason { warnings.append("warning: refresh failed: \(reason)") }
                case .failure(let error):
                    if error == .cancelled { throw CancellationError() }
                    warnings.append("warning: refresh failed: \(explain(error, subject: "the feed"))")
                }
            }
            if screen == nil { warnings.forEach(printError) }
            interval = Self.interval(intervals)
            let events = await feed.stored(repositories, limit: limit)
            let known = Set(shown.map(\.id))
            let fresh = events.filter { !known.contains($0.id) }
            if screen == nil, !fresh.isEmpty {
                output(lines(fresh).joined(separator: "\n"))
            }
            shown = events
        }
    }

    /// `events` as the feed's rows, cut to the terminal's width.
    private func lines(_ events: [FeedEntry]) -> [String] {
        FeedFormat.lines(events, multi: multi, width: Terminal.width, color: Terminal.colorEnabled)
    }

    /// "57/60 requests left (resets in 42m) · next poll 12:04:31 · Ctrl-C to stop"
    private func status(next: Date) -> String {
        var parts: [String] = []
        if let budget = context.rateLimits.budget(for: "core") {
            parts.append("\(budget.remaining)/\(budget.limit) requests left (resets \(TextLayout.relativeTime(budget.resetAt)))")
        }
        parts.append("next poll at \(next.formatted(date: .omitted, time: .standard))")
        parts.append("Ctrl-C to stop")
        return parts.joined(separator: " · ")
    }
}
