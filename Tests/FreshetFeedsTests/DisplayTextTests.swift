import DaumSearchAPI
import Foundation
import FreshetFeeds
import HackerNewsAPI
import Testing
import Freshet

/// What the apps show of fields the services send as HTML: Hacker News titles and texts, Kakao snippets.
@Suite("Display text from HTML fields")
struct DisplayTextTests {
    @Test func htmlEscapedTitleIsDecodedForDisplay() throws {
        let item = try #require(try HackerNews.item(id: 1).decode(Data(#"{"id": 7, "type": "story", "title": "Ask HN: Q&amp;A &lt;b&gt; &quot;x&quot; it&#x27;s it&#39;s &#8212; &#X2014;"}"#.utf8), JSONDecoder()))
        #expect(item.title == "Ask HN: Q&amp;A &lt;b&gt; &quot;x&quot; it&#x27;s it&#39;s &#8212; &#X2014;")
        #expect(item.displayTitle == "Ask HN: Q&A <b> \"x\" it's it's \u{2014} \u{2014}")
    }

    @Test func entityDecodingLeavesNonReferencesAlone() {
        #expect(HTMLText.decodeEntities("AT&T; R&D") == "AT&T; R&D")
        #expect(HTMLText.decodeEntities("&bogus; &#xZZ; &#; &") == "&bogus; &#xZZ; &#; &")
        #expect(HTMLText.decodeEntities("&&amp;&amp;amp;") == "&&&amp;")
        #expect(HTMLText.decodeEntities("&#1114112;") == "&#1114112;")  // beyond Unicode
        #expect(HTMLText.decodeEntities("no entities") == "no entities")
        #expect(HTMLText.decodeEntities("&apos;&nbsp;") == "'\u{00A0}")
    }

    @Test func commentTextAsPlainText() throws {
        let html = #"First &gt; second.<p>See <a href="https://x.example/a?b=1&amp;c=2" rel="nofollow">https://x.example/a?b=1&amp;c=2</a><p>Code: <pre><code>  a &lt; b</code></pre>"#
        #expect(HTMLText.plainText(html) == "First > second.\n\nSee https://x.example/a?b=1&c=2\n\nCode:   a < b")
        #expect(HTMLText.plainText("one<br>two") == "one\ntwo")
        #expect(HTMLText.plainText("a < b") == "a < b")
    }

    @Test func jobTextAsPlainText() throws {
        let item = try #require(try HackerNews.item(id: 1).decode(Data(#"{"id":192327,"text":"Justin.tv is looking for a <i>Lead Flash Engineer</i>!","type":"job"}"#.utf8), JSONDecoder()))
        #expect(item.plainText == "Justin.tv is looking for a Lead Flash Engineer!")
        #expect(HNItem(id: 1).displayTitle == nil)
    }

    @Test func blogPostHighlightsAndEntities() throws {
        let json = #"{"documents":[{"title":"스위프트 <b>비동기</b> 프로그래밍","contents":"…<b>RxSwift</b>와 Combine을 비교하면 &quot;…&quot;","url":"https://brunch.co.kr/@example/12","blogname":"개발 일지","thumbnail":"","datetime":"2024-01-01T00:00:00.000+09:00"}],"meta":{"total_count":1,"pageable_count":1,"is_end":true}}"#
        let post = try #require(try DaumSearch.blog(query: "x").decode(Data(json.utf8), JSONDecoder()).documents.first)
        #expect(post.displayTitle == "스위프트 비동기 프로그래밍")
        #expect(post.displayContents == "…RxSwift와 Combine을 비교하면 \"…\"")
    }

    @Test("One tag scanner: text runs decoded, tag names lowercased, closing and attributes kept, a lone < is text")
    func tokens() {
        #expect(HTMLText.tokens(#"a &amp; <B>b</b><a HREF="x?a=1&amp;b=2" rel=nofollow>l</a><br/>x < y"#) == [
            .text("a & "), .tag(name: "b", closing: false, attributes: ""), .text("b"),
            .tag(name: "b", closing: true, attributes: ""),
            .tag(name: "a", closing: false, attributes: #" HREF="x?a=1&amp;b=2" rel=nofollow"#), .text("l"),
            .tag(name: "a", closing: true, attributes: ""), .tag(name: "br", closing: false, attributes: "/"),
            .text("x < y"),
        ])
        #expect(HTMLText.attribute("href", in: #" HREF="x?a=1&amp;b=2" rel=nofollow"#) == "x?a=1&b=2")
        #expect(HTMLText.attribute("rel", in: " rel=nofollow/") == "nofollow")
        #expect(HTMLText.attribute("title", in: " rel=nofollow") == nil)
        #expect(HTMLText.tokens("").isEmpty)
        #expect(HTMLText.tokens("<unclosed") == [.text("<unclosed")])
        #expect(HTMLText.plainText("one<br/>two</br>three") == "one\ntwo\nthree")
    }

    @Test("A Kakao title reads the same in --json, in the title sort and in the rows",
          arguments: ["스위프트 <b>비동기</b>", "line\nbreak\tand&nbsp;space", "<p>para</p><B class=x>hi</B>", "&lt;b&gt; kept"])
    func kakaoTitleOneReading(title: String) {
        let post = BlogPost(title: title, contents: title, url: "https://example.com", blogname: "b", datetime: "")
        let runs = BlogText.segments(title).map(\.text).joined()
        #expect(post.displayTitle == runs)
        #expect(post.decodedForJSON.title == runs)
        #expect(post.decodedForJSON.contents == runs)
        #expect(!runs.contains("\n") && !runs.contains("<p>"))
    }
}
