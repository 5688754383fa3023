import Foundation
import Freshet
import GitHubAPI
import Testing
import HTTPTypes

// MARK: - Fixtures (docs/API-FACTS.md; the search example's elided "…" values are filled in)

private let watchEventJSON = """
{
  "id": "22249084947",
  "type": "WatchEvent",
  "actor": {"id": 583231, "login": "octocat", "display_login": "octocat", "gravatar_id": "",
            "url": "https://api.github.com/users/octocat",
            "avatar_url": "https://avatars.githubusercontent.com/u/583231?"},
  "repo": {"id": 1296269, "name": "octocat/Hello-World",
           "url": "https://api.github.com/repos/octocat/Hello-World"},
  "payload": {"action": "started"},
  "public": true,
  "created_at": "2022-06-09T12:47:28Z"
}
"""

private let searchJSON = """
{"total_count": 412553, "incomplete_results": false,
 "items": [{"id": 22458259, "name": "Alamofire", "full_name": "Alamofire/Alamofire",
            "owner": {"login": "Alamofire", "id": 7774181, "avatar_url": "https://avatars.githubusercontent.com/u/7774181?v=4"},
            "private": false, "html_url": "https://github.com/Alamofire/Alamofire",
            "description": "Elegant HTTP Networking in Swift", "fork": false,
            "created_at": "2014-07-31T05:56:19Z", "updated_at": "2024-05-01T10:00:00Z", "pushed_at": "2024-04-30T09:00:00Z",
            "stargazers_count": 41000, "watchers_count": 41000, "forks_count": 7500,
            "open_issues_count": 30, "language": "Swift", "topics": ["networking"],
            "default_branch": "master", "score": 1.0}]}
"""

/// An event in docs/API-FACTS.md's shape with the given type, id JSON and payload JSON.
private func eventJSON(type: String, id: String = "\"1\"", payload: String) -> String {
    """
    {"id": \(id), "type": "\(type)",
     "actor": {"id": 1, "login": "alice", "avatar_url": "https://avatars.example/u/1"},
     "repo": {"id": 2, "name": "alice/tool", "url": "https://api.github.com/repos/alice/tool"},
     "payload": \(payload), "public": true, "created_at": "2024-01-02T03:04:05Z"}
    """
}

private func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
    try GitHub.decoder.decode(type, from: Data(json.utf8))
}

/// Encodes with ``GitHub/encoder`` and reads the result back as a JSON object.
private func encodedObject(_ value: some Encodable) throws -> [String: Any] {
    let data = try GitHub.encoder.encode(value)
    return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
}

// MARK: - Events

@Test func decodesTheWatchEventExample() throws {
    let event = try decode(GitHubEvent.self, watchEventJSON)
    #expect(event.id == "22249084947")
    #expect(event.type == .watch)
    #expect(event.type.isKnown)
    #expect(event.actor.id == 583231)
    #expect(event.actor.login == "octocat")
    #expect(event.actor.displayLogin == "octocat")
    #expect(event.actor.avatarURL == "https://avatars.githubusercontent.com/u/583231?")
    #expect(event.actor.url == "https://api.github.com/users/octocat")
    #expect(event.repo == GitHubEvent.Repo(id: 1296269, name: "octocat/Hello-World",
                                           url: "https://api.github.com/repos/octocat/Hello-World"))
    #expect(event.payload.action == "started")
    #expect(event.isPublic)
    #expect(event.createdAt == Date(timeIntervalSince1970: 1_654_778_848))
    #expect(event.org == nil)
    #expect(event.summary == "octocat starred (octocat/Hello-World)")
    #expect(event.activity == "starred")
}

@Test func acceptsANumericEventIDAndEncodesItAsAString() throws {
    let json = watchEventJSON.replacingOccurrences(of: "\"22249084947\"", with: "22249084947")
    #expect(!json.contains("\"22249084947\""))
    let event = try decode(GitHubEvent.self, json)
    #expect(event.id == "22249084947")
    #expect(try encodedObject(event)["id"] as? String == "22249084947")
}

@Test func rejectsAnEventIDThatIsNeitherStringNorNumber() {
    #expect(throws: DecodingError.self) {
        try decode(GitHubEvent.self, eventJSON(type: "WatchEvent", id: "{\"x\": 1}", payload: "{}"))
    }
}

@Test func unknownEventTypeDecodesAndRoundTrips() throws {
    let payload = #"{"action": "created", "sponsorship": {"tier": {"monthly_price_in_cents": 500}}, "list": [1, 2.5, null, true, "x"]}"#
    let event = try decode(GitHubEvent.self, eventJSON(type: "SponsorshipEvent", payload: payload))
    #expect(event.type.rawValue == "SponsorshipEvent")
    #expect(!event.type.isKnown)
    #expect(event.type.shortName == "Sponsorship")
    #expect(event.payload.action == "created")
    #expect(event.activity == "sponsorship")
    #expect(event.summary == "alice sponsorship (alice/tool)")

    let data = try GitHub.encoder.encode(event)
    let text = String(decoding: data, as: UTF8.self)
    #expect(text.contains(#""type":"SponsorshipEvent""#))
    let again = try GitHub.decoder.decode(GitHubEvent.self, from: data)
    #expect(again.type.rawValue == "SponsorshipEvent")
    #expect(again.payload.raw == event.payload.raw)
    #expect(again == event)
    #expect(event.payload.raw["sponsorship"]?["tier"]?["monthly_price_in_cents"]?.intValue == 500)
    #expect(event.payload.raw["list"] == .array([.int(1), .double(2.5), .null, .bool(true), .string("x")]))
}

@Test func publicEventHasAnEmptyPayload() throws {
    let event = try decode(GitHubEvent.self, eventJSON(type: "PublicEvent", payload: "{}"))
    #expect(event.type == .public)
    #expect(event.payload.isEmpty)
    #expect(event.payload.action == nil)
    #expect(event.payload.commits == nil)
    #expect(event.activity == "made the repository public")
    let object = try encodedObject(event)
    #expect((object["payload"] as? [String: Any])?.isEmpty == true)
}

@Test func missingPayloadDecodesAsEmpty() throws {
    let json = #"{"id": "9", "type": "PublicEvent", "actor": {"id": 1, "login": "a", "avatar_url": "u"}, "repo": {"id": 2, "name": "a/b", "url": "u"}, "public": true, "created_at": "2024-01-02T03:04:05Z"}"#
    let event = try decode(GitHubEvent.self, json)
    #expect(event.payload.isEmpty)
    #expect(event.payload == GitHubEvent.Payload())
}

@Test func pushEventCommits() throws {
    let payload = """
    {"repository_id": 2, "push_id": 10, "size": 2, "distinct_size": 1, "ref": "refs/heads/main",
     "head": "abc123", "before": "000111",
     "commits": [
       {"sha": "aaa", "author": {"email": "a@example.com", "name": "Alice"},
        "message": "Fix the parser\\n\\nLong explanation", "distinct": true, "url": "https://api.github.com/x/aaa"},
       {"sha": "bbb", "message": "Second"}]}
    """
    let event = try decode(GitHubEvent.self, eventJSON(type: "PushEvent", payload: payload))
    #expect(event.type == .push)
    #expect(event.payload.ref == "refs/heads/main")
    #expect(event.payload.size == 2)
    #expect(event.payload.distinctSize == 1)
    #expect(event.payload.head == "abc123")
    let commits = try #require(event.payload.commits)
    #expect(commits.count == 2)
    #expect(commits[0].sha == "aaa")
    #expect(commits[0].message == "Fix the parser\n\nLong explanation")
    #expect(commits[0].subject == "Fix the parser")
    #expect(commits[0].author == .init(name: "Alice", email: "a@example.com"))
    #expect(commits[0].distinct == true)
    #expect(commits[1].author == nil)
    #expect(event.activity == "pushed 2 commits to main")
    // The payload fields that have no typed property still encode back.
    #expect(event.payload.raw["push_id"] == .int(10))
    let encoded = try encodedObject(event)
    #expect((encoded["payload"] as? [String: Any])?["before"] as? String == "000111")
}

@Test func unexpectedPayloadShapesDoNotFailTheEvent() throws {
    let payload = #"{"action": 5, "size": "3", "commits": "none", "issue": {"number": "x"}, "ref": null}"#
    let event = try decode(GitHubEvent.self, eventJSON(type: "PushEvent", payload: payload))
    #expect(event.payload.action == nil)
    #expect(event.payload.size == nil)
    #expect(event.payload.commits == nil)
    #expect(event.payload.issue == nil)
    #expect(event.payload.ref == nil)
    #expect(event.payload.raw["size"] == .string("3"))

    for odd in ["[1, 2]", "null", "\"text\"", "42"] {
        let event = try decode(GitHubEvent.self, eventJSON(type: "WatchEvent", payload: odd))
        #expect(event.payload.action == nil, "payload \(odd)")
    }
}

@Test func payloadsOfTheDocumentedTypes() throws {
    let issueComment = try decode(GitHubEvent.self, eventJSON(type: "IssueCommentEvent", payload: """
        {"action": "created", "issue": {"number": 42, "title": "Crash on launch", "html_url": "https://github.com/alice/tool/issues/42", "user": {"login": "bob"}},
         "comment": {"body": "Same here", "id": 7}}
        """))
    #expect(issueComment.payload.issue == .init(number: 42, title: "Crash on launch",
                                                  htmlURL: "https://github.com/alice/tool/issues/42"))
    #expect(issueComment.payload.comment?.body == "Same here")
    #expect(issueComment.activity == "commented on issue #42: Crash on launch")

    let pull = try decode(GitHubEvent.self, eventJSON(type: "PullRequestEvent", payload: """
        {"action": "opened", "number": 7, "pull_request": {"number": 7, "title": "Add retries"}}
        """))
    #expect(pull.payload.number == 7)
    #expect(pull.payload.pullRequest == .init(number: 7, title: "Add retries"))
    #expect(pull.activity == "opened pull request #7: Add retries")

    let release = try decode(GitHubEvent.self, eventJSON(type: "ReleaseEvent", payload: """
        {"action": "published", "release": {"tag_name": "v1.2.0", "name": null}}
        """))
    #expect(release.payload.release == .init(tagName: "v1.2.0"))
    #expect(release.activity == "published release v1.2.0")

    let fork = try decode(GitHubEvent.self, eventJSON(type: "ForkEvent", payload: #"{"forkee": {"full_name": "bob/tool", "id": 3}}"#))
    #expect(fork.payload.forkee?.fullName == "bob/tool")
    #expect(fork.activity == "forked to bob/tool")

    let create = try decode(GitHubEvent.self, eventJSON(type: "CreateEvent", payload: #"{"ref": "v2", "ref_type": "tag", "master_branch": "main"}"#))
    #expect(create.payload.ref == "v2")
    #expect(create.payload.refType == "tag")
    #expect(create.activity == "created tag v2")

    let member = try decode(GitHubEvent.self, eventJSON(type: "MemberEvent", payload: #"{"action": "added", "member": {"login": "carol"}}"#))
    #expect(member.payload.member?.login == "carol")
}

@Test func decodesTheOptionalOrganization() throws {
    let json = watchEventJSON.replacingOccurrences(
        of: #""public": true,"#,
        with: #""public": true, "org": {"id": 9919, "login": "github", "gravatar_id": "", "url": "https://api.github.com/orgs/github", "avatar_url": "https://avatars.example/u/9919"},"#)
    let event = try decode(GitHubEvent.self, json)
    #expect(event.org == .init(id: 9919, login: "github", avatarURL: "https://avatars.example/u/9919",
                               url: "https://api.github.com/orgs/github"))
}

@Test func eventsEncodeWithGitHubFieldNamesAndDates() throws {
    let event = try decode(GitHubEvent.self, watchEventJSON)
    let object = try encodedObject(event)
    #expect(object["created_at"] as? String == "2022-06-09T12:47:28Z")
    #expect(object["public"] as? Bool == true)
    #expect(object["type"] as? String == "WatchEvent")
    let actor = try #require(object["actor"] as? [String: Any])
    #expect(actor["display_login"] as? String == "octocat")
    #expect(actor["avatar_url"] as? String == "https://avatars.githubusercontent.com/u/583231?")
    #expect(object["createdAt"] == nil)
    #expect(try GitHub.decoder.decode(GitHubEvent.self, from: GitHub.encoder.encode(event)) == event)
}

@Test func payloadMadeFromRawJSONReadsItsFields() {
    let payload = GitHubEvent.Payload(raw: .object(["action": .string("started"), "number": .int(3)]))
    #expect(payload.action == "started")
    #expect(payload.number == 3)
    #expect(!payload.isEmpty)
}

@Test func decodesAnEventArray() throws {
    let events = try decode([GitHubEvent].self, "[\(watchEventJSON), \(eventJSON(type: "NewFancyEvent", payload: "{}"))]")
    #expect(events.map(\.type.rawValue) == ["WatchEvent", "NewFancyEvent"])
}

// MARK: - Repositories and search

@Test func decodesTheSearchExample() throws {
    let result = try decode(RepositorySearchResult.self, searchJSON)
    #expect(result.totalCount == 412553)
    #expect(!result.incompleteResults)
    let repo = try #require(result.items.first)
    #expect(repo.id == 22458259)
    #expect(repo.name == "Alamofire")
    #expect(repo.fullName == "Alamofire/Alamofire")
    #expect(repo.owner == .init(login: "Alamofire", id: 7774181,
                                avatarURL: "https://avatars.githubusercontent.com/u/7774181?v=4"))
    #expect(!repo.isPrivate)
    #expect(!repo.isFork)
    #expect(repo.htmlURL == "https://github.com/Alamofire/Alamofire")
    #expect(repo.description == "Elegant HTTP Networking in Swift")
    #expect(repo.createdAt == Date(timeIntervalSince1970: 1_406_786_179))
    #expect(repo.pushedAt != nil)
    #expect(repo.stargazersCount == 41000)
    #expect(repo.watchersCount == 41000)
    #expect(repo.forksCount == 7500)
    #expect(repo.openIssuesCount == 30)
    #expect(repo.language == "Swift")
    #expect(repo.topics == ["networking"])
    #expect(repo.defaultBranch == "master")
    #expect(repo.score == 1.0)
    #expect(repo.license == nil)
    #expect(repo.subscribersCount == nil)
}

@Test func searchResultRoundTripsWithUpstreamNames() throws {
    let result = try decode(RepositorySearchResult.self, searchJSON)
    let object = try encodedObject(result)
    #expect(object["total_count"] as? Int == 412553)
    #expect(object["incomplete_results"] as? Bool == false)
    let item = try #require((object["items"] as? [[String: Any]])?.first)
    #expect(item["full_name"] as? String == "Alamofire/Alamofire")
    #expect(item["stargazers_count"] as? Int == 41000)
    #expect(item["private"] as? Bool == false)
    #expect(item["created_at"] as? String == "2014-07-31T05:56:19Z")
    #expect(try GitHub.decoder.decode(RepositorySearchResult.self, from: GitHub.encoder.encode(result)) == result)
}

@Test func repositoryWithNullableFieldsNull() throws {
    let json = """
    {"id": 1, "name": "empty", "full_name": "a/empty", "owner": {"login": "a", "id": 2},
     "private": false, "html_url": "https://github.com/a/empty", "description": null, "fork": true,
     "created_at": "2020-01-01T00:00:00Z", "updated_at": "2020-01-02T00:00:00Z", "pushed_at": null,
     "stargazers_count": 0, "watchers_count": 0, "forks_count": 0, "open_issues_count": 0,
     "language": null, "default_branch": "main", "license": null}
    """
    let repo = try decode(GitHubRepository.self, json)
    #expect(repo.description == nil)
    #expect(repo.language == nil)
    #expect(repo.license == nil)
    #expect(repo.pushedAt == nil)
    #expect(repo.topics == [])
    #expect(repo.isFork)
    #expect(repo.owner.avatarURL == nil)
    #expect(try GitHub.decoder.decode(GitHubRepository.self, from: GitHub.encoder.encode(repo)) == repo)
}

@Test func singleRepositoryExtras() throws {
    let json = """
    {"id": 33569135, "name": "RxSwift", "full_name": "ReactiveX/RxSwift",
     "owner": {"login": "ReactiveX", "id": 6407041, "avatar_url": "https://avatars.githubusercontent.com/u/6407041?v=4"},
     "private": false, "html_url": "https://github.com/ReactiveX/RxSwift", "description": "Reactive Programming in Swift",
     "fork": false, "created_at": "2015-04-07T21:25:17Z", "updated_at": "2024-05-01T10:00:00Z",
     "pushed_at": "2024-04-29T08:00:00Z", "stargazers_count": 24000, "watchers_count": 24000,
     "forks_count": 4100, "open_issues_count": 20, "language": "Swift", "topics": ["rxswift", "reactive"],
     "default_branch": "main", "subscribers_count": 550, "network_count": 4100,
     "license": {"key": "mit", "name": "MIT License", "spdx_id": "MIT", "url": "https://api.github.com/licenses/mit", "node_id": "x"}}
    """
    let repo = try decode(GitHubRepository.self, json)
    #expect(repo.subscribersCount == 550)
    #expect(repo.networkCount == 4100)
    #expect(repo.license == .init(key: "mit", name: "MIT License", spdxID: "MIT"))
    #expect(repo.score == nil)
    let object = try encodedObject(repo)
    #expect((object["license"] as? [String: Any])?["spdx_id"] as? String == "MIT")
    #expect(object["subscribers_count"] as? Int == 550)
}

@Test func repositoryMissingARequiredFieldFails() {
    #expect(throws: DecodingError.self) {
        try decode(GitHubRepository.self, #"{"id": 1, "name": "x"}"#)
    }
}

// MARK: - Users

@Test func userWithNullFields() throws {
    let json = """
    {"login": "octocat", "id": 583231, "avatar_url": "https://avatars.githubusercontent.com/u/583231?v=4",
     "html_url": "https://github.com/octocat", "type": "User", "site_admin": false,
     "name": null, "company": null, "blog": "", "location": null, "email": null, "bio": null,
     "public_repos": 8, "public_gists": 8, "followers": 9000, "following": 9,
     "created_at": "2011-01-25T18:44:36Z", "updated_at": "2024-01-22T12:13:28Z"}
    """
    let user = try decode(GitHubUser.self, json)
    #expect(user.login == "octocat")
    #expect(user.id == 583231)
    #expect(user.name == nil)
    #expect(user.company == nil)
    #expect(user.location == nil)
    #expect(user.email == nil)
    #expect(user.bio == nil)
    #expect(user.blog == "")
    #expect(user.publicRepos == 8)
    #expect(user.followers == 9000)
    #expect(user.following == 9)
    #expect(!user.isOrganization)
    #expect(user.createdAt == Date(timeIntervalSince1970: 1_295_981_076))
    let object = try encodedObject(user)
    #expect(object["public_repos"] as? Int == 8)
    #expect(object["created_at"] as? String == "2011-01-25T18:44:36Z")
}

@Test func userWithAllFields() throws {
    let json = """
    {"login": "github", "id": 9919, "avatar_url": "a", "html_url": "https://github.com/github", "type": "Organization",
     "name": "GitHub", "company": "@github", "blog": "https://github.com/about", "location": "San Francisco",
     "email": "x@github.com", "bio": "How people build software.", "public_repos": 500, "followers": 50000,
     "following": 0, "created_at": "2008-05-11T04:37:31Z", "updated_at": "2024-01-22T12:13:28Z"}
    """
    let user = try decode(GitHubUser.self, json)
    #expect(user.isOrganization)
    #expect(user.name == "GitHub")
    #expect(user.bio == "How people build software.")
    #expect(try GitHub.decoder.decode(GitHubUser.self, from: GitHub.encoder.encode(user)) == user)
}

// MARK: - Dates

@Test func datesWithFractionalSecondsAreAccepted() throws {
    #expect(GitHub.parseDate("2022-06-09T12:47:28.500Z") == Date(timeIntervalSince1970: 1_654_778_848.5))
    #expect(GitHub.parseDate("2022-06-09T12:47:28Z") == Date(timeIntervalSince1970: 1_654_778_848))
    #expect(GitHub.parseDate("June 9, 2022") == nil)
    #expect(GitHub.formatDate(Date(timeIntervalSince1970: 1_654_778_848)) == "2022-06-09T12:47:28Z")
}

@Test func aMalformedDateFailsDecoding() {
    let json = watchEventJSON.replacingOccurrences(of: "2022-06-09T12:47:28Z", with: "09/06/2022")
    #expect(throws: DecodingError.self) { try decode(GitHubEvent.self, json) }
}

// MARK: - Endpoints

@Test func repoEventsKeepsEachNameOneSegment() throws {
    let endpoint = GitHub.repoEvents(owner: "a/../b", name: "x?y")
    #expect(try endpoint.encodedTarget() == "/repos/a%2F..%2Fb/x%3Fy/events?per_page=30")
    #expect(endpoint.pathSegments == ["repos", "a/../b", "x?y", "events"])
    #expect(endpoint.method == .get)
    #expect(try GitHub.repoEvents(owner: "..", name: ".").encodedTarget() == "/repos/%2E%2E/%2E/events?per_page=30")
    #expect(try GitHub.repoEvents(owner: "ReactiveX", name: "RxSwift", perPage: 100, page: 3).encodedTarget()
        == "/repos/ReactiveX/RxSwift/events?per_page=100&page=3")
}

@Test func everyEndpointSendsTheGitHubHeaders() throws {
    let targets: [(String, [String: String])] = [
        (try GitHub.repoEvents(owner: "o", name: "r").encodedTarget(), headerMap(GitHub.repoEvents(owner: "o", name: "r"))),
        (try GitHub.searchRepositories(query: "q").encodedTarget(), headerMap(GitHub.searchRepositories(query: "q"))),
        (try GitHub.user(login: "u").encodedTarget(), headerMap(GitHub.user(login: "u"))),
        (try GitHub.repository(owner: "o", name: "r").encodedTarget(), headerMap(GitHub.repository(owner: "o", name: "r"))),
    ]
    #expect(targets.map(\.0) == ["/repos/o/r/events?per_page=30", "/search/repositories?q=q", "/users/u", "/repos/o/r"])
    for (target, headers) in targets {
        #expect(headers["Accept"] == "application/vnd.github+json", "\(target)")
        #expect(headers["X-GitHub-Api-Version"] == "2022-11-28", "\(target)")
        #expect(headers["Authorization"] == nil, "\(target)")
    }
}

private func headerMap<T>(_ endpoint: Endpoint<T>) -> [String: String] {
    Dictionary(endpoint.headers.map { ($0.name.rawName, $0.value) }, uniquingKeysWith: { $1 })
}

@Test func searchEndpointEncodesTheQuery() throws {
    let endpoint = GitHub.searchRepositories(query: "language:swift stars:>100", sort: "stars", order: "desc", perPage: 5, page: 2)
    #expect(try endpoint.encodedTarget()
        == "/search/repositories?q=language%3Aswift%20stars%3A%3E100&sort=stars&order=desc&per_page=5&page=2")
}

@Test func userAndRepositoryPaths() throws {
    #expect(try GitHub.user(login: "a b/c").encodedTarget() == "/users/a%20b%2Fc")
    #expect(try GitHub.repository(owner: "apple", name: "swift-nio").encodedTarget() == "/repos/apple/swift-nio")
    #expect(throws: APIError.self) { try GitHub.user(login: "").encodedTarget() }
    #expect(GitHub.defaultBaseURL.absoluteString == "https://api.github.com")
}

@Test func endpointsDecodeWithTheGitHubDecoder() throws {
    // A plain decoder (as an APIClient might pass) knows nothing of GitHub's dates: the
    // endpoint must use GitHub.decoder itself.
    let events = try GitHub.repoEvents(owner: "o", name: "r").decode(Data("[\(watchEventJSON)]".utf8), JSONDecoder())
    #expect(events.first?.createdAt == Date(timeIntervalSince1970: 1_654_778_848))
    let search = try GitHub.searchRepositories(query: "q").decode(Data(searchJSON.utf8), JSONDecoder())
    #expect(search.items.count == 1)
}

@Suite("GitHub.avatar: only the avatars host, path and query kept, size set")
struct AvatarEndpointTests {
    @Test("An avatar_url becomes path segments and query, with s= replaced")
    func mapsURL() throws {
        let endpoint = try #require(GitHub.avatar("https://avatars.githubusercontent.com/u/583231?v=4&s=40", size: 128))
        #expect(endpoint.pathSegments == ["u", "583231"])
        #expect(endpoint.query == [QueryItem("v", "4"), QueryItem("s", "128")])
        #expect(endpoint.absoluteURL == nil, "sent to the client's base URL, never where the JSON says")
        let bare = try #require(GitHub.avatar("https://avatars.githubusercontent.com/u/583231?", size: 9999))
        #expect(bare.query == [QueryItem("s", "460")])
        #expect(try bare.decode(Data([1, 2, 3]), JSONDecoder()) == Data([1, 2, 3]))
    }

    @Test("URLs off the avatars host, not https, with credentials, a port or dot segments are refused",
          arguments: [
              "http://avatars.githubusercontent.com/u/1", "https://evil.example/u/1",
              "https://avatars.githubusercontent.com.evil.example/u/1", "https://user:pw@avatars.githubusercontent.com/u/1",
              "https://avatars.githubusercontent.com:444/u/1", "https://avatars.githubusercontent.com/u/../../x",
              "https://avatars.githubusercontent.com/", "", "not a url", "file:///etc/passwd",
          ])
    func refuses(url: String) {
        #expect(GitHub.avatar(url, size: 64) == nil)
    }
}
