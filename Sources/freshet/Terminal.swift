import Foundation
import FreshetFeeds
@preconcurrency import Rainbow
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the terminal can do, decided once per process.
enum Terminal {
    /// Standard output is a terminal.
    static let stdoutIsTTY = isatty(STDOUT_FILENO) == 1
    /// Standard error is a terminal.
    static let stderrIsTTY = isatty(STDERR_FILENO) == 1
    /// Standard input is a terminal.
    static let stdinIsTTY = isatty(STDIN_FILENO) == 1

    /// Colour only on a terminal, never with `NO_COLOR` set (to anything) or `TERM=dumb`.
    static let colorEnabled: Bool = {
        let environment = ProcessInfo.processInfo.environment
        guard environment["NO_COLOR"] == nil, environment["TERM"] != "dumb" else { return false }
        return stdoutIsTTY
    }()

    /// The width of the terminal in columns (`COLUMNS`, the tty's size, else 100).
    static var width: Int {
        if let columns = ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init), columns > 20 { return columns }
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 20 { return Int(size.ws_col) }
        return 100
    }

    /// The height of the terminal in rows (`LINES`, the tty's size, else 24).
    static var height: Int {
        if let lines = ProcessInfo.processInfo.environment["LINES"].flatMap(Int.init), lines > 2 { return lines }
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 2 { return Int(size.ws_row) }
        return 24
    }

    /// Rainbow colours only when ``colorEnabled`` says so.
    static func configure() {
        Rainbow.enabled = colorEnabled
    }
}

/// Writes to standard output, flushing so progress and results interleave correctly.
func output(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}
