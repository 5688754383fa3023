import DaumSearchAPI
import HackerNewsAPI

extension HNItem {
    /// `HNItem.title` with HTML entities decoded (`Q&amp;A` becomes `Q&A`).
    public var displayTitle: String? {
        title.map(HTMLText.decodeEntities)
    }

    /// `HNItem.text` as plain text: paragraphs separated by blank lines, tags
    /// removed, entities decoded.
    public var plainText: String? {
        text.map(HTMLText.plainText)
    }
}

extension BlogPost {
    /// `BlogPost.title` without tags, entities decoded.
    public var displayTitle: String { HTMLText.plainText(title) }

    /// `BlogPost.contents` without tags, entities decoded.
    public var displayContents: String { HTMLText.plainText(contents) }
}
