import Foundation
import FreshetFeeds
import HackerNewsAPI
@preconcurrency import Rainbow

/// How Hacker News looks in a terminal.
public enum HNFormat {
    /// One aligned row per story: rank, score, title, site, author, age, comment count; cut to
    /// `width`. With `header`, a first line names the columns.
    public static func storyLines(_ stories: [RankedStory], width: Int, header: Bool, color: Bool, now: Date = Date()) -> [String] {
        var rows = stories.map { story -> [String] in
            let item = story.item
            return [
                "\(story.rank).", item.score.map(String.init) ?? "",
                item.displayTitle.map(TextLayout.singleLine) ?? "(untitled)", TextLayout.singleLine(story.domain), TextLayout.singleLine(item.by ?? ""),
                item.date.map { TextLayout.relativeTime($0, now: now) } ?? "",
                item.descendants.map(String.init) ?? "",
            ]
        }
        var names = ["#", "score", "title", "site", "by", "age", "comments"]
        var caps: [Int?] = [nil, nil, nil, 22, 15, nil, nil]
        // Every cell measured once, here: for the room each column needs and for its padding.
        var cellWidths = rows.map { $0.map(TextLayout.width) }
        func drop(_ column: Int) {
            for index in rows.indices {
                rows[index].remove(at: column)
                cellWidths[index].remove(at: column)
            }
            names.remove(at: column)
            caps.remove(at: column)
        }
        // A column empty in every row (no comment counts among jobs) gives its room to the title.
        for column in (0..<names.count).reversed() where names[column] != "title" {
            if rows.allSatisfy({ $0[column].isEmpty }) { drop(column) }
        }
        if header {
            rows.insert(names, at: 0)
            cellWidths.insert(names.map(TextLayout.width), at: 0)
        }
        // On a narrow terminal the site, then the author, then the age make way for the title.
        var titleWidth = 0
        for expendable in ["", "site", "by", "age"] {
            if let column = names.firstIndex(of: expendable) { drop(column) }
            var fixed = 0
            for column in names.indices where names[column] != "title" {
                let widest = cellWidths.map { $0[column] }.max() ?? 0
                fixed += min(widest, caps[column] ?? .max)
            }
            titleWidth = width - fixed - 2 * (names.count - 1)
            if titleWidth >= 30 { break }
        }
        let titleColumn = names.firstIndex(of: "title") ?? 0
        caps[titleColumn] = max(20, titleWidth)
        // No line is wider than the columns' room and the gaps: with a title of `titleWidth`,
        // exactly `width`; only a narrow terminal's title of 20 makes lines to cut.
        let fits = titleWidth >= 20
        let alignRight: Set<String> = ["#", "score", "age", "comments"]
        let right = Set(names.indices.filter { alignRight.contains(names[$0]) })
        let lines = TextLayout.columns(rows, cellWidths: cellWidths, widths: caps, alignRight: right).map { line in
            let line = fits ? line : TextLayout.truncate(line, to: width)
            // Trailing spaces cut by bytes (`last` and `removeLast()` find characters).
            let utf8 = line.utf8
            var end = utf8.endIndex
            while end > utf8.startIndex, utf8[utf8.index(before: end)] == UInt8(ascii: " ") { end = utf8.index(before: end) }
            return end == utf8.endIndex ? line : String(Substring(utf8[..<end]))
        }
        guard header, color, let first = lines.first else { return lines }
        return [first.dim] + lines.dropFirst()
    }

    /// The item's header and text, then every comment indented two spaces per level.
    public static func threadLines(_ thread: CommentThread, width: Int, color: Bool, now: Date = Date()) -> [String] {
        let root = thread.root
        var lines: [String] = []
        if let title = root.displayTitle {
            lines.append(color ? TextLayout.singleLine(title).bold : TextLayout.singleLine(title))
        }
        if let url = root.url, !url.isEmpty { lines.append(url) }
        var meta: [String] = []
        if let score = root.score, root.type != .comment { meta.append("\(score) point\(score == 1 ? "" : "s")") }
        var byline = root.by.map { "by \($0)" } ?? ""
        if let date = root.date { byline += (byline.isEmpty ? "" : " ") + TextLayout.relativeTime(date, now: now) }
        if !byline.isEmpty { meta.append(byline) }
        if let count = root.descendants { meta.append("\(count) comment\(count == 1 ? "" : "s")") }
        if root.type == .comment, let parent = root.parent { meta.append("reply to \(parent)") }
        if root.deleted == true { meta.append("[deleted]") }
        if root.dead == true { meta.append("[dead]") }
        meta.append("id \(root.id)")
        lines.append(meta.joined(separator: " | "))
        if let text = root.text, !text.isEmpty {
            lines.append("")
            lines += textLines(text, indent: 0, width: width)
        }
        if !thread.pollOptions.isEmpty {
            lines.append("")
            let rows = thread.pollOptions.map { option in
                ["  " + (option.text.map(CommentText.plain) ?? "?"), option.score.map { "\($0)" } ?? ""]
            }
            lines += TextLayout.columns(rows, alignRight: [1])
        }
        for node in thread.flattened {
            let indent = 2 * (node.depth + 1)
            let pad = String(repeating: " ", count: indent)
            let item = node.item
            lines.append("")
            var parts: [String] = []
            if item.deleted == true {
                parts.append("[deleted]")
            } else if item.dead == true {
                parts.append("[dead]")
            } else {
                parts.append(item.by ?? "?")
            }
            if let date = item.date, item.isVisible { parts.append(TextLayout.relativeTime(date, now: now)) }
            parts.append("id \(item.id)")
            let header = TextLayout.truncate(pad + parts.joined(separator: " · "), to: width)
            lines.append(color ? header.dim : header)
            if item.isVisible, let text = item.text {
                lines += textLines(text, indent: indent, width: width)
            }
        }
        return lines
    }

    /// Comment HTML as wrapped lines, each starting with `indent` spaces; blank lines between
    /// paragraphs, code blocks kept as they are.
    public static func textLines(_ html: String, indent: Int, width: Int) -> [String] {
        let pad = String(repeating: " ", count: indent)
        let available = max(20, width - indent)
        var lines: [String] = []
        for (index, block) in CommentText.blocks(html).enumerated() {
            if index > 0 { lines.append("") }
            switch block {
            case .paragraph(let text):
                lines += wrap(TextLayout.singleLine(text), width: available).map { pad + $0 }
            case .code(let text):
                lines += text.split(separator: "\n", omittingEmptySubsequences: false).map { pad + TextLayout.singleLine(String($0)) }
            }
        }
        return lines
    }

    /// `text` broken into lines of at most `width` columns at spaces; a longer word (a URL)
    /// gets a line of its own.
    public static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        var used = 0
        for word in text.split(separator: " ") {
            let columns = TextLayout.width(word)
            if used > 0, used + 1 + columns > width {
                lines.append(line)
                line = ""
                used = 0
            }
            if used > 0 {
                line += " "
                used += 1
            }
            line += word
            used += columns
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }
}
