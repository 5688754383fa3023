import Foundation
import FreshetTerminal
import Testing

@Suite("Display width, truncation and columns")
struct TextLayoutTests {
    @Test("Columns per character: ASCII 1, East Asian wide 2, emoji 2, combining marks and controls 0",
          arguments: [
              ("hello", 5), ("", 0), ("스위프트", 8), ("漢字", 4), ("ｶﾀｶﾅ", 4), ("ＡＢ", 4),
              ("🙂", 2), ("e\u{0301}", 1), ("a\u{200B}b", 2), ("tab\there", 7), ("👍🏽", 2),
              // Read from the bytes: each length of UTF-8 among ASCII, a skin tone only after its emoji.
              ("a cut line…", 11), ("é", 1), ("x\u{85}y", 2), ("ab😀c", 5), ("𝒳", 1), ("x👍🏽y", 4),
              ("a\u{1F3FD}", 3), ("漢a字", 5), ("\u{7F}\u{1B}[0m", 3),
          ])
    func width(text: String, columns: Int) {
        #expect(TextLayout.width(text) == columns, "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
        // A substring's bytes are read in place, and measure alike.
        let framed = "<" + text + ">"
        #expect(TextLayout.width(framed.dropFirst().dropLast()) == columns)
        #expect(TextLayout.width(framed) == columns + 2)
    }

    @Test("Truncation never splits a wide character and ends in …")
    func truncation() {
        #expect(TextLayout.truncate("short", to: 10) == "short")
        #expect(TextLayout.truncate("exactly10!", to: 10) == "exactly10!")
        #expect(TextLayout.truncate("a longer line", to: 6) == "a lon…")
        #expect(TextLayout.truncate("스위프트", to: 6) == "스위…")
        #expect(TextLayout.truncate("스위프트", to: 5) == "스위…")
        // More bytes than columns, yet it fits; a mark or a skin tone stays with its character.
        #expect(TextLayout.truncate("cafe\u{0301}s", to: 5) == "cafe\u{0301}s")
        #expect(TextLayout.truncate("cafe\u{0301}s!", to: 5) == "cafe\u{0301}…")
        #expect(TextLayout.truncate("👍🏽👍🏽👍🏽", to: 5) == "👍🏽👍🏽…")
        // ASCII before the first other character is cut by bytes, never away from what extends it.
        #expect(TextLayout.truncate("abc#\u{FE0F}\u{20E3}def", to: 5) == "abc#\u{FE0F}\u{20E3}…")
        #expect(TextLayout.truncate("abcd\u{FE0F}\u{20E3}ef", to: 5) == "abcd\u{FE0F}\u{20E3}…")
        #expect(TextLayout.truncate("abcdefgh ü", to: 5) == "abcd…")
        // After it, ASCII is still cut by bytes, and still never away from what extends it.
        #expect(TextLayout.truncate("é abcdefg", to: 5) == "é ab…")
        #expect(TextLayout.truncate("ü abce\u{0301}fg", to: 7) == "ü abce\u{0301}…")
        #expect(TextLayout.truncate("“Quoted” title here", to: 10) == "“Quoted” …")
        for columns in 1...9 {
            #expect(TextLayout.width(TextLayout.truncate("스위프트 비동기", to: columns)) <= columns)
        }
    }

    @Test("Padding and columns line up by display width")
    func columns() {
        #expect(TextLayout.pad("한", to: 4) == "한  ")
        #expect(TextLayout.pad("7", to: 3, alignRight: true) == "  7")
        let lines = TextLayout.columns([["1", "스위프트", "x"], ["10", "ab", "y"]], alignRight: [0])
        #expect(lines == [" 1  스위프트  x", "10  ab        y"])
        #expect(Set(lines.map { TextLayout.width($0) }).count == 1)
    }

    @Test("Columns: each cell as padding and truncation lay it out, over caps, alignments and ragged rows")
    func columnsMatchPadAndTruncate() {
        // The layout by definition: every cell padded to its column's width, the last one of a row
        // truncated (not padded) unless it aligns right.
        func reference(_ rows: [[String]], widths: [Int?], alignRight: Set<Int>) -> [String] {
            let count = rows.map(\.count).max() ?? 0
            let measured = (0..<count).map { index in
                rows.compactMap { $0.indices.contains(index) ? $0[index] : nil }
                    .map { min(TextLayout.width($0), index < widths.count ? widths[index] ?? .max : .max) }.max() ?? 0
            }
            return rows.map { row in
                row.enumerated().map { index, cell in
                    index == row.count - 1 && !alignRight.contains(index)
                        ? TextLayout.truncate(cell, to: measured[index])
                        : TextLayout.pad(cell, to: measured[index], alignRight: alignRight.contains(index))
                }.joined(separator: "  ")
            }
        }
        let cells = ["", "a", "7", "42", "hello", "a longer cell", "스위프트", "🙂 ok", "e\u{0301}x", "exactly10!"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let rows = (0..<Int.random(in: 1...4, using: &generator)).map { _ in
                (0..<Int.random(in: 1...4, using: &generator)).map { _ in cells.randomElement(using: &generator)! }
            }
            let widths = (0..<4).map { _ in Bool.random(using: &generator) ? Int.random(in: 1...8, using: &generator) : nil }
            let alignRight = Set((0..<4).filter { _ in Bool.random(using: &generator) })
            #expect(TextLayout.columns(rows, widths: widths, alignRight: alignRight)
                        == reference(rows, widths: widths, alignRight: alignRight), "\(rows) \(widths) \(alignRight)")
        }
    }

    @Test("One line, whatever a service sent")
    func singleLine() {
        #expect(TextLayout.singleLine("a\nb\tc\u{1B}[31md") == "a b c [31md")
    }
}
