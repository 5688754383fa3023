import Foundation

/// Terminal text measurement and layout, independent of any terminal: display width (East
/// Asian wide characters count 2 columns, combining marks 0), truncation and padding by width,
/// and relative times.
public enum TextLayout {
    /// The number of terminal columns `text` occupies.
    public static func width(_ text: some StringProtocol) -> Int {
        text.utf8.withContiguousStorageIfAvailable(width(utf8:)) ?? width(scalars: text.unicodeScalars)
    }

    /// ``width(_:)`` of valid UTF-8: an ASCII byte counted as it is, a scalar beyond ASCII decoded
    /// from its bytes and measured as ``width(scalars:)`` measures it. Text that is ASCII but for
    /// one `…` (a cut line) costs a few instructions a byte, not a trip through the string's
    /// scalar view for every character.
    private static func width(utf8 bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var columns = 0
        var index = 0
        var previous: Unicode.Scalar?
        while index < bytes.count {
            let lead = bytes[index]
            if lead < 0x80 {
                if lead >= 0x20, lead != 0x7F { columns += 1 }
                previous = nil // No ASCII character takes a skin tone.
                index += 1
                continue
            }
            let length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2
            guard index + length <= bytes.count else { break }
            var value = UInt32(lead) & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07)
            for offset in 1..<length { value = value << 6 | UInt32(bytes[index + offset] & 0x3F) }
            index += length
            guard let scalar = Unicode.Scalar(value) else { continue }
            columns += width(of: scalar, after: previous)
            previous = scalar
        }
        return columns
    }

    /// The sum of the scalars' widths, except that a skin-tone modifier after an emoji that takes
    /// one (👍🏽) joins it in its two columns, as terminals draw it.
    private static func width(scalars: some Sequence<Unicode.Scalar>) -> Int {
        var columns = 0
        var previous: Unicode.Scalar?
        for scalar in scalars {
            columns += width(of: scalar, after: previous)
            previous = scalar
        }
        return columns
    }

    /// ``width(of:)``, but 0 for a skin tone after an emoji that takes one.
    private static func width(of scalar: Unicode.Scalar, after previous: Unicode.Scalar?) -> Int {
        // Emoji_Modifier is exactly the five skin tones U+1F3FB–U+1F3FF: a range test, not a
        // property lookup for every scalar of every line.
        if (0x1F3FB...0x1F3FF).contains(scalar.value), previous?.properties.isEmojiModifierBase == true { return 0 }
        return width(of: scalar)
    }

    /// The columns one scalar occupies: 0 for combining marks, zero-width and control characters,
    /// 2 for East Asian Wide and Fullwidth characters and emoji presentation, 1 otherwise.
    public static func width(of scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value < 0x7F { return value < 0x20 ? 0 : 1 }
        if value < 0xA0 { return 0 }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if value == 0x200B || (0x1160...0x11FF).contains(value) { return 0 }  // ZWSP, Hangul jungseong/jongseong
        if isWide(value) || scalar.properties.isEmojiPresentation { return 2 }
        return 1
    }

    private static func isWide(_ v: UInt32) -> Bool {
        (0x1100...0x115F).contains(v) || (0x2E80...0x303E).contains(v) || (0x3041...0x33FF).contains(v)
            || (0x3400...0x4DBF).contains(v) || (0x4E00...0x9FFF).contains(v) || (0xA000...0xA4CF).contains(v)
            || (0xA960...0xA97F).contains(v) || (0xAC00...0xD7A3).contains(v) || (0xF900...0xFAFF).contains(v)
            || (0xFE10...0xFE19).contains(v) || (0xFE30...0xFE6F).contains(v) || (0xFF00...0xFF60).contains(v)
            || (0xFFE0...0xFFE6).contains(v) || (0x1F300...0x1F64F).contains(v) || (0x1F900...0x1F9FF).contains(v)
            || (0x20000...0x3FFFD).contains(v)
    }

    /// `text` cut to at most `columns` columns, ending in `…` when cut. Never splits a character.
    public static func truncate(_ text: String, to columns: Int) -> String {
        guard columns > 0 else { return "" }
        // No character is wider than its UTF-8 bytes: text of no more bytes than columns fits,
        // unmeasured (every line of a page is asked).
        guard text.utf8.count > columns else { return text }
        let measured = width(text)
        guard measured > columns else { return text }
        return cut(text, width: measured, to: columns).text
    }

    /// `text`, `width` columns wide, as it is when it fits in `columns`, else cut as
    /// ``truncate(_:to:)`` cuts it; with the columns the result occupies.
    private static func fitted(_ text: String, width: Int, to columns: Int) -> (text: String, width: Int) {
        if width <= columns { return (text, width) }
        return columns > 0 ? cut(text, width: width, to: columns) : ("", 0)
    }

    /// `text`, `width` columns wide and wider than `columns` (> 0), cut as ``truncate(_:to:)``
    /// cuts it, with the columns the cut occupies.
    private static func cut(_ text: String, width: Int, to columns: Int) -> (text: String, width: Int) {
        // As many columns as bytes: printable ASCII (every other character is narrower than its
        // bytes), where a byte is a character and a column, so the cut is a prefix of bytes.
        if width == text.utf8.count {
            // Bytes copied into a string of their size: `String(decoding:)` of a prefix of the UTF-8
            // view, then `+ "…"`, took ~4,800 instructions a title.
            let kept = columns - 1
            let ellipsis: [UInt8] = [0xE2, 0x80, 0xA6]
            let cut = String(unsafeUninitializedCapacity: kept + ellipsis.count) { buffer in
                var written = buffer.initialize(fromContentsOf: text.utf8.prefix(kept))
                written += UnsafeMutableBufferPointer(rebasing: buffer[written...]).initialize(fromContentsOf: ellipsis)
                return written
            }
            return (cut, columns)
        }
        // The longest prefix of whole characters that leaves a column for the ellipsis. A printable
        // ASCII byte followed by another ASCII byte is a whole character of one column, counted
        // as a byte; from the first other byte (which may extend the character before it: a
        // combining mark, a variation selector) characters are measured one by one.
        var used = 0
        let start = text.utf8.withContiguousStorageIfAvailable { bytes in
            var index = 0
            while used < columns - 1, index + 1 < bytes.count, (0x20...0x7E).contains(bytes[index]),
                  bytes[index + 1] < 0x80 {
                used += 1
                index += 1
            }
            return index
        } ?? 0
        let utf8 = text.utf8
        var end = utf8.index(text.startIndex, offsetBy: start)
        while end < text.endIndex {
            // Past the first other byte, ASCII is still counted by the byte where it can be: a title
            // with one curly quote was measured character by character to its end (~12,000
            // instructions a cut).
            let after = utf8.index(after: end)
            if (0x20...0x7E).contains(utf8[end]), after == utf8.endIndex || utf8[after] < 0x80 {
                if used + 1 > columns - 1 { break }
                used += 1
                end = after
                continue
            }
            let next = text.index(after: end)
            let w = self.width(scalars: text.unicodeScalars[end..<next])
            if used + w > columns - 1 { break }
            used += w
            end = next
        }
        return (String(text[..<end]) + "…", used + 1)
    }

    /// `text` truncated and padded with spaces to exactly `columns` columns.
    public static func pad(_ text: String, to columns: Int, alignRight: Bool = false) -> String {
        let (cut, cutWidth) = fitted(text, width: width(text), to: columns)
        let fill = String(repeating: " ", count: max(0, columns - cutWidth))
        return alignRight ? fill + cut : cut + fill
    }

    /// "just now", "42s ago", "3m ago", "5h ago", "2d ago", "3mo ago", "4y ago" (or "in 3m" for the future).
    public static func relativeTime(_ date: Date, now: Date = Date()) -> String {
        let seconds = Int(now.timeIntervalSince(date).rounded())
        let magnitude = abs(seconds)
        let text: String
        switch magnitude {
        case ..<5: return "just now"
        case ..<60: text = "\(magnitude)s"
        case ..<3600: text = "\(magnitude / 60)m"
        case ..<86_400: text = "\(magnitude / 3600)h"
        case ..<(86_400 * 30): text = "\(magnitude / 86_400)d"
        case ..<(86_400 * 365): text = "\(magnitude / (86_400 * 30))mo"
        default: text = "\(magnitude / (86_400 * 365))y"
        }
        return seconds >= 0 ? "\(text) ago" : "in \(text)"
    }

    /// Lays out rows as aligned columns separated by two spaces. `widths` gives each column's
    /// maximum width (`nil` = as wide as its widest cell); the last column is never padded.
    public static func columns(_ rows: [[String]], widths: [Int?] = [], alignRight: Set<Int> = []) -> [String] {
        // Each cell is measured once: for the column widths, then for its padding (a page of 500
        // rows measured every cell three times).
        columns(rows, cellWidths: rows.map { $0.map { width($0) } }, widths: widths, alignRight: alignRight)
    }

    /// ``columns(_:widths:alignRight:)`` of cells already measured: `cellWidths[row][column]` is
    /// ``width(_:)`` of `rows[row][column]`.
    package static func columns(_ rows: [[String]], cellWidths: [[Int]], widths: [Int?] = [],
                                alignRight: Set<Int> = []) -> [String] {
        // A closure, not the key path `\.count`: a key path is read through the runtime (~700
        // instructions a row).
        guard let count = rows.map({ $0.count }).max() else { return [] }
        var measured = [Int](repeating: 0, count: count)
        for row in cellWidths {
            for (index, cellWidth) in row.enumerated() {
                let cap = index < widths.count ? widths[index] : nil
                measured[index] = max(measured[index], min(cellWidth, cap ?? .max))
            }
        }
        let rightAligned = (0..<count).map { alignRight.contains($0) }
        let space = UInt8(ascii: " ")
        // Each line made as bytes: appending strings and strings of spaces was half of printing a
        // page of 500 rows.
        return zip(rows, cellWidths).map { row, rowWidths in
            var line: [UInt8] = []
            line.reserveCapacity(measured.reduce(2 * count) { $0 + $1 } + 16)
            for (index, cell) in row.enumerated() {
                if index > 0 { line.append(contentsOf: repeatElement(space, count: 2)) }
                let column = measured[index]
                // Too wide: cut (a column of 0 leaves nothing), then laid out as a cell that fits.
                let (text, textWidth) = fitted(cell, width: rowWidths[index], to: column)
                // The cell and spaces, none after the last one unless it aligns right.
                let fill = index == row.count - 1 && !rightAligned[index] ? 0 : column - textWidth
                if rightAligned[index] { line.append(contentsOf: repeatElement(space, count: fill)) }
                line.append(contentsOf: text.utf8)
                if !rightAligned[index] { line.append(contentsOf: repeatElement(space, count: fill)) }
            }
            return String(decoding: line, as: UTF8.self)
        }
    }

    /// Whether UTF-8 `bytes` hold no control character (general category Cc): none of bytes 00–1F
    /// and 7F, nor C2 80–C2 9F.
    private static func isFreeOfControls(_ bytes: some Sequence<UInt8>) -> Bool {
        var previous: UInt8 = 0
        for byte in bytes {
            if byte < 0x20 || byte == 0x7F || (previous == 0xC2 && byte < 0xA0) { return false }
            previous = byte
        }
        return true
    }

    /// Control characters (newlines, tabs, escapes) replaced by spaces: one line of text, whatever
    /// a service sent.
    public static func singleLine(_ text: String) -> String {
        // The control characters (general category Cc) are exactly U+0000–U+001F and U+007F–U+009F:
        // in UTF-8, bytes 00–1F and 7F, and C2 80–C2 9F. Text without them is returned as it is.
        if text.utf8.withContiguousStorageIfAvailable(isFreeOfControls) ?? isFreeOfControls(text.utf8) { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.map { scalar in
            scalar.value < 0x20 || (0x7F..<0xA0).contains(scalar.value) ? " " : scalar
        }))
    }
}
