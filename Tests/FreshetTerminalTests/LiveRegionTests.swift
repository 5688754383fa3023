@testable import FreshetTerminal
import Synchronization
import Testing

@Suite("The live region's redraw arithmetic, and the progress line", .timeLimit(.minutes(1)))
struct LiveRegionTests {
    @Test("A frame moves up over exactly the lines drawn before, and draws at most height - 1 lines")
    func redraw() {
        let first = LiveRegion.redraw(["a", "b", "c"], over: 0, height: 24)
        #expect(first.text == "a\nb\nc\n", "nothing to erase the first time")
        #expect(first.drawn == 3)

        let second = LiveRegion.redraw(["a", "b"], over: first.drawn, height: 24)
        #expect(second.text == "\r\u{1B}[3A\u{1B}[J" + "a\nb\n")
        #expect(second.drawn == 2)

        let tall = (1...30).map(String.init)
        let cut = LiveRegion.redraw(tall, over: 2, height: 10)
        #expect(cut.drawn == 9, "the cursor's row stays free, so the next frame can move back over all of it")
        #expect(cut.text == "\r\u{1B}[2A\u{1B}[J" + (1...9).map { "\($0)\n" }.joined())
        #expect(LiveRegion.redraw(tall, over: 9, height: 10).text.hasPrefix("\r\u{1B}[9A"))
        #expect(LiveRegion.redraw(["x"], over: 0, height: 1).drawn == 1, "a screen too small still shows a line")
    }

    @Test("Only the newest frame is made and drawn; finish erases it and prints the whole list")
    func newestFrameAndFinish() {
        let written = Mutex<[String]>([])
        // The ticker's first tick is an hour away: the test draws by hand.
        let region = LiveRegion(interval: .seconds(3600), height: 4) { text in written.withLock { $0.append(text) } }
        let asked = Mutex(0)
        region.update { asked.withLock { $0 += 1 }; return ["old"] }
        region.update { ["1", "2", "3", "4", "5"] }
        region.drawPending()
        #expect(asked.withLock { $0 } == 0, "a replaced frame is never made")
        #expect(written.withLock { $0 } == ["1\n2\n3\n"], "three lines fit above the cursor on a 4-row screen")
        region.drawPending()
        #expect(written.withLock { $0.count } == 1, "no new frame, nothing drawn")
        region.finish(with: ["1", "2", "3", "4", "5"])
        #expect(written.withLock { $0.last } == "\r\u{1B}[3A\u{1B}[J1\n2\n3\n4\n5\n")
        region.update { ["late"] }
        region.drawPending()
        #expect(written.withLock { $0.count } == 2, "nothing is drawn after finish")
    }

    @Test("The progress bar: 24 cells, drawn in place, only when it changes, cleared once")
    func progressLine() {
        #expect(ProgressLine.text(0, of: 500, noun: "stories") == "[>                       ] 0/500 stories")
        #expect(ProgressLine.text(250, of: 500, noun: "stories") == "[============>           ] 250/500 stories")
        #expect(ProgressLine.text(500, of: 500, noun: "stories") == "[========================] 500/500 stories")
        var written: [String] = []
        let bar = ProgressLine(noun: "items", enabled: true) { written.append($0) }
        bar.show(1, of: 2)
        bar.show(1, of: 2)
        bar.show(2, of: 2)
        bar.clear()
        bar.clear()
        #expect(written == ["\r\u{1B}[2K[============>           ] 1/2 items", "\r\u{1B}[2K[========================] 2/2 items", "\r\u{1B}[2K"])
        var off: [String] = []
        let quiet = ProgressLine(noun: "items", enabled: false) { off.append($0) }
        quiet.show(1, of: 2)
        quiet.clear()
        #expect(off.isEmpty)
    }
}
