/// The terminal control sequences the apps use to move the cursor and erase (ECMA-48 / xterm),
/// in one place. Styling (bold, dim, colours) is not here: Rainbow does it.
public enum ANSI {
    /// Back to the start of the line and erase all of it.
    public static let clearLine = "\r\u{1B}[2K"
    /// Erase from the cursor to the end of the line.
    public static let eraseToLineEnd = "\u{1B}[K"
    /// Erase from the cursor to the end of the screen.
    public static let eraseBelow = "\u{1B}[J"
    /// The cursor to the top left corner, then erase the whole screen.
    public static let clearScreen = "\u{1B}[H\u{1B}[2J"
    /// The cursor to the top left corner.
    public static let home = "\u{1B}[H"
    /// Hide the cursor while a frame is drawn.
    public static let hideCursor = "\u{1B}[?25l"
    /// Show the cursor again.
    public static let showCursor = "\u{1B}[?25h"
    /// Switch to the alternate screen (the user's scrollback stays as it was).
    public static let enterAlternateScreen = "\u{1B}[?1049h"
    /// Show the cursor and leave the alternate screen: a `StaticString`, so a signal handler can
    /// write it without allocating.
    public static let leaveFullScreen: StaticString = "\u{1B}[?25h\u{1B}[?1049l"

    /// The cursor `lines` lines up (nothing for 0 or fewer).
    public static func cursorUp(_ lines: Int) -> String {
        lines > 0 ? "\u{1B}[\(lines)A" : ""
    }

    /// The cursor to `row` and `column`, both counted from 1.
    public static func moveTo(row: Int, column: Int) -> String {
        "\u{1B}[\(row);\(column)H"
    }
}
