import Foundation

/// A terminal protocol for showing images inline.
public enum InlineImageProtocol: String, Sendable, CaseIterable {
    /// The kitty graphics protocol (kitty, Ghostty, Konsole's subset): PNG data in
    /// `ESC _ G … ESC \` chunks of at most 4096 base64 bytes.
    case kitty
    /// iTerm2's inline images (`ESC ] 1337 ; File=… BEL`), also understood by WezTerm and
    /// Konsole: any format the terminal can decode (PNG, JPEG, GIF).
    case iterm2
}

/// Image bytes → the escape sequence that shows them in a terminal, and which protocol (if
/// any) the terminal speaks.
///
/// Detection reads only the environment: it never writes a query to the terminal and waits
/// for an answer, so it cannot hang, leave bytes in the input, or print garbage on a terminal
/// that does not understand the query.
public enum InlineImage {
    /// The image formats recognised by their first bytes.
    public enum Format: String, Sendable {
        /// PNG, JPEG or GIF (87a or 89a), each known by its first bytes (``InlineImage/format(of:)``).
        case png, jpeg, gif
    }

    /// The protocol the terminal described by `environment` speaks, or `nil` for none.
    ///
    /// - `nil` when `isTerminal` is false (output goes to a pipe or file), `TERM` is `dumb`, or
    ///   inside tmux or screen (they swallow the sequences unless passthrough is configured).
    /// - kitty for `TERM=xterm-kitty`, `KITTY_WINDOW_ID`, or Ghostty (`TERM=xterm-ghostty`,
    ///   `TERM_PROGRAM=ghostty`).
    /// - iTerm2 for `TERM_PROGRAM=iTerm.app`, `LC_TERMINAL=iTerm2`, or WezTerm
    ///   (`TERM_PROGRAM=WezTerm`).
    public static func detect(environment: [String: String], isTerminal: Bool) -> InlineImageProtocol? {
        guard isTerminal else { return nil }
        let term = environment["TERM"] ?? ""
        let program = environment["TERM_PROGRAM"] ?? ""
        if term == "dumb" || environment["TMUX"] != nil || environment["STY"] != nil || term.hasPrefix("screen")
            || term.hasPrefix("tmux") {
            return nil
        }
        if term == "xterm-kitty" || environment["KITTY_WINDOW_ID"] != nil || term == "xterm-ghostty"
            || program.lowercased() == "ghostty" {
            return .kitty
        }
        if program == "iTerm.app" || environment["LC_TERMINAL"] == "iTerm2" || program == "WezTerm" {
            return .iterm2
        }
        return nil
    }

    /// The format of `data` by its signature, or `nil` when it is not PNG, JPEG or GIF.
    public static func format(of data: Data) -> Format? {
        let head = [UInt8](data.prefix(8))
        if head == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] { return .png }
        if head.count >= 3, head[0] == 0xFF, head[1] == 0xD8, head[2] == 0xFF { return .jpeg }
        if head.count >= 6, let text = String(bytes: head[0..<6], encoding: .ascii), text == "GIF87a" || text == "GIF89a" {
            return .gif
        }
        return nil
    }

    /// The escape sequence that draws `data` in a box of `columns` × `rows` cells (aspect ratio
    /// kept), leaving the cursor on the box's last row. Print a newline after it.
    ///
    /// - Returns: `nil` when `data` is not an image, or when the protocol cannot show its format
    ///   (kitty takes PNG only).
    public static func escapeSequence(for data: Data, using proto: InlineImageProtocol, columns: Int, rows: Int)
        -> String?
    {
        guard let format = format(of: data), columns > 0, rows > 0 else { return nil }
        let payload = data.base64EncodedString()
        switch proto {
        case .kitty:
            guard format == .png else { return nil }
            // a=T transmit and show; f=100 PNG; c/r the cell box; q=2 no replies on stdin.
            var output = ""
            var chunks = chunked(payload, size: 4096)[...]
            var first = true
            while let chunk = chunks.popFirst() {
                let more = chunks.isEmpty ? 0 : 1
                let control = first ? "a=T,f=100,c=\(columns),r=\(rows),q=2,m=\(more)" : "m=\(more)"
                output += "\u{1B}_G\(control);\(chunk)\u{1B}\\"
                first = false
            }
            return output
        case .iterm2:
            return "\u{1B}]1337;File=inline=1;size=\(data.count);width=\(columns);height=\(rows);preserveAspectRatio=1:"
                + payload + "\u{07}"
        }
    }

    private static func chunked(_ text: String, size: Int) -> [Substring] {
        var chunks: [Substring] = []
        var start = text.startIndex
        while start < text.endIndex {
            let end = text.index(start, offsetBy: size, limitedBy: text.endIndex) ?? text.endIndex
            chunks.append(text[start..<end])
            start = end
        }
        return chunks
    }
}
