import DaumSearchAPI
import Foundation
import FreshetFeeds
import Freshet
@preconcurrency import Rainbow

/// How blog search results are told in the terminal.
public enum BlogFormat {
    /// "8,361 posts for “스위프트” · page 1 · sorted by title".
    public static func summary(_ result: BlogSearchResult, query: String, order: BlogSortOrder) -> String {
        let total = result.meta.totalCount
        var text = "\(GitHubFormat.number(total)) post\(total == 1 ? "" : "s") for “\(query)”"
        if result.documents.count < total { text += " (showing \(result.documents.count))" }
        return text + " · sorted by \(order.rawValue)"
    }

    /// One post in full: title, blog and date, URL, snippet.
    public static func details(_ post: BlogPost, color: Bool) -> [String] {
        let date = post.date.map { BlogText.dateTime($0) } ?? post.datetime
        var lines = [BlogText.render(post.title, bold: color)]
        lines.append("\(post.blogname) · \(date)")
        lines.append(post.url)
        let snippet = BlogText.render(post.contents, bold: color)
        if !snippet.isEmpty { lines.append(snippet) }
        return lines
    }
}
