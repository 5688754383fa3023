/// Kakao's `title` and `contents` (`<b>` highlights, HTML entities) as runs of text: the rows
/// draw the highlighted runs in bold, `--json` and the title sort take the plain text.
public enum BlogText {
    /// A run of text, highlighted or not.
    public struct Segment: Sendable, Hashable {
        /// The text, tags removed and entities decoded.
        public var text: String
        /// Whether it was inside `<b>…</b>`.
        public var highlighted: Bool

        /// Creates a segment.
        public init(_ text: String, highlighted: Bool) {
            self.text = text
            self.highlighted = highlighted
        }
    }

    /// `html` split into highlighted and plain runs. `<b>`/`</b>` (any case) switch the
    /// highlight; other tags are removed; entities are decoded after the tags are found, so an
    /// escaped `&lt;b&gt;` stays text. Line breaks, tabs and no-break spaces become spaces.
    public static func segments(_ html: String) -> [Segment] {
        var segments: [Segment] = []
        var highlighted = false
        for token in HTMLText.tokens(html) {
            switch token {
            case .text(let raw):
                let text = String(raw.map { $0.isNewline || $0 == "\t" || $0 == "\u{00A0}" ? " " : $0 })
                if let last = segments.last, last.highlighted == highlighted {
                    segments[segments.count - 1].text += text
                } else {
                    segments.append(Segment(text, highlighted: highlighted))
                }
            case .tag("b", let closing, _):
                highlighted = !closing
            case .tag:
                break
            }
        }
        return segments
    }

    /// The plain text of `html` (no highlights).
    public static func plain(_ html: String) -> String {
        segments(html).map(\.text).joined()
    }
}
