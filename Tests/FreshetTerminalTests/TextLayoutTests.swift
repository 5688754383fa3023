import Foundation
import FreshetTerminal
import Testing

@Suite("Display width, truncation and columns")
struct TextLayoutTests {
    @Test("Columns per character: ASCII 1, East Asian wide 2, emoji 2, combining marks and controls 0",
          arguments: [
              ("hello", 5), ("", 0), ("스위프트", 8), ("漢字", 4), ("ｶﾀｶﾅ", 4), ("ＡＢ", 4),
              ("🙂", 2), ("e\u{0301}", 1), ("a\u{200B}b", 2), ("tab\there", 7), ("👍🏽", 2),
          ])
    func width(text: String, columns: Int) {
        #expect(TextLayout.width(text) == columns, "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
    }

    @Test("Truncation never splits a wide character and ends in …")
    func truncation() {
        #expect(TextLayout.truncate("short", to: 10) == "short")
        #expect(TextLayout.truncate("exactly10!", to: 10) == "exactly10!")
        #expect(TextLayout.truncate("a longer line", to: 6) == "a lon…")
        #expect(TextLayout.truncate("스위프트", to: 6) == "스위…")
        #expect(TextLayout.truncate("스위프트", to: 5) == "스위…")
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

    @Test("One line, whatever a service sent")
    func singleLine() {
        #expect(TextLayout.singleLine("a\nb\tc\u{1B}[31md") == "a b c [31md")
    }
}
