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
    /// `BlogPost.title` as the rows show it, without highlights (``BlogText/plain(_:)``): tags
    /// removed, entities decoded, on one line.
    public var displayTitle: String { BlogText.plain(title) }

    /// `BlogPost.contents` as the rows show it, without highlights (``BlogText/plain(_:)``).
    public var displayContents: String { BlogText.plain(contents) }
}

// MARK: - `--json`: values as the rows show them

// The apps' one rule for JSON output: a text value is printed as the rows show it (HTML entities
// decoded, Kakao's `<b>` highlights removed); a field the API documents as HTML (Hacker News'
// `text` and `about`) stays HTML, as sent. Everything else is passed on as the service sent it.

extension HNItem {
    /// The item as the apps print it with `--json`: `title` decoded (``displayTitle``), `text`
    /// left as the HTML the API documents it to be.
    public var decodedForJSON: HNItem {
        var item = self
        item.title = displayTitle
        return item
    }
}

extension BlogPost {
    /// The post as the apps print it with `--json`: `title` and `contents` as plain text
    /// (``displayTitle``, ``displayContents``), without Kakao's `<b>` highlights and entities.
    public var decodedForJSON: BlogPost {
        var post = self
        post.title = displayTitle
        post.contents = displayContents
        return post
    }
}

extension BlogSearchResult {
    /// The page as the apps print it with `--json`: every post ``BlogPost/decodedForJSON``.
    public var decodedForJSON: BlogSearchResult {
        var result = self
        result.documents = documents.map(\.decodedForJSON)
        return result
    }
}

extension RankedStory {
    /// The story as the apps print it with `--json` (`HNItem.decodedForJSON`).
    public var decodedForJSON: RankedStory { RankedStory(rank: rank, item: item.decodedForJSON) }
}

extension CommentThread {
    /// The thread as the apps print it with `--json`: the root's title decoded; comments and poll
    /// options carry only `text`, which stays HTML.
    public var decodedForJSON: CommentThread {
        var thread = self
        thread.root = root.decodedForJSON
        return thread
    }
}
