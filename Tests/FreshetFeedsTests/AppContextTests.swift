import Foundation
import FreshetFeeds
import Testing

@Suite("App context: which Hacker News answers keep a list's lifetime")
struct AppContextTests {
    @Test("A URL whose path ends in stories.json is a list (query and fragment aside); an item is not")
    func storyListURLs() throws {
        let lists = ["https://hacker-news.firebaseio.com/v0/topstories.json", "http://127.0.0.1:8080/v0/askstories.json?print=pretty",
                     "https://example.com/v0/newstories.json#top"]
        let others = ["https://hacker-news.firebaseio.com/v0/item/8863.json", "https://example.com/v0/topstories.json/x",
                      "https://example.com/v0/stories.json.bak", "https://example.com/v0/item/1.json?stories.json"]
        for text in lists { #expect(AppContext.namesStoryList(try #require(URL(string: text))), "\(text)") }
        for text in others { #expect(!AppContext.namesStoryList(try #require(URL(string: text))), "\(text)") }
    }
}
