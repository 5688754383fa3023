import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - Raw mode and restoring the terminal

/// The terminal settings to put back, and whether the alternate screen is in use. Read by the
/// signal handlers, so kept in plain globals (only written while no handler can run).
nonisolated(unsafe) private var savedSettings = termios()
nonisolated(unsafe) private var rawModeActive: sig_atomic_t = 0
nonisolated(unsafe) private var alternateScreenActive: sig_atomic_t = 0
nonisolated(unsafe) private var previousActions: [sigaction] = Array(repeating: sigaction(), count: 65)
nonisolated(unsafe) private var handlersInstalled = false

/// The signals after which the terminal is restored: termination requests, and the crash
/// signals (Swift's runtime traps end in SIGILL or SIGTRAP).
private let restoringSignals: [Int32] = [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE]

/// Puts the terminal back as it was: cursor shown, main screen, saved settings. Uses only
/// async-signal-safe calls (`write`, `tcsetattr`), so signal handlers may call it.
private func restoreTerminalNow() {
    if alternateScreenActive != 0 {
        alternateScreenActive = 0
        let leave = ANSI.leaveFullScreen
        _ = write(STDOUT_FILENO, leave.utf8Start, leave.utf8CodeUnitCount)
    }
    if rawModeActive != 0 {
        rawModeActive = 0
        _ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &savedSettings)
    }
}

/// Restores the terminal, then lets the signal do what it did before (the previous handler, or
/// the default action: end the process, or crash with the runtime's backtrace).
private func restoreAndResignal(_ signalNumber: Int32) {
    restoreTerminalNow()
    if signalNumber >= 0, signalNumber < previousActions.count {
        _ = sigaction(signalNumber, &previousActions[Int(signalNumber)], nil)
    }
    _ = raise(signalNumber)
}

/// A terminal in raw mode for a full-screen UI: keys arrive one by one (no echo, no line
/// editing, Ctrl-C as a key), output goes to the alternate screen, and the terminal is put back
/// on ``restore()``, at exit, on SIGTERM/SIGINT/SIGHUP/SIGQUIT and on crash signals.
public final class TerminalUI {
    /// Whether the alternate screen is used (the user's scrollback stays untouched).
    public let alternateScreen: Bool

    private init(alternateScreen: Bool) {
        self.alternateScreen = alternateScreen
    }

    /// Whether both standard input and standard output are terminals.
    public static var isInteractive: Bool { isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 }

    /// Enters raw mode (and the alternate screen).
    /// - Throws: when standard input is not a terminal whose settings can be changed.
    public static func start(alternateScreen: Bool = true) throws -> TerminalUI {
        var settings = termios()
        guard tcgetattr(STDIN_FILENO, &settings) == 0 else {
            throw TerminalError("standard input is not a terminal (\(String(cString: strerror(errno))))")
        }
        savedSettings = settings
        installHandlers()
        var raw = settings
        raw.c_iflag &= ~tcflag_t(BRKINT | ICRNL | INPCK | ISTRIP | IXON)
        raw.c_cflag |= tcflag_t(CS8)
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | IEXTEN | ISIG)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        guard tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0 else {
            throw TerminalError("could not switch the terminal to raw mode (\(String(cString: strerror(errno))))")
        }
        rawModeActive = 1
        let ui = TerminalUI(alternateScreen: alternateScreen)
        if alternateScreen {
            alternateScreenActive = 1
            ui.write(ANSI.enterAlternateScreen + ANSI.clearScreen)
        }
        return ui
    }

    private static func installHandlers() {
        guard !handlersInstalled else { return }
        handlersInstalled = true
        atexit { restoreTerminalNow() }
        for signalNumber in restoringSignals {
            var action = sigaction()
            #if canImport(Glibc)
            action.__sigaction_handler.sa_handler = { restoreAndResignal($0) }
            #else
            action.__sigaction_u.__sa_handler = { restoreAndResignal($0) }
            #endif
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0
            _ = sigaction(signalNumber, &action, &previousActions[Int(signalNumber)])
        }
    }

    /// Puts the terminal back (idempotent).
    public func restore() {
        restoreTerminalNow()
    }

    /// The terminal's size (columns, rows); 80×24 when unknown.
    public var size: (columns: Int, rows: Int) {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 {
            return (Int(size.ws_col), Int(size.ws_row))
        }
        return (80, 24)
    }

    /// Writes `text` to the terminal at once (no buffering).
    public func write(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                systemWrite(STDOUT_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }

    /// The keys typed, read on a dedicated thread (a blocking read must never occupy a thread
    /// of Swift's cooperative pool). The stream ends when input ends.
    public func keys() -> AsyncStream<Key> {
        let (stream, continuation) = AsyncStream.makeStream(of: Key.self)
        let thread = Thread {
            var parser = KeyParser()
            var buffer = [UInt8](repeating: 0, count: 256)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                for key in parser.feed(buffer[0..<count]) { continuation.yield(key) }
                // A lone ESC or a partial sequence: wait briefly for the rest, else take it as is.
                while parser.hasPending {
                    var poller = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
                    if poll(&poller, 1, 40) > 0 {
                        let more = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
                        guard more > 0 else { break }
                        for key in parser.feed(buffer[0..<more]) { continuation.yield(key) }
                    } else {
                        for key in parser.flush() { continuation.yield(key) }
                    }
                }
            }
            continuation.finish()
        }
        thread.name = "freshet.keys"
        thread.start()
        return stream
    }
}

/// `write(2)`, named apart from ``TerminalUI/write(_:)``.
private func systemWrite(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, pointer, count)
}

/// The terminal could not be set up for a full-screen UI; the message says why, for the user.
public struct TerminalError: Error, CustomStringConvertible {
    /// What went wrong, e.g. "standard input is not a terminal (…)".
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}
