import Foundation
import FreshetTerminal
import Testing

@Suite("Inline images: detection and escape sequences")
struct InlineImageTests {
    static let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data(repeating: 7, count: 10_000)
    static let jpeg = Data([0xFF, 0xD8, 0xFF, 0xE0]) + Data(repeating: 1, count: 100)

    @Test("Detection reads the environment: kitty, Ghostty, iTerm2, WezTerm; nothing elsewhere",
          arguments: [
              (["TERM": "xterm-kitty"], true, InlineImageProtocol?.some(.kitty)),
              (["TERM": "xterm-256color", "KITTY_WINDOW_ID": "1"], true, .kitty),
              (["TERM": "xterm-ghostty"], true, .kitty),
              (["TERM_PROGRAM": "iTerm.app", "TERM": "xterm-256color"], true, .iterm2),
              (["LC_TERMINAL": "iTerm2"], true, .iterm2),
              (["TERM_PROGRAM": "WezTerm"], true, .iterm2),
              (["TERM": "xterm-256color"], true, nil),
              (["TERM_PROGRAM": "Apple_Terminal"], true, nil),
              ([:], true, nil),
              (["TERM": "xterm-kitty"], false, nil),
              (["TERM_PROGRAM": "iTerm.app"], false, nil),
              (["TERM": "xterm-kitty", "TMUX": "/tmp/tmux-1/default,1,0"], true, nil),
              (["TERM_PROGRAM": "iTerm.app", "TERM": "screen-256color"], true, nil),
              (["TERM_PROGRAM": "iTerm.app", "STY": "1.pts-0"], true, nil),
              (["TERM": "dumb", "KITTY_WINDOW_ID": "1"], true, nil),
          ] as [([String: String], Bool, InlineImageProtocol?)])
    func detection(environment: [String: String], isTerminal: Bool, expected: InlineImageProtocol?) {
        #expect(InlineImage.detect(environment: environment, isTerminal: isTerminal) == expected)
    }

    @Test("Formats by signature; anything else is not an image")
    func formats() {
        #expect(InlineImage.format(of: Self.png) == .png)
        #expect(InlineImage.format(of: Self.jpeg) == .jpeg)
        #expect(InlineImage.format(of: Data("GIF89a....".utf8)) == .gif)
        #expect(InlineImage.format(of: Data("<html>not an image</html>".utf8)) == nil)
        #expect(InlineImage.format(of: Data()) == nil)
        #expect(InlineImage.escapeSequence(for: Data("{\"message\":\"Not Found\"}".utf8), using: .iterm2, columns: 16, rows: 8) == nil)
    }

    @Test("kitty: PNG only, chunked ≤ 4096, m=1 until the last; iTerm2: any image, size declared")
    func sequences() throws {
        let kitty = try #require(InlineImage.escapeSequence(for: Self.png, using: .kitty, columns: 16, rows: 8))
        let chunks = kitty.components(separatedBy: "\u{1B}_G").dropFirst()
        #expect(chunks.count == (Self.png.base64EncodedString().utf8.count + 4095) / 4096)
        #expect(chunks.first?.hasPrefix("a=T,f=100,c=16,r=8,q=2,m=1;") == true)
        #expect(chunks.last?.hasPrefix("m=0;") == true)
        #expect(chunks.dropFirst().dropLast().allSatisfy { $0.hasPrefix("m=1;") })
        #expect(InlineImage.escapeSequence(for: Self.jpeg, using: .kitty, columns: 16, rows: 8) == nil,
                "kitty cannot take JPEG without decoding it")

        let iterm = try #require(InlineImage.escapeSequence(for: Self.jpeg, using: .iterm2, columns: 16, rows: 8))
        #expect(iterm == "\u{1B}]1337;File=inline=1;size=\(Self.jpeg.count);width=16;height=8;preserveAspectRatio=1:"
            + Self.jpeg.base64EncodedString() + "\u{07}")
    }
}
