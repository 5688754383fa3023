import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A key press, decoded from the bytes a terminal in raw mode sends.
enum Key: Equatable, Sendable {
    /// A printable character (any script; multi-byte UTF-8 is decoded).
    case character(Character)
    case enter, escape, backspace, delete, tab
    case up, down, left, right, home, end, pageUp, pageDown
    /// Ctrl and a letter (`ctrl("c")` is Ctrl-C).
    case ctrl(Character)
}

/// Turns terminal input bytes into ``Key``s: UTF-8 text, control characters, and the CSI / SS3
/// sequences of arrow and editing keys. Incomplete input (a lone ESC, half a UTF-8 character,
/// half an escape sequence) is kept until more bytes arrive or ``flush()`` says none will.
struct KeyParser {
    private var pending: [UInt8] = []

    /// Feeds bytes; returns the keys they complete.
    mutating func feed(_ bytes: some Sequence<UInt8>) -> [Key] {
        pending.append(contentsOf: bytes)
        var keys: [Key] = []
        var index = 0
        while index < pending.count {
            guard let (key, length) = Self.parse(pending[index...]) else { break }
            if let key { keys.append(key) }
            index += length
        }
        pending.removeFirst(index)
        return keys
    }

    /// Whether bytes are waiting for the rest of a sequence.
    var hasPending: Bool { !pending.isEmpty }

    /// No more bytes are coming soon: a waiting lone ESC is the Escape key; anything else
    /// incomplete is dropped.
    mutating func flush() -> [Key] {
        defer { pending.removeAll() }
        return pending.first == 0x1B ? [.escape] : []
    }

    /// One key from the front of `bytes` and how many bytes it used (`nil` key: bytes to
    /// ignore), or `nil` when more bytes are needed.
    private static func parse(_ bytes: ArraySlice<UInt8>) -> (Key?, Int)? {
        let start = bytes.startIndex
        let first = bytes[start]
        switch first {
        case 0x1B:
            guard bytes.count >= 2 else { return nil }
            let second = bytes[start + 1]
            if second == UInt8(ascii: "[") || second == UInt8(ascii: "O") {
                // CSI: parameters 0x30–0x3F, intermediates 0x20–0x2F, final 0x40–0x7E.
                var end = start + 2
                while end < bytes.endIndex, (0x20...0x3F).contains(bytes[end]) { end += 1 }
                guard end < bytes.endIndex else { return nil }
                let final = bytes[end]
                let parameters = String(decoding: bytes[(start + 2)..<end], as: UTF8.self)
                let length = end - start + 1
                switch final {
                case UInt8(ascii: "A"): return (.up, length)
                case UInt8(ascii: "B"): return (.down, length)
                case UInt8(ascii: "C"): return (.right, length)
                case UInt8(ascii: "D"): return (.left, length)
                case UInt8(ascii: "H"): return (.home, length)
                case UInt8(ascii: "F"): return (.end, length)
                case UInt8(ascii: "~"):
                    switch parameters {
                    case "1", "7": return (.home, length)
                    case "4", "8": return (.end, length)
                    case "3": return (.delete, length)
                    case "5": return (.pageUp, length)
                    case "6": return (.pageDown, length)
                    default: return (nil, length)
                    }
                default: return (nil, length)
                }
            }
            if second == 0x1B { return (.escape, 1) }
            // Alt+key: ignore the ESC, keep the key.
            return (nil, 1)
        case 0x0D, 0x0A: return (.enter, 1)
        case 0x7F, 0x08: return (.backspace, 1)
        case 0x09: return (.tab, 1)
        case 0x01...0x1A:
            return (.ctrl(Character(Unicode.Scalar(first + 0x60))), 1)
        case 0x00, 0x1C...0x1F: return (nil, 1)
        default:
            let length: Int
            switch first {
            case 0xC0...0xDF: length = 2
            case 0xE0...0xEF: length = 3
            case 0xF0...0xF7: length = 4
            case 0x80...0xBF, 0xF8...0xFF: return (nil, 1)
            default: length = 1
            }
            guard bytes.count >= length else { return nil }
            let text = String(decoding: bytes[start..<(start + length)], as: UTF8.self)
            guard let character = text.first, text.unicodeScalars.first != "\u{FFFD}" else { return (nil, length) }
            return (.character(character), length)
        }
    }
}

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
        let leave: StaticString = "\u{1B}[?25h\u{1B}[?1049l"
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
final class TerminalUI {
    /// Whether the alternate screen is used (the user's scrollback stays untouched).
    let alternateScreen: Bool

    private init(alternateScreen: Bool) {
        self.alternateScreen = alternateScreen
    }

    /// Whether both standard input and standard output are terminals.
    static var isInteractive: Bool { isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 }

    /// Enters raw mode (and the alternate screen).
    /// - Throws: when standard input is not a terminal whose settings can be changed.
    static func start(alternateScreen: Bool = true) throws -> TerminalUI {
        var settings = termios()
        guard tcgetattr(STDIN_FILENO, &settings) == 0 else {
            throw CommandFailure(message: "standard input is not a terminal (\(String(cString: strerror(errno))))")
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
            throw CommandFailure(message: "could not switch the terminal to raw mode (\(String(cString: strerror(errno))))")
        }
        rawModeActive = 1
        let ui = TerminalUI(alternateScreen: alternateScreen)
        if alternateScreen {
            alternateScreenActive = 1
            ui.write("\u{1B}[?1049h\u{1B}[H\u{1B}[2J")
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
    func restore() {
        restoreTerminalNow()
    }

    /// The terminal's size (columns, rows); 80×24 when unknown.
    var size: (columns: Int, rows: Int) {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 {
            return (Int(size.ws_col), Int(size.ws_row))
        }
        return (80, 24)
    }

    /// Writes `text` to the terminal at once (no buffering).
    func write(_ text: String) {
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
    func keys() -> AsyncStream<Key> {
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
