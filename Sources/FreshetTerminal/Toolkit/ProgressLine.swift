import Foundation

/// A one-line progress bar on stderr (`[=====>    ] 142/500 stories`), drawn only when stderr
/// is a terminal, redrawn in place and cleared when done.
public final class ProgressLine {
    private let noun: String
    private let enabled: Bool
    private let write: (String) -> Void
    private var drawn = false
    private var last = ""

    /// A bar counting `noun`.
    /// - Parameters:
    ///   - noun: what is counted (`stories`, `comments`).
    ///   - enabled: whether to draw at all (by default, when stderr is a terminal).
    ///   - write: where the bar goes (by default, stderr).
    public init(noun: String, enabled: Bool = Terminal.stderrIsTTY,
                write: @escaping (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }) {
        self.noun = noun
        self.enabled = enabled
        self.write = write
    }

    /// `[=====>    ] 142/500 stories`: 24 cells, the head `>` until the bar is full.
    public static func text(_ completed: Int, of total: Int, noun: String) -> String {
        let cells = 24
        let filled = total > 0 ? min(cells, completed * cells / total) : 0
        let bar = String(repeating: "=", count: filled) + (filled < cells ? ">" : "")
            + String(repeating: " ", count: max(0, cells - filled - 1))
        return "[\(bar)] \(completed)/\(total) \(noun)"
    }

    /// Draws `completed` of `total`, unless the line would not change.
    public func show(_ completed: Int, of total: Int) {
        guard enabled, total > 0 else { return }
        let text = Self.text(completed, of: total, noun: noun)
        guard text != last else { return }
        last = text
        drawn = true
        write(ANSI.clearLine + text)
    }

    /// Erases the bar, if one was drawn.
    public func clear() {
        guard drawn else { return }
        drawn = false
        write(ANSI.clearLine)
    }
}
