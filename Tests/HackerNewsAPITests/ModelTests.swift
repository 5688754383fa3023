import Foundation
import Freshet
import HackerNewsAPI
import Testing
import HTTPTypes

private let dropboxJSON = """
{"by":"dhouston","descendants":71,"id":8863,"kids":[9224,8917],"score":104,
 "time":1175714200,"title":"My YC app: Dropbox - Throw away your USB drive",
 "type":"story","url":"http://www.getdropbox.com/u/2/screencast.html"}
"""

private func decodeItem(_ json: String) throws -> HNItem? {
    // Through the endpoint, with a plain decoder, as an APIClient would call it.
    try HackerNews.item(id: 1).decode(Data(json.utf8), JSONDecoder())
}

// MARK: - Items

@Test func decodesTheDropboxExample() throws {
    let item = try #require(try decodeItem(dropboxJSON))
    #expect(item.id == 8863)
    #expect(item.by == "dhouston")
    #expect(item.descendants == 71)
    #expect(item.kids == [9224, 8917])
    #expect(item.score == 104)
    #expect(item.time == 1_175_714_200)
    #expect(item.date == Date(timeIntervalSince1970: 1_175_714_200))
    #expect(item.title == "My YC app: Dropbox - Throw away your USB drive")
    #expect(item.type == .story)
    #expect(item.url == "http://www.getdropbox.com/u/2/screencast.html")
    #expect(item.isVisible)
    #expect(item.parent == nil)
    #expect(item.deleted == nil)
}

@Test func nullItemDecodesAsNil() throws {
    #expect(try decodeItem("null") == nil)
    #expect(try decodeItem(" null\n") == nil)
    #expect(try HackerNews.user(id: "nobody").decode(Data("null".utf8), JSONDecoder()) == nil)
}

@Test func bareRecordDecodes() throws {
    let item = try #require(try decodeItem(#"{"id":1,"time":2,"type":"story"}"#))
    #expect(item == HNItem(id: 1, type: .story, time: 2))
    #expect(item.by == nil)
    #expect(item.title == nil)
    #expect(item.kids == nil)
    #expect(item.date == Date(timeIntervalSince1970: 2))
    #expect(item.isVisible)
}

@Test func onlyTheIDIsRequired() throws {
    #expect(try decodeItem(#"{"id": 5}"#)?.id == 5)
    #expect(throws: DecodingError.self) { try decodeItem(#"{"time": 5, "type": "story"}"#) }
}

@Test func jobWithoutAuthor() throws {
    let item = try #require(try decodeItem("""
        {"id":192327,"score":6,"text":"Justin.tv is looking for a <i>Lead Flash Engineer</i>!",
         "time":1210981217,"title":"Justin.tv is looking for a Lead Flash Engineer!","type":"job","url":""}
        """))
    #expect(item.type == .job)
    #expect(item.by == nil)
    #expect(item.score == 6)
    #expect(item.text == "Justin.tv is looking for a <i>Lead Flash Engineer</i>!")
}

@Test func unknownItemTypeDecodes() throws {
    let item = try #require(try decodeItem(#"{"id": 3, "type": "launch"}"#))
    #expect(item.type?.rawValue == "launch")
    #expect(item.type != .story)
}

@Test func deletedAndDeadItemsAreNotVisible() throws {
    let deleted = try #require(try decodeItem(#"{"id": 2, "deleted": true, "type": "comment", "parent": 1, "time": 3}"#))
    #expect(!deleted.isVisible)
    #expect(deleted.parent == 1)
    let dead = try #require(try decodeItem(#"{"id": 3, "dead": true, "type": "story"}"#))
    #expect(!dead.isVisible)
    let alive = try #require(try decodeItem(#"{"id": 4, "dead": false, "deleted": false}"#))
    #expect(alive.isVisible)
}

@Test func pollAndOptions() throws {
    let poll = try #require(try decodeItem(#"{"id": 126809, "type": "poll", "parts": [126810, 126811], "descendants": 54, "score": 46, "by": "pg", "time": 1204403652, "title": "Poll: What would happen if News.YC had explicit support for polls?"}"#))
    #expect(poll.type == .poll)
    #expect(poll.parts == [126810, 126811])
    let option = try #require(try decodeItem(#"{"id": 160705, "type": "pollopt", "poll": 160704, "score": 335, "by": "pg", "time": 1207886576, "text": "Yes, ban them; I'm tired of seeing Valleywag stories on News.YC."}"#))
    #expect(option.type == .pollOption)
    #expect(option.poll == 160704)
}

@Test func itemArraysNullEmptyOrWrong() throws {
    #expect(try decodeItem(#"{"id": 1, "kids": null, "parts": null}"#) == HNItem(id: 1))
    #expect(try decodeItem(#"{"id": 1, "kids": [], "parts": [7]}"#) == HNItem(id: 1, kids: [], parts: [7]))
    #expect(throws: DecodingError.self) { try decodeItem(#"{"id": 1, "kids": ["2"]}"#) }
    #expect(throws: DecodingError.self) { try decodeItem(#"{"id": 1, "kids": 2}"#) }
    #expect(throws: DecodingError.self) { try decodeItem(#"{"id": 1, "type": 2}"#) }
    #expect(throws: DecodingError.self) { try decodeItem(#"{"id": "1"}"#) }
}

@Test("A listing decodes what a row shows and filters on, not an item's comments or poll")
func itemListingFields() throws {
    let json = #"{"by":"pg","dead":true,"descendants":3,"id":9,"kids":[10,11],"parent":8,"parts":[12],"poll":7,"score":5,"text":"t","time":60,"title":"T","type":"story","url":"u"}"#
    let listed = try #require(try HackerNews.item(id: 9, fields: .listing).decode(Data(json.utf8), JSONDecoder()))
    #expect(listed == HNItem(id: 9, type: .story, by: "pg", time: 60, text: "t", url: "u", score: 5, title: "T", descendants: 3, dead: true))
    let whole = try #require(try decodeItem(json))
    #expect(whole.kids == [10, 11] && whole.parent == 8 && whole.parts == [12] && whole.poll == 7)
    // A listing still refuses what is not an item.
    #expect(throws: DecodingError.self) { try HackerNews.item(id: 9, fields: .listing).decode(Data(#"{"id": "9"}"#.utf8), JSONDecoder()) }
}

@Test func itemEncodesOnlyWhatIsSet() throws {
    let item = HNItem(id: 7, type: .poll, by: "pg", kids: [8, 9], parts: [], dead: false)
    let json = String(decoding: try HackerNews.encoder.encode(item), as: UTF8.self)
    #expect(json == #"{"by":"pg","dead":false,"id":7,"kids":[8,9],"parts":[],"type":"poll"}"#)
    #expect(try HackerNews.decoder.decode(HNItem.self, from: Data(json.utf8)) == item)
}

@Test func itemsEncodeWithUpstreamNamesAndRoundTrip() throws {
    let item = try #require(try decodeItem(dropboxJSON))
    let data = try HackerNews.encoder.encode(item)
    let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    #expect(Set(object.keys) == ["by", "descendants", "id", "kids", "score", "time", "title", "type", "url"])
    #expect(object["type"] as? String == "story")
    #expect(object["time"] as? Int == 1_175_714_200)
    #expect(try HackerNews.decoder.decode(HNItem.self, from: data) == item)
}

// MARK: - Users

@Test func decodesAUser() throws {
    let json = #"{"about":"This is a test","created":1173923446,"id":"jl","karma":2937,"submitted":[8265435,8168423]}"#
    let user = try #require(try HackerNews.user(id: "jl").decode(Data(json.utf8), JSONDecoder()))
    #expect(user.id == "jl")
    #expect(user.created == 1_173_923_446)
    #expect(user.createdDate == Date(timeIntervalSince1970: 1_173_923_446))
    #expect(user.karma == 2937)
    #expect(user.about == "This is a test")
    #expect(user.submitted == [8265435, 8168423])
    let minimal = try HackerNews.decoder.decode(HNUser.self, from: Data(#"{"id":"x","created":1,"karma":0}"#.utf8))
    #expect(minimal.about == nil)
    #expect(minimal.submitted == nil)
}

// MARK: - Endpoints

@Test func storyListPathsAndLimits() throws {
    #expect(HackerNews.StoryList.allCases.map(\.fileName) == [
        "topstories.json", "newstories.json", "beststories.json",
        "askstories.json", "showstories.json", "jobstories.json",
    ])
    #expect(HackerNews.StoryList.allCases.map(\.maxCount) == [500, 500, 500, 200, 200, 200])
    let top = HackerNews.stories(.top)
    #expect(top.pathSegments == ["topstories.json"])
    #expect(try top.encodedTarget() == "/topstories.json")
    #expect(try HackerNews.stories(.job).encodedTarget() == "/jobstories.json")
    #expect(try top.decode(Data("[9129911, 9129199]".utf8), JSONDecoder()) == [9129911, 9129199])
}

@Test func itemAndUserPaths() throws {
    let item = HackerNews.item(id: 8863)
    #expect(item.pathSegments == ["item", "8863.json"])
    #expect(try item.encodedTarget() == "/item/8863.json")
    #expect(item.method == .get)
    #expect(try HackerNews.user(id: "pg").encodedTarget() == "/user/pg.json")
    #expect(try HackerNews.user(id: "a/b?c").encodedTarget() == "/user/a%2Fb%3Fc.json")
    #expect(HackerNews.defaultBaseURL.absoluteString == "https://hacker-news.firebaseio.com/v0")
}

// MARK: - A streamed list

private func change(_ json: String) throws -> HackerNews.ListChange {
    try HackerNews.listChanges(.top).decode(Data(json.utf8), JSONDecoder())
}

@Test("A streamed list: the whole list put, a patch of positions (null removes), a put at one position")
func liveListAppliesFirebaseEvents() throws {
    var list = HackerNews.LiveList()
    #expect(try list.apply("put", change(#"{"path":"/","data":[10,20,30,40]}"#)))
    #expect(list.ids == [10, 20, 30, 40])
    #expect(try list.apply("patch", change(#"{"path":"/","data":{"0":50,"1":10,"3":null}}"#)))
    #expect(list.ids == [50, 10, 30])
    #expect(try list.apply("put", change(#"{"path":"/2","data":60}"#)))
    #expect(list.ids == [50, 10, 60])
    #expect(try list.apply("put", change(#"{"path":"/1","data":null}"#)))
    #expect(list.ids == [50, 60])
    #expect(try !list.apply("patch", change(#"{"path":"/","data":{"0":50}}"#)), "no change, no redraw")
    #expect(try !list.apply("keep-alive", change(#"{"path":"/","data":[1]}"#)), "other event types change nothing")
    #expect(try list.apply("put", change(#"{"path":"/","data":null}"#)))
    #expect(list.ids.isEmpty)
    #expect(throws: DecodingError.self) { try change(#"{"path":"/","data":{"x":1}}"#) }
    #expect(throws: DecodingError.self) { try change(#"{"data":[1]}"#) }
}
