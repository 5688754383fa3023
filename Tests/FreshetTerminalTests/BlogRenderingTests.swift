import DaumSearchAPI
import Foundation
import FreshetFeeds
import FreshetTerminal
@preconcurrency import Rainbow
import Testing

/// Runs `body` with Rainbow styling on, as ``Terminal/configure()`` leaves it on a colour
/// terminal. Only the tests that ask for styles (`bold: true`) depend on it; every other test
/// formats with styles off and never reaches Rainbow.
func withStyles(_ body: () -> Void) {
    Rainbow.outputTarget = .console
    Rainbow.enabled = true
    body()
}

private func blogPost(_ title: String, _ datetime: String, blog: String) -> BlogPost {
    BlogPost(title: title, contents: "", url: "https://example.com/\(title.hashValue)", blogname: blog, datetime: datetime)
}

@Suite("Blog rows: highlights, widths, alignment")
struct BlogRenderingTests {
    @Test("<b> highlights become bold on request and vanish otherwise; entities are decoded, escaped tags stay text")
    func highlights() {
        let html = "스위프트 <b>비동기</b> &amp; &lt;b&gt;Rx&lt;/b&gt; <B>RxSwift</B>와 &quot;Combine&quot;"
        #expect(BlogText.segments(html) == [
            .init("스위프트 ", highlighted: false), .init("비동기", highlighted: true),
            .init(" & <b>Rx</b> ", highlighted: false), .init("RxSwift", highlighted: true),
            .init("와 \"Combine\"", highlighted: false),
        ])
        #expect(BlogText.render(html, bold: false) == "스위프트 비동기 & <b>Rx</b> RxSwift와 \"Combine\"")
        withStyles {
            #expect(BlogText.render(html, bold: true)
                == "스위프트 \u{1B}[1m비동기\u{1B}[0m & <b>Rx</b> \u{1B}[1mRxSwift\u{1B}[0m와 \"Combine\"")
            #expect(BlogText.render(html, bold: false) == BlogText.plain(html), "bold off: plain, styles or not")
        }
    }

    @Test("Cutting to a width counts Korean characters as two columns and never splits one")
    func koreanTruncation() {
        #expect(TextLayout.width("스위프트") == 8)
        #expect(TextLayout.width("개발 일지") == 9)
        #expect(BlogText.render("<b>스위프트</b> 비동기", width: 6, bold: false) == "스위…")
        #expect(TextLayout.width(BlogText.render("<b>스위프트</b> 비동기", width: 6, bold: false)) == 5)
        withStyles {
            #expect(BlogText.render("<b>스위프트</b> 비동기", width: 7, bold: true) == "\u{1B}[1m스위프\u{1B}[0m…")
        }
        #expect(BlogText.render("짧은 글", width: 20, bold: false) == "짧은 글")
    }

    @Test("Rows line up by display width with Korean and Latin blog names; dates are local")
    func koreanAlignment() throws {
        let posts = [
            blogPost("스위프트 <b>비동기</b> 프로그래밍", "2017-06-14T00:00:00.000+09:00", blog: "개발 일지"),
            blogPost("Understanding RxSwift", "2020-02-29T23:30:00.000+09:00", blog: "Dev Notes"),
            blogPost("제주도 여행 3박 4일 코스와 맛집, 카페 정리 그리고 아주 긴 제목", "2021-12-31T15:00:00.000Z", blog: "코딩하는 고양이"),
            blogPost("짧은 글", "2022-01-01T00:00:00.000+09:00", blog: "주니어의 성장기 그리고 아주 긴 블로그 이름"),
        ]
        let utc = try #require(TimeZone(identifier: "UTC"))
        let lines = BlogLayout.lines(posts, width: 60, bold: false, timeZone: utc)
        #expect(lines.count == 8)
        let rows = stride(from: 0, to: lines.count, by: 2).map { lines[$0] }
        let urls = stride(from: 1, to: lines.count, by: 2).map { lines[$0] }
        // Titles start at one display column: after the date, the padded blog name and the gaps.
        let titleColumn = BlogLayout.dateWidth + 2 + BlogLayout.maxBlogWidth + 2
        for (row, post) in zip(rows, posts) {
            let title = post.displayTitle
            let start = try #require(row.range(of: String(title.prefix(2))), "\(row)")
            #expect(TextLayout.width(row[..<start.lowerBound]) == titleColumn, "\(row)")
            #expect(TextLayout.width(row) <= 60, "\(row)")
        }
        for url in urls {
            #expect(url.hasPrefix(String(repeating: " ", count: titleColumn) + "https://"))
        }
        #expect(rows[0].hasPrefix("2017-06-13 15:00  개발 일지"))
        #expect(rows[1].hasPrefix("2020-02-29 14:30  Dev Notes"))
        #expect(rows[2].hasPrefix("2021-12-31 15:00  코딩하는 고양이"))
        #expect(rows[3].contains("주니어의 성장기 …"), "a long blog name is cut to its column: \(rows[3])")
        #expect(rows[2].hasSuffix("…"), "a long title is cut to the width")
        let seoul = try #require(TimeZone(identifier: "Asia/Seoul"))
        #expect(BlogLayout.row(posts[0], blogWidth: 9, width: 80, bold: false, timeZone: seoul).hasPrefix("2017-06-14 00:00"))
    }
}
