import DaumSearchAPI
import Foundation
import FreshetFeeds

/// How blog posts look in a terminal: aligned by display width, so Korean (East Asian wide)
/// blog names and titles line up and are cut without splitting a character.
///
/// ```text
/// 2017-06-14 09:00  개발 일지        스위프트 비동기 프로그래밍
///                   https://brunch.co.kr/@example/12
/// ```
public enum BlogLayout {
    /// The width of the date column (`yyyy-MM-dd HH:mm`).
    public static let dateWidth = 16
    /// The widest the blog-name column gets.
    public static let maxBlogWidth = 18

    /// The blog-name column's width for `posts`: the widest name, at most ``maxBlogWidth``.
    public static func blogWidth(_ posts: [BlogPost]) -> Int {
        min(posts.map { TextLayout.width($0.blogname) }.max() ?? 0, maxBlogWidth)
    }

    /// One line per post: local date and time, blog name, title (highlights in bold when
    /// `bold`), cut to `width` columns.
    public static func row(
        _ post: BlogPost, blogWidth: Int, width: Int, bold: Bool, timeZone: TimeZone = .current
    ) -> String {
        let date = post.date.map { BlogText.dateTime($0, timeZone: timeZone) } ?? post.datetime
        let prefix = TextLayout.pad(date, to: dateWidth) + "  " + TextLayout.pad(post.blogname, to: blogWidth) + "  "
        let titleWidth = max(width - TextLayout.width(prefix), 8)
        return prefix + BlogText.render(post.title, width: titleWidth, bold: bold)
    }

    /// The full listing: each post's ``row(_:blogWidth:width:bold:timeZone:)``, then its URL
    /// under the title column, then (with `contents`) the snippet, cut to the width.
    public static func lines(
        _ posts: [BlogPost], width: Int, bold: Bool, contents: Bool = false, timeZone: TimeZone = .current
    ) -> [String] {
        postLines(posts, width: width, bold: bold, contents: contents, timeZone: timeZone).flatMap { $0 }
    }

    /// ``lines(_:width:bold:contents:timeZone:)`` grouped by post: each post's lines, aligned
    /// with all the others (for a listing that puts something between posts, like thumbnails).
    public static func postLines(
        _ posts: [BlogPost], width: Int, bold: Bool, contents: Bool = false, timeZone: TimeZone = .current
    ) -> [[String]] {
        let blogWidth = blogWidth(posts)
        let indent = String(repeating: " ", count: dateWidth + 2 + blogWidth + 2)
        return posts.map { post in
            var lines = [row(post, blogWidth: blogWidth, width: width, bold: bold, timeZone: timeZone), indent + post.url]
            if contents {
                let snippetWidth = max(width - indent.count, 20)
                lines.append(indent + BlogText.render(post.contents, width: snippetWidth, bold: bold))
            }
            return lines
        }
    }
}
