import Foundation
import FreshetFeeds
import FreshetTerminal
import HackerNewsAPI
@preconcurrency import Rainbow
import Synchronization

/// `freshet hn --live` on a terminal: a status line over the shown stories, redrawn in place
/// (``LiveRegion``) whenever either changes; ``finish()`` leaves the last list on screen.
final class LiveScreen: Sendable {
    private struct State {
        var status: LiveStories.Status = .connecting(connection: 1)
        var stories: [RankedStory] = []
        var updated: Date?
    }

    private let region = LiveRegion()
    private let state = Mutex(State())
    private let list: HackerNews.StoryList

    init(list: HackerNews.StoryList) {
        self.list = list
    }

    /// The connection's state changed.
    func show(_ status: LiveStories.Status) {
        state.withLock { $0.status = status }
        redraw()
    }

    /// The shown stories changed.
    func show(_ stories: [RankedStory]) {
        state.withLock {
            $0.stories = stories
            $0.updated = Date()
        }
        redraw()
    }

    /// Stops redrawing; the last stories stay on screen, without the status line.
    func finish() {
        let stories = state.withLock { $0.stories }
        region.finish(with: HNFormat.storyLines(stories, width: Terminal.width, header: false, color: Terminal.colorEnabled))
    }

    /// Asks for a frame of the state as it is when the frame is drawn (two callers racing cannot
    /// leave the older state on screen).
    private func redraw() {
        let list = self.list
        region.update { [self] in
            let current = state.withLock { $0 }
            let (width, color) = (Terminal.width, Terminal.colorEnabled)
            let line = TextLayout.truncate(Self.text(current.status, list: list, updated: current.updated), to: width)
            return [color ? line.dim : line] + HNFormat.storyLines(current.stories, width: width, header: false, color: color)
        }
    }

    /// The status line: "● live · top stories · updated 12:04:31 · Ctrl-C to stop".
    static func text(_ status: LiveStories.Status, list: HackerNews.StoryList, updated: Date? = nil) -> String {
        let name = "\(list.rawValue) stories"
        let time = updated.map { " · updated \($0.formatted(date: .omitted, time: .standard))" } ?? ""
        switch status {
        case .connecting(let connection):
            return connection == 1 ? "connecting to the \(name) stream…" : "reconnecting to the \(name) stream…"
        case .live:
            return "● live · \(name)\(time) · Ctrl-C to stop"
        case .reconnecting(let after, let reason):
            return "reconnecting in \(Self.seconds(after)) · \(reason)"
        case .polling(let every):
            return "polling every \(Self.seconds(every)) (the server does not stream) · \(name)\(time) · Ctrl-C to stop"
        }
    }

    /// `2s`, `0.5s`.
    static func seconds(_ duration: Duration) -> String {
        let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return value >= 1 || value == 0 ? "\(Int(value.rounded()))s" : String(format: "%.1fs", value)
    }
}
