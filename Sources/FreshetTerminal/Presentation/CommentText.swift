import Foundation
import FreshetFeeds

/// Hacker News comment HTML as text for a terminal: `<p>` paragraphs, `<pre><code>` blocks kept
/// verbatim, links as `text (url)` (or just the URL when the text is the URL, as HN writes
/// them), `<i>` as `*text*` (HN's own markup for it), other tags dropped, entities decoded.
public enum CommentText {
    /// A block of rendered text.
    public enum Block: Sendable, Hashable {
        /// Prose, on one line: wrap it to the width you have.
        case paragraph(String)
        /// Preformatted lines (`<pre><code>`): keep them as they are.
        case code(String)
    }

    /// `html` as blocks.
    public static func blocks(_ html: String) -> [Block] {
        var blocks: [Block] = []
        var paragraph = ""
        var code: String?
        var link: (href: String, text: String)?

        func flushParagraph() {
            let collapsed = paragraph.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" })
                .joined(separator: " ")
            if !collapsed.isEmpty { blocks.append(.paragraph(collapsed)) }
            paragraph = ""
        }
        func append(_ text: String) {
            if code != nil {
                code! += text
            } else if link != nil {
                link!.text += text
            } else {
                paragraph += text
            }
        }

        for token in HTMLText.tokens(html) {
            guard case .tag(let name, let closing, let attributes) = token else {
                if case .text(let text) = token { append(text) }
                continue
            }
            switch (name, closing) {
            case ("p", false):
                if code == nil { flushParagraph() }
            case ("br", _):
                append(code != nil ? "\n" : " ")
            case ("pre", false):
                flushParagraph()
                code = ""
            case ("pre", true):
                if let text = code {
                    let trimmed = text.hasSuffix("\n") ? String(text.dropLast()) : text
                    if !trimmed.isEmpty { blocks.append(.code(trimmed)) }
                }
                code = nil
            case ("a", false) where code == nil:
                link = (HTMLText.attribute("href", in: attributes) ?? "", "")
            case ("a", true):
                if let (href, text) = link {
                    link = nil
                    paragraph += linkText(text: text, href: href)
                }
            case ("i", _), ("em", _):
                if code == nil { append("*") }
            default:
                break
            }
        }
        if let (href, text) = link { paragraph += linkText(text: text, href: href) }
        if let text = code, !text.isEmpty { blocks.append(.code(text)) }
        flushParagraph()
        return blocks
    }

    /// `html` as plain text: paragraphs and code blocks separated by blank lines, unwrapped.
    public static func plain(_ html: String) -> String {
        blocks(html).map { block in
            switch block {
            case .paragraph(let text), .code(let text): return text
            }
        }.joined(separator: "\n\n")
    }

    /// HN writes links as `<a href="URL">URL</a>`, shortening long texts with `...`: then the
    /// URL alone says it all; otherwise `text (URL)`.
    static func linkText(text: String, href: String) -> String {
        let shown = text.trimmingCharacters(in: .whitespaces)
        guard !href.isEmpty else { return shown }
        if shown.isEmpty || shown == href { return href }
        for ellipsis in ["...", "…"] where shown.hasSuffix(ellipsis) {
            if href.hasPrefix(String(shown.dropLast(ellipsis.count))) { return href }
        }
        return "\(shown) (\(href))"
    }
}
