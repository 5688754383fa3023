import Foundation
import Synchronization

/// Lines drawn in place on a terminal and redrawn as they change: the `hn` list filling in as its
/// items land. Each frame moves the cursor back over the previous one and clears to the end of
/// the screen, in one write.
///
/// ``update(_:)`` only keeps the newest frame; a ticker draws it at most every `interval`, so a
/// burst of updates costs one frame and the newest state is always on screen within `interval`.
/// While live, only what fits on the screen is drawn (the rows above the last one), so the cursor
/// can always move back over all of it; ``finish(with:)`` then prints the final text whole, as a
/// pipe gets it, and the terminal scrolls as usual.
public final class LiveRegion: Sendable {
    private struct State {
        var drawn = 0
        var pending: (@Sendable () -> [String])?
        var finished = false
        var ticker: Task<Void, Never>?
    }

    private let state = Mutex(State())
    private let height: Int
    private let write: @Sendable (String) -> Void

    /// A region that draws the newest frame every `interval`.
    /// - Parameters:
    ///   - interval: the time between two frames at most.
    ///   - height: the screen's rows (the region draws at most one fewer).
    ///   - write: where frames go (by default, standard output).
    public init(interval: Duration = .milliseconds(33), height: Int = Terminal.height,
                write: @escaping @Sendable (String) -> Void = { FileHandle.standardOutput.write(Data($0.utf8)) }) {
        self.height = max(2, height)
        self.write = write
        let ticker = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard let self else { return }
                self.drawPending()
            }
        }
        state.withLock { $0.ticker = ticker }
    }

    /// Makes `frame` the next frame to draw (each line already cut to the terminal's width). It
    /// is called on the ticker, once, and only if no newer frame replaced it by then.
    public func update(_ frame: @escaping @Sendable () -> [String]) {
        state.withLock { $0.pending = frame }
    }

    /// Stops drawing, clears what was drawn and prints `lines`, the command's final output.
    public func finish(with lines: [String]) {
        let text = state.withLock { state in
            state.finished = true
            state.ticker?.cancel()
            let text = Self.erase(state.drawn) + (lines.isEmpty ? "" : lines.joined(separator: "\n") + "\n")
            state.drawn = 0
            return text
        }
        if !text.isEmpty { write(text) }
    }

    /// Stops drawing and clears what was drawn, leaving the cursor where the region began.
    public func clear() {
        finish(with: [])
    }

    /// Draws the pending frame, if there is one and the region is not finished (the ticker's
    /// work).
    func drawPending() {
        state.withLock { state in
            guard !state.finished, let frame = state.pending else { return }
            state.pending = nil
            let (text, drawn) = Self.redraw(frame(), over: state.drawn, height: height)
            write(text)
            state.drawn = drawn
        }
    }

    /// What replaces a frame of `drawn` lines with `lines` on a screen `height` rows high: the
    /// text to write, and how many lines it leaves drawn. Only the first `height - 1` lines are
    /// drawn, so the cursor (on the row below them) can always move back over every one.
    static func redraw(_ lines: [String], over drawn: Int, height: Int) -> (text: String, drawn: Int) {
        let shown = lines.prefix(max(1, height - 1))
        return (erase(drawn) + shown.map { $0 + "\n" }.joined(), shown.count)
    }

    /// Back over `drawn` lines and clear from there to the end of the screen.
    static func erase(_ drawn: Int) -> String {
        drawn > 0 ? "\r" + ANSI.cursorUp(drawn) + ANSI.eraseBelow : ""
    }
}
