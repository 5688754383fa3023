import FreshetFeeds
import FreshetTerminal
import Testing

@Suite("Hacker News comment HTML as terminal text")
struct CommentTextTests {
    @Test("Comment HTML: paragraphs, links, <i>, <pre><code>, entities")
    func commentText() {
        let html = "I&#x27;d say <i>no</i>: see <a href=\"https:&#x2F;&#x2F;www.sqlite.org&#x2F;wal.html\" rel=\"nofollow\">"
            + "https:&#x2F;&#x2F;www.sqlite.org&#x2F;wal.html</a>.<p>&gt; quoted &amp; &quot;so&quot;"
            + "<p>Read <a href=\"https://example.com/a\">the docs</a> and "
            + "<a href=\"https://example.com/a/very/long/path\">https://example.com/a/ve...</a>"
            + "<p><pre><code>  if (x &lt; 0 &amp;&amp; y &gt; 0) return -1;\n  done\n</code></pre>"
        #expect(CommentText.blocks(html) == [
            .paragraph("I'd say *no*: see https://www.sqlite.org/wal.html."),
            .paragraph("> quoted & \"so\""),
            .paragraph("Read the docs (https://example.com/a) and https://example.com/a/very/long/path"),
            .code("  if (x < 0 && y > 0) return -1;\n  done"),
        ])
        #expect(CommentText.plain("one<p>two") == "one\n\ntwo")
        #expect(CommentText.blocks("") == [])
        #expect(CommentText.blocks("a < b and <unclosed") == [.paragraph("a < b and <unclosed")])
    }
}
