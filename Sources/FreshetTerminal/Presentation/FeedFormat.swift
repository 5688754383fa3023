import Foundation
import FreshetFeeds
import GitHubAPI
@preconcurrency import Rainbow

/// How feed rows look: `3m ago  octocat  starred`, with the repository in multi-repo views.
public enum FeedFormat {
    /// One row per event, cut to `width`: age, actor, the repository when `multi`, what
    /// happened; stars, releases and forks in colour when `color` is on.
    public static func lines(_ events: [FeedEntry], multi: Bool, width: Int, color: Bool, now: Date = Date()) -> [String] {
        let rows = events.map { event -> [String] in
            var row = [TextLayout.relativeTime(event.createdAt, now: now), event.actor]
            if multi { row.append(event.repository) }
            row.append(event.activity)
            return row
        }
        let fixed: [Int?] = multi ? [8, 20, 34, nil] : [8, 20, nil]
        return TextLayout.columns(rows, widths: fixed, alignRight: [0]).map { line in
            TextLayout.truncate(line, to: width)
        }.enumerated().map { index, line in
            color ? colorize(line, event: events[index]) : line
        }
    }

    private static func colorize(_ line: String, event: FeedEntry) -> String {
        switch event.type {
        case .watch: return line.yellow
        case .release: return line.green
        case .fork: return line.cyan
        default: return line
        }
    }
}
