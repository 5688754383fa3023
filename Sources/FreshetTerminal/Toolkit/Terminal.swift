import Foundation
@preconcurrency import Rainbow
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the terminal can do, decided once per process.
public enum Terminal {
    /// Standard output is a terminal.
    public static let stdoutIsTTY = isatty(STDOUT_FILENO) == 1
    /// Standard error is a terminal.
    public static let stderrIsTTY = isatty(STDERR_FILENO) == 1
    /// Standard input is a terminal.
    public static let stdinIsTTY = isatty(STDIN_FILENO) == 1

    /// Colour only on a terminal, never with `NO_COLOR` set (to anything) or `TERM=dumb`.
    public static let colorEnabled: Bool = {
        // getenv: ProcessInfo's environment builds the whole dictionary at every read.
        guard getenv("NO_COLOR") == nil, variable("TERM") != "dumb" else { return false }
        return stdoutIsTTY
    }()

    /// The width of the terminal in columns (`COLUMNS`, the tty's size, else 100).
    public static var width: Int {
        if let columns = variable("COLUMNS").flatMap(Int.init), columns > 20 { return columns }
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 20 { return Int(size.ws_col) }
        return 100
    }

    /// The height of the terminal in rows (`LINES`, the tty's size, else 24).
    public static var height: Int {
        if let lines = variable("LINES").flatMap(Int.init), lines > 2 { return lines }
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 2 { return Int(size.ws_row) }
        return 24
    }

    /// The environment variable `name` (read with getenv, not through a dictionary of them all).
    private static func variable(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Makes Rainbow, the one way text is styled here, follow ``colorEnabled``: styles on a
    /// colour terminal, plain text everywhere else. Call it once, before anything is drawn.
    public static func configure() {
        // With colour off, Rainbow is never asked: every style is applied under a `color` flag or
        // through `styled(_:_:)`. Setting it would run its start-up, which reads the whole
        // environment into a dictionary (some 0.5M instructions of every command's start).
        guard colorEnabled else { return }
        Rainbow.enabled = true
        Rainbow.outputTarget = .console
    }

    /// `text` in `style` (a Rainbow style: `\.dim`, `\.yellow`) when ``colorEnabled``, else as it is.
    public static func styled(_ text: String, _ style: KeyPath<String, String>) -> String {
        colorEnabled ? text[keyPath: style] : text
    }
}
