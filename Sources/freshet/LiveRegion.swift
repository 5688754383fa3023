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
final class LiveRegion: Sendable {
    private struct State {
        var drawn = 0
        var pending: (@Sendable () -> [String])?
        var finished = false
        var ticker: Task<Void, Never>?
    }

    private let state = Mutex(State())
    private let height: Int

    init(interval: Duration = .milliseconds(33), height: Int = Terminal.height) {
        self.height = max(2, height)
        let ticker = Task { [weak self] in
            while !Task.isCancelled {
                guard let self else { return }
                self.drawPending()
                try? await Task.sleep(for: interval)
            }
        }
        state.withLock { $0.ticker = ticker }
    }

    /// Makes `frame` the next frame to draw (each line already cut to the terminal's width). It
    /// is called on the ticker, once, and only if no newer frame replaced it by then.
    func update(_ frame: @escaping @Sendable () -> [String]) {
        state.withLock { $0.pending = frame }
    }

    /// Stops drawing, clears what was drawn and prints `lines`, the command's final output.
    func finish(with lines: [String]) {
        state.withLock { state in
            state.finished = true
            state.ticker?.cancel()
            Self.write(Self.erase(state.drawn) + (lines.isEmpty ? "" : lines.joined(separator: "\n") + "\n"))
            state.drawn = 0
        }
    }

    /// Stops drawing and clears what was drawn, leaving the cursor where the region began.
    func clear() {
        finish(with: [])
    }

    private func drawPending() {
        state.withLock { state in
            guard !state.finished, let frame = state.pending else { return }
            state.pending = nil
            let shown = frame().prefix(height - 1)
            Self.write(Self.erase(state.drawn) + shown.map { $0 + "\n" }.joined())
            state.drawn = shown.count
        }
    }

    private static func erase(_ drawn: Int) -> String {
        drawn > 0 ? "\r\u{1B}[\(drawn)A\u{1B}[J" : ""
    }

    private static func write(_ text: String) {
        guard !text.isEmpty else { return }
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}
