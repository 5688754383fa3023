import FreshetTerminal
import Testing

@Suite("Key parsing: the bytes a terminal in raw mode sends")
struct KeyParserTests {
    private func keys(_ text: String) -> [Key] {
        var parser = KeyParser()
        return parser.feed(Array(text.utf8))
    }

    @Test("Text, Enter, Backspace, Tab and Ctrl keys, one byte each")
    func singleBytes() {
        #expect(keys("ab") == [.character("a"), .character("b")])
        #expect(keys("\r\n") == [.enter, .enter])
        #expect(keys("\u{7F}\u{08}\t") == [.backspace, .backspace, .tab])
        #expect(keys("\u{03}\u{15}\u{17}") == [.ctrl("c"), .ctrl("u"), .ctrl("w")])
        #expect(keys("\u{00}\u{1C}x") == [.character("x")], "NUL and FS are dropped")
    }

    @Test("Arrows and editing keys, CSI and SS3, with and without parameters",
          arguments: [
              ("\u{1B}[A", Key.up), ("\u{1B}[B", .down), ("\u{1B}[C", .right), ("\u{1B}[D", .left),
              ("\u{1B}OA", .up), ("\u{1B}OD", .left), ("\u{1B}[H", .home), ("\u{1B}[F", .end),
              ("\u{1B}[1~", .home), ("\u{1B}[7~", .home), ("\u{1B}[4~", .end), ("\u{1B}[8~", .end),
              ("\u{1B}[3~", .delete), ("\u{1B}[5~", .pageUp), ("\u{1B}[6~", .pageDown), ("\u{1B}[1;5A", .up),
          ])
    func sequences(bytes: String, key: Key) {
        #expect(keys(bytes) == [key])
        #expect(keys(bytes + "z") == [key, .character("z")], "the sequence ends where it should")
    }

    @Test("Unknown sequences and Alt's ESC are dropped, the key after them kept")
    func unknownSequences() {
        #expect(keys("\u{1B}[200~x") == [.character("x")], "bracketed paste start")
        #expect(keys("\u{1B}[Zq") == [.character("q")], "Shift-Tab")
        #expect(keys("\u{1B}x") == [.character("x")], "Alt-x")
        #expect(keys("\u{1B}\u{1B}") == [.escape], "ESC ESC: the first is Escape, the second waits")
    }

    @Test("Multi-byte UTF-8 is one key, even when it arrives in pieces")
    func utf8() {
        #expect(keys("한글é🙂") == [.character("한"), .character("글"), .character("é"), .character("🙂")])
        var parser = KeyParser()
        let bytes = Array("한".utf8)
        #expect(parser.feed(bytes[0..<1]).isEmpty)
        #expect(parser.hasPending)
        #expect(parser.feed(bytes[1...]) == [.character("한")])
        #expect(!parser.hasPending)
        var raw = KeyParser()
        #expect(raw.feed([0xFF, 0x80, 0x61]) == [.character("a")], "bytes that start no UTF-8 character are dropped")
    }

    @Test("A sequence split across reads waits for its end; a lone ESC is Escape only on flush")
    func splitAndFlush() {
        var parser = KeyParser()
        #expect(parser.feed([0x1B]).isEmpty)
        #expect(parser.feed(Array("[".utf8)).isEmpty)
        #expect(parser.feed(Array("B".utf8)) == [.down])

        #expect(parser.feed([0x1B]).isEmpty)
        #expect(parser.hasPending)
        #expect(parser.flush() == [.escape])
        #expect(!parser.hasPending)

        #expect(parser.feed([0x1B, UInt8(ascii: "[")]).isEmpty)
        #expect(parser.flush().isEmpty, "half a sequence is dropped, not read as Escape")
        #expect(parser.feed(Array("q".utf8)) == [.character("q")])
    }
}
