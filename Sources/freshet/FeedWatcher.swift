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

    func run(initial: [FeedEntry], interval: Int) async throws {
        let watcher = self
        do {
            if try await untilInterrupted({ try await watcher.loop(initial: initial, interval: interval) }) {
                printError("stopped watching.")
            }
        } catch let error as APIError where error == .cancelled {
            printError("stopped watching.")
        }
    }

    private func loop(initial: [FeedEntry], interval first: Int) async throws {
        var shown = initial
        var interval = first
        while true {
            let next = Date().addingTimeInterval(TimeInterval(interval))
            printError(status(next: next).dim)
            try await Task.sleep(for: .seconds(interval))
            let results = await feed.refresh(repositories, force: true)
            var intervals: [Int] = []
            for result in results {
                switch result {
                case .success(let refresh):
                    if let poll = refresh.pollInterval { intervals.append(poll) }
                    if let reason = refresh.staleReason { printError("warning: refresh failed: \(reason)") }
                case .failure(let error):
                    if error == .cancelled { throw CancellationError() }
                    printError("warning: refresh failed: \(explain(error, subject: "the feed"))")
                }
            }
            interval = Self.interval(intervals)
            let events = await feed.stored(repositories, limit: limit)
            let known = Set(shown.map(\.id))
            let fresh = events.filter { !known.contains($0.id) }
            if Terminal.stdoutIsTTY {
                if !fresh.isEmpty {
                    // Redraw with the new events on top.
                    FileHandle.standardOutput.write(Data(ANSI.clearScreen.utf8))
                    output(FeedFormat.lines(events, multi: multi, width: Terminal.width, color: Terminal.colorEnabled).joined(separator: "\n"))
                }
            } else if !fresh.isEmpty {
                output(FeedFormat.lines(fresh, multi: multi, width: Terminal.width, color: Terminal.colorEnabled).joined(separator: "\n"))
            }
            shown = events
        }
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
