import Foundation

/// One pre-rendered event of a repository feed.
struct EventRecord: Sendable {
    var id: UInt64
    var createdAt: Int
    var json: String
}

/// The event feed of one repository, newest first, with the generator state needed to
/// prepend more events deterministically.
struct RepoFeed: Sendable {
    var events: [EventRecord]
    var generator: EventGenerator
}

/// Generates realistic GitHub events for one repository.
struct EventGenerator: Sendable {
    static let maxSpan = 31 * 86_400
    /// Ids of events added after start are above every generated id.
    static let firstAddedID: UInt64 = 40_000_000_000 + UInt64(maxSpan + 1) * 256

    let repo: GitHubWorld.Repo
    var rng: SplitMix64
    var issueNumber: Int
    var versionMinor: Int
    var versionPatch: Int
    let versionMajor: Int

    static let types: [(String, Double)] = [
        ("PushEvent", 30), ("WatchEvent", 18), ("IssueCommentEvent", 12), ("PullRequestEvent", 10),
        ("IssuesEvent", 8), ("ForkEvent", 6), ("CreateEvent", 5), ("DeleteEvent", 3), ("PullRequestReviewEvent", 3),
        ("PullRequestReviewCommentEvent", 3), ("ReleaseEvent", 1.2), ("CommitCommentEvent", 0.5), ("GollumEvent", 0.4),
        ("DiscussionEvent", 0.5), ("MemberEvent", 0.2), ("PublicEvent", 0.05), ("SponsorshipEvent", 0.2),
    ]

    init(repo: GitHubWorld.Repo, seed: UInt64) {
        self.repo = repo
        self.rng = SplitMix64(seed: seed, stream: "github.events", index: Hashing.fnv1a64(repo.fullName.lowercased()))
        self.issueNumber = repo.firstIssueNumber
        self.versionMajor = rng.int(1...7)
        self.versionMinor = rng.int(0...12)
        self.versionPatch = rng.int(0...4)
    }

    /// Generates the initial feed: `count` events (at most 300 kept), newest a few minutes
    /// before `anchor`, spread over less than 30 days.
    static func initialFeed(repo: GitHubWorld.Repo, world: GitHubWorld, seed: UInt64, count: Int) -> RepoFeed {
        var gen = EventGenerator(repo: repo, seed: seed)
        let n = max(0, min(count, 300))
        guard n > 0 else { return RepoFeed(events: [], generator: gen) }
        let avgGap = max(60, min(4 * 3600, (29 * 86_400) / n))
        var offsets: [Int] = []  // seconds before anchor, newest first
        var offset = gen.rng.int(45...900)
        for _ in 0..<n {
            guard offset < 30 * 86_400 - 60 else { break }
            offsets.append(offset)
            offset += gen.rng.int(30...(2 * avgGap))
        }
        let sponsorshipAt = offsets.count >= 20 ? gen.rng.int(20..<offsets.count) : -1
        var events: [EventRecord] = []
        events.reserveCapacity(offsets.count)
        // Generate oldest first so issue numbers and versions grow with time.
        for (i, off) in offsets.enumerated().reversed() {
            let created = world.anchor - off
            let id = 40_000_000_000 + UInt64(maxSpan - off) * 256 + UInt64(repo.index % 256)
            let type = i == sponsorshipAt ? "SponsorshipEvent" : gen.nextType()
            events.append(gen.makeEvent(id: id, type: type, createdAt: created, world: world))
        }
        events.reverse()
        return RepoFeed(events: events, generator: gen)
    }

    mutating func nextType() -> String {
        let i = rng.weighted(Self.types.map(\.1))
        return Self.types[i].0
    }

    private mutating func actor(_ world: GitHubWorld, maintainerBias: Double) -> GitHubWorld.User {
        let login = rng.chance(maintainerBias) ? rng.pick(repo.maintainers) : rng.pick(world.actorPool)
        return world.user(login) ?? world.user("octocat")!
    }

    private mutating func sha() -> String { rng.hex(40) }

    private mutating func version() -> String {
        if rng.chance(0.25) {
            versionMinor += 1
            versionPatch = 0
        } else {
            versionPatch += 1
        }
        return "\(versionMajor).\(versionMinor).\(versionPatch)"
    }

    private mutating func branchName() -> String {
        let words = ["async-retry", "sendable-conformance", "fix-leak", "linux-ci", "docs-typo", "visionos", "swift-6", "cancellation", "privacy-manifest", "cleanup"]
        switch rng.int(0..<4) {
        case 0: return "feature/" + rng.pick(words)
        case 1: return "fix/" + rng.pick(words) + "-" + String(rng.int(10...999))
        case 2: return "dependabot/swift/swift-nio-2.\(rng.int(60...80)).0"
        default: return rng.pick(words)
        }
    }

    private mutating func issueTitle() -> String {
        let types = ["Session", "Observable", "Store", "DataRequest", "ImageCache", "Reducer", "EventLoop", "DatabaseQueue", "Driver", "Router", "Publisher"]
        let features = ["async/await overloads", "visionOS support", "a privacy manifest", "Sendable conformances", "a custom JSONDecoder", "a retry policy", "Swift Testing"]
        let t = rng.pick(types)
        switch rng.int(0..<10) {
        case 0: return "Crash in \(t) when the app enters background on iOS \(rng.int(16...18))"
        case 1: return "\(t) leaks memory after cancellation"
        case 2: return "Support Swift 6 strict concurrency"
        case 3: return "Add \(rng.pick(features)) to \(t)"
        case 4: return "Build fails on Linux with Swift 6.\(rng.int(0...1))"
        case 5: return "Deprecation warnings in Xcode 16.\(rng.int(0...2))"
        case 6: return "`\(t.lowercased()).values` never finishes when the task is cancelled"
        case 7: return "Question: how do I retry a request with exponential backoff?"
        case 8: return "Sendable warning when using \(t) inside an actor"
        default: return "Docs: fix typo in README & Getting Started"
        }
    }

    private mutating func commentBody() -> String {
        let bodies = [
            "Thanks for the report! Could you share a minimal reproduction project?",
            "I'm seeing the same thing on iOS 18.1 with Xcode 16.1.\n\n```swift\nlet task = Task { try await client.send(request) }\ntask.cancel()\n```\n\nThe continuation is never resumed.",
            "This should be fixed by #\(max(1, issueNumber - rng.int(1...40))). Can you try `main`?",
            "LGTM 👍",
            "Closing as this is expected behaviour: the subscription is disposed when the `DisposeBag` is deallocated.",
            "> Could we make this `Sendable`?\n\nNot without breaking API, unfortunately. Let's revisit for the next major.",
            "Same here, +1. Any workaround in the meantime?",
            "Nice catch — I've pushed a fix, would you mind reviewing?",
        ]
        return rng.pick(bodies)
    }

    private mutating func commitMessage(_ world: GitHubWorld) -> String {
        let types = ["Session", "Observable", "Store", "Request", "Cache", "Scheduler", "EventLoop"]
        switch rng.int(0..<10) {
        case 0: return "Fix typo in README.md"
        case 1: return "Bump actions/checkout from 3 to 4"
        case 2: return "Merge pull request #\(max(1, issueNumber - rng.int(0...20))) from \(rng.pick(world.actorPool))/\(branchName())\n\n\(issueTitle())"
        case 3: return "Add Sendable conformance to \(rng.pick(types))"
        case 4: return "Update CHANGELOG"
        case 5: return "Refactor \(rng.pick(types)) to use async/await"
        case 6: return "Fix crash when cancelling an in-flight request"
        case 7: return "Remove deprecated APIs"
        case 8: return "[CI] Add Swift 6.0 to the test matrix"
        default: return "Improve documentation for \(rng.pick(types).lowercased()) lifecycle"
        }
    }

    private func repoRef(_ world: GitHubWorld) -> JSON {
        obj(("id", .int(repo.id)), ("name", .string(repo.fullName)), ("url", .string("\(GitHubWorld.api)/repos/\(repo.fullName)")))
    }

    private func actorJSON(_ user: GitHubWorld.User) -> JSON {
        obj(
            ("id", .int(user.id)), ("login", .string(user.login)), ("display_login", .string(user.login)),
            ("gravatar_id", ""), ("url", .string("\(GitHubWorld.api)/users/\(user.login)")),
            ("avatar_url", .string("https://avatars.githubusercontent.com/u/\(user.id)?")))
    }

    private func issueJSON(_ world: GitHubWorld, number: Int, title: String, user: GitHubWorld.User, state: String,
                           comments: Int, created: Int, updated: Int, body: String?, issueID: Int) -> JSON {
        let url = "\(GitHubWorld.api)/repos/\(repo.fullName)/issues/\(number)"
        return obj(
            ("url", .string(url)), ("repository_url", .string("\(GitHubWorld.api)/repos/\(repo.fullName)")),
            ("labels_url", .string(url + "/labels{/name}")), ("comments_url", .string(url + "/comments")),
            ("events_url", .string(url + "/events")), ("html_url", .string("https://github.com/\(repo.fullName)/issues/\(number)")),
            ("id", .int(issueID)), ("node_id", .string(world.nodeID("05:Issue", issueID))), ("number", .int(number)),
            ("title", .string(title)), ("user", world.simpleUserJSON(user)), ("labels", []), ("state", .string(state)),
            ("locked", false), ("assignee", nil), ("assignees", []), ("milestone", nil), ("comments", .int(comments)),
            ("created_at", .string(SimDate.iso8601(created))), ("updated_at", .string(SimDate.iso8601(updated))),
            ("closed_at", state == "closed" ? .string(SimDate.iso8601(updated)) : .null),
            ("author_association", .string(repo.maintainers.contains(user.login) ? "MEMBER" : "NONE")),
            ("active_lock_reason", nil), ("body", JSON(body)))
    }

    private mutating func pullRequestJSON(_ world: GitHubWorld, number: Int, action: String, user: GitHubWorld.User,
                                          created: Int, updated: Int) -> JSON {
        let url = "\(GitHubWorld.api)/repos/\(repo.fullName)/pulls/\(number)"
        let id = 1_500_000_000 + rng.int(0..<900_000_000)
        let closed = action == "closed"
        let merged = closed && rng.chance(0.8)
        let branch = branchName()
        return obj(
            ("url", .string(url)), ("id", .int(id)), ("node_id", .string(world.nodeID("011:PullRequest", id))),
            ("html_url", .string("https://github.com/\(repo.fullName)/pull/\(number)")),
            ("diff_url", .string("https://github.com/\(repo.fullName)/pull/\(number).diff")),
            ("number", .int(number)), ("state", .string(closed ? "closed" : "open")), ("locked", false),
            ("title", .string(issueTitle())), ("user", world.simpleUserJSON(user)),
            ("body", rng.chance(0.15) ? .null : .string("Fixes #\(max(1, number - rng.int(1...30))).\n\n- [x] Tests added\n- [x] CHANGELOG updated")),
            ("created_at", .string(SimDate.iso8601(created))), ("updated_at", .string(SimDate.iso8601(updated))),
            ("closed_at", closed ? .string(SimDate.iso8601(updated)) : .null),
            ("merged_at", merged ? .string(SimDate.iso8601(updated)) : .null),
            ("draft", .bool(!closed && rng.chance(0.1))),
            ("head", obj(("label", .string("\(user.login):\(branch)")), ("ref", .string(branch)), ("sha", .string(sha())))),
            ("base", obj(("label", .string("\(repo.owner):\(repo.defaultBranch)")), ("ref", .string(repo.defaultBranch)), ("sha", .string(sha())))),
            ("author_association", .string(repo.maintainers.contains(user.login) ? "MEMBER" : "CONTRIBUTOR")),
            ("merged", .bool(merged)), ("comments", .int(rng.int(0...12))), ("commits", .int(rng.int(1...9))),
            ("additions", .int(rng.int(1...600))), ("deletions", .int(rng.int(0...300))), ("changed_files", .int(rng.int(1...20))))
    }

    /// Builds one event of the given type.
    mutating func makeEvent(id: UInt64, type: String, createdAt: Int, world: GitHubWorld) -> EventRecord {
        let payload: JSON
        let actor: GitHubWorld.User
        switch type {
        case "PushEvent":
            actor = self.actor(world, maintainerBias: 0.85)
            let size = rng.chance(0.1) ? rng.int(6...25) : rng.int(1...4)
            var commits: [JSON] = []
            for _ in 0..<min(size, 20) {
                let s = sha()
                let author = rng.chance(0.7) ? actor : self.actor(world, maintainerBias: 0.5)
                commits.append(obj(
                    ("sha", .string(s)),
                    ("author", obj(("email", .string("\(author.login.lowercased())@users.noreply.github.com")), ("name", .string(author.name ?? author.login)))),
                    ("message", .string(commitMessage(world))), ("distinct", true),
                    ("url", .string("\(GitHubWorld.api)/repos/\(repo.fullName)/commits/\(s)"))))
            }
            let head = commits.last.flatMap { c -> String? in
                if case .object(let p) = c, case .string(let s)? = p.first?.1 { return s }
                return nil
            } ?? sha()
            payload = obj(
                ("repository_id", .int(repo.id)), ("push_id", .int(20_000_000_000 + rng.int(0..<999_999_999))),
                ("size", .int(size)), ("distinct_size", .int(size)),
                ("ref", .string("refs/heads/" + (rng.chance(0.8) ? repo.defaultBranch : branchName()))),
                ("head", .string(head)), ("before", .string(sha())), ("commits", .array(commits)))
        case "WatchEvent":
            actor = self.actor(world, maintainerBias: 0.02)
            payload = obj(("action", "started"))
        case "IssueCommentEvent":
            actor = self.actor(world, maintainerBias: 0.5)
            let number = max(1, issueNumber - rng.int(0...60))
            let opener = self.actor(world, maintainerBias: 0.1)
            let issueCreated = createdAt - rng.int(600...20 * 86_400)
            let commentID = 2_000_000_000 + rng.int(0..<900_000_000)
            let isPR = rng.chance(0.35)
            var issue = issueJSON(world, number: number, title: issueTitle(), user: opener, state: rng.chance(0.8) ? "open" : "closed",
                                  comments: rng.int(1...30), created: issueCreated, updated: createdAt,
                                  body: rng.chance(0.2) ? nil : "### Description\n\n\(commentBody())", issueID: 1_000_000_000 + rng.int(0..<999_999_999))
            if isPR, case .object(var p) = issue {
                p.append(("pull_request", obj(("url", .string("\(GitHubWorld.api)/repos/\(repo.fullName)/pulls/\(number)")), ("html_url", .string("https://github.com/\(repo.fullName)/pull/\(number)")))))
                issue = .object(p)
            }
            payload = obj(
                ("action", "created"), ("issue", issue),
                ("comment", obj(
                    ("url", .string("\(GitHubWorld.api)/repos/\(repo.fullName)/issues/comments/\(commentID)")),
                    ("html_url", .string("https://github.com/\(repo.fullName)/issues/\(number)#issuecomment-\(commentID)")),
                    ("id", .int(commentID)), ("node_id", .string(world.nodeID("012:IssueComment", commentID))),
                    ("user", world.simpleUserJSON(actor)), ("created_at", .string(SimDate.iso8601(createdAt))),
                    ("updated_at", .string(SimDate.iso8601(createdAt))),
                    ("author_association", .string(repo.maintainers.contains(actor.login) ? "MEMBER" : "NONE")),
                    ("body", .string(commentBody())))))
        case "IssuesEvent":
            actor = self.actor(world, maintainerBias: 0.3)
            let action = ["opened", "opened", "closed", "reopened"][rng.int(0..<4)]
            let number: Int
            if action == "opened" {
                issueNumber += rng.int(1...3)
                number = issueNumber
            } else {
                number = max(1, issueNumber - rng.int(1...80))
            }
            payload = obj(
                ("action", .string(action)),
                ("issue", issueJSON(world, number: number, title: issueTitle(), user: action == "opened" ? actor : self.actor(world, maintainerBias: 0.1),
                                    state: action == "closed" ? "closed" : "open", comments: action == "opened" ? 0 : rng.int(0...25),
                                    created: action == "opened" ? createdAt : createdAt - rng.int(3600...40 * 86_400), updated: createdAt,
                                    body: rng.chance(0.15) ? nil : commentBody(), issueID: 1_000_000_000 + rng.int(0..<999_999_999))))
        case "PullRequestEvent":
            actor = self.actor(world, maintainerBias: 0.6)
            let action = ["opened", "opened", "closed", "closed", "reopened"][rng.int(0..<5)]
            let number: Int
            if action == "opened" {
                issueNumber += rng.int(1...3)
                number = issueNumber
            } else {
                number = max(1, issueNumber - rng.int(1...30))
            }
            let pr = pullRequestJSON(world, number: number, action: action, user: actor,
                                     created: action == "opened" ? createdAt : createdAt - rng.int(3600...10 * 86_400), updated: createdAt)
            payload = obj(("action", .string(action)), ("number", .int(number)), ("pull_request", pr))
        case "PullRequestReviewEvent":
            actor = self.actor(world, maintainerBias: 0.9)
            let number = max(1, issueNumber - rng.int(0...15))
            let author = self.actor(world, maintainerBias: 0.2)
            let reviewID = 1_800_000_000 + rng.int(0..<900_000_000)
            let state = ["approved", "approved", "commented", "changes_requested"][rng.int(0..<4)]
            payload = obj(
                ("action", "created"),
                ("review", obj(
                    ("id", .int(reviewID)), ("node_id", .string(world.nodeID("017:PullRequestReview", reviewID))),
                    ("user", world.simpleUserJSON(actor)), ("body", state == "approved" ? .null : .string(commentBody())),
                    ("commit_id", .string(sha())), ("submitted_at", .string(SimDate.iso8601(createdAt))), ("state", .string(state)),
                    ("html_url", .string("https://github.com/\(repo.fullName)/pull/\(number)#pullrequestreview-\(reviewID)")),
                    ("author_association", "MEMBER"))),
                ("pull_request", pullRequestJSON(world, number: number, action: "opened", user: author, created: createdAt - rng.int(600...5 * 86_400), updated: createdAt)))
        case "PullRequestReviewCommentEvent":
            actor = self.actor(world, maintainerBias: 0.7)
            let number = max(1, issueNumber - rng.int(0...15))
            let author = self.actor(world, maintainerBias: 0.2)
            let commentID = 1_400_000_000 + rng.int(0..<900_000_000)
            let files = ["Sources/\(repo.name)/Session.swift", "Sources/\(repo.name)/Request.swift", "Tests/\(repo.name)Tests/RequestTests.swift", "README.md", "Package.swift"]
            payload = obj(
                ("action", "created"),
                ("comment", obj(
                    ("url", .string("\(GitHubWorld.api)/repos/\(repo.fullName)/pulls/comments/\(commentID)")),
                    ("id", .int(commentID)), ("diff_hunk", "@@ -12,7 +12,9 @@ public final class Session {"),
                    ("path", .string(rng.pick(files))), ("commit_id", .string(sha())), ("user", world.simpleUserJSON(actor)),
                    ("body", .string(rng.chance(0.5) ? "nit: this could be `private`." : "Should this be `@Sendable`? The closure escapes into a `Task`.")),
                    ("created_at", .string(SimDate.iso8601(createdAt))), ("updated_at", .string(SimDate.iso8601(createdAt))),
                    ("html_url", .string("https://github.com/\(repo.fullName)/pull/\(number)#discussion_r\(commentID)")),
                    ("author_association", "MEMBER"))),
                ("pull_request", pullRequestJSON(world, number: number, action: "opened", user: author, created: createdAt - rng.int(600...5 * 86_400), updated: createdAt)))
        case "ForkEvent":
            actor = self.actor(world, maintainerBias: 0)
            let forkID = 800_000_000 + rng.int(0..<300_000_000)
            let full = "\(actor.login)/\(repo.name)"
            payload = obj(("forkee", obj(
                ("id", .int(forkID)), ("node_id", .string(world.nodeID("010:Repository", forkID))), ("name", .string(repo.name)),
                ("full_name", .string(full)), ("private", false), ("owner", world.simpleUserJSON(actor)),
                ("html_url", .string("https://github.com/\(full)")), ("description", JSON(repo.description)), ("fork", true),
                ("url", .string("\(GitHubWorld.api)/repos/\(full)")), ("created_at", .string(SimDate.iso8601(createdAt))),
                ("updated_at", .string(SimDate.iso8601(createdAt))), ("pushed_at", .string(SimDate.iso8601(repo.pushedAt < createdAt ? repo.pushedAt : createdAt - 60))),
                ("stargazers_count", 0), ("watchers_count", 0), ("language", nil), ("forks_count", 0), ("open_issues_count", 0),
                ("default_branch", .string(repo.defaultBranch)), ("public", true))))
        case "CreateEvent":
            actor = self.actor(world, maintainerBias: 0.8)
            let isTag = rng.chance(0.35)
            payload = obj(
                ("ref", .string(isTag ? version() : branchName())), ("ref_type", .string(isTag ? "tag" : "branch")),
                ("full_ref", nil), ("master_branch", .string(repo.defaultBranch)), ("description", JSON(repo.description)),
                ("pusher_type", "user"))
        case "DeleteEvent":
            actor = self.actor(world, maintainerBias: 0.8)
            payload = obj(("ref", .string(branchName())), ("ref_type", "branch"), ("full_ref", nil), ("pusher_type", "user"))
        case "ReleaseEvent":
            actor = self.actor(world, maintainerBias: 1)
            let tag = version()
            let releaseID = 150_000_000 + rng.int(0..<100_000_000)
            let pr = max(1, issueNumber - rng.int(0...10))
            payload = obj(
                ("action", "published"),
                ("release", obj(
                    ("url", .string("\(GitHubWorld.api)/repos/\(repo.fullName)/releases/\(releaseID)")),
                    ("html_url", .string("https://github.com/\(repo.fullName)/releases/tag/\(tag)")),
                    ("id", .int(releaseID)), ("author", world.simpleUserJSON(actor)),
                    ("node_id", .string(world.nodeID("07:Release", releaseID))), ("tag_name", .string(tag)),
                    ("target_commitish", .string(repo.defaultBranch)), ("name", .string(rng.chance(0.5) ? tag : "\(repo.name) \(tag)")),
                    ("draft", false), ("prerelease", .bool(rng.chance(0.1))), ("created_at", .string(SimDate.iso8601(createdAt - 120))),
                    ("published_at", .string(SimDate.iso8601(createdAt))), ("assets", []),
                    ("body", .string("## What's Changed\n* \(issueTitle()) by @\(rng.pick(world.actorPool)) in https://github.com/\(repo.fullName)/pull/\(pr)\n\n**Full Changelog**: https://github.com/\(repo.fullName)/compare/\(tag)")))))
        case "CommitCommentEvent":
            actor = self.actor(world, maintainerBias: 0.3)
            let commentID = 130_000_000 + rng.int(0..<50_000_000)
            let commit = sha()
            payload = obj(
                ("action", "created"),
                ("comment", obj(
                    ("url", .string("\(GitHubWorld.api)/repos/\(repo.fullName)/comments/\(commentID)")),
                    ("html_url", .string("https://github.com/\(repo.fullName)/commit/\(commit)#commitcomment-\(commentID)")),
                    ("id", .int(commentID)), ("user", world.simpleUserJSON(actor)), ("position", nil), ("line", nil), ("path", nil),
                    ("commit_id", .string(commit)), ("created_at", .string(SimDate.iso8601(createdAt))),
                    ("updated_at", .string(SimDate.iso8601(createdAt))), ("author_association", "NONE"),
                    ("body", .string(commentBody())))))
        case "GollumEvent":
            actor = self.actor(world, maintainerBias: 0.7)
            let page = ["Home", "Getting-Started", "FAQ", "Migration-Guide", "Contributing"][rng.int(0..<5)]
            payload = obj(("pages", [obj(
                ("page_name", .string(page)), ("title", .string(page.replacingOccurrences(of: "-", with: " "))), ("summary", nil),
                ("action", .string(rng.chance(0.8) ? "edited" : "created")), ("sha", .string(sha())),
                ("html_url", .string("https://github.com/\(repo.fullName)/wiki/\(page)")))]))
        case "DiscussionEvent":
            actor = self.actor(world, maintainerBias: 0.2)
            let number = rng.int(1...3000)
            payload = obj(
                ("action", "created"),
                ("discussion", obj(
                    ("number", .int(number)), ("title", .string(issueTitle())),
                    ("html_url", .string("https://github.com/\(repo.fullName)/discussions/\(number)")),
                    ("user", world.simpleUserJSON(actor)), ("category", obj(("name", "Q&A"), ("emoji", ":pray:"))),
                    ("created_at", .string(SimDate.iso8601(createdAt))), ("body", .string(commentBody())))))
        case "MemberEvent":
            actor = self.actor(world, maintainerBias: 1)
            let member = self.actor(world, maintainerBias: 0)
            payload = obj(("member", world.simpleUserJSON(member)), ("action", "added"))
        case "PublicEvent":
            actor = self.actor(world, maintainerBias: 1)
            payload = obj()
        default:  // SponsorshipEvent and anything else a client will not know
            actor = self.actor(world, maintainerBias: 0.5)
            let sponsor = self.actor(world, maintainerBias: 0)
            payload = obj(
                ("action", "created"),
                ("sponsorship", obj(
                    ("sponsor", world.simpleUserJSON(sponsor)), ("sponsorable", world.simpleUserJSON(actor)),
                    ("privacy_level", "public"), ("tier", obj(("name", .string("$\([5, 10, 25][rng.int(0..<3)]) a month")), ("is_one_time", false))))))
        }
        var pairs: [(String, JSON)] = [
            ("id", .string(String(id))), ("type", .string(type)), ("actor", actorJSON(actor)), ("repo", repoRef(world)),
            ("payload", payload), ("public", true), ("created_at", .string(SimDate.iso8601(createdAt))),
        ]
        if let owner = world.user(repo.owner), owner.isOrganization {
            pairs.append(("org", obj(
                ("id", .int(owner.id)), ("login", .string(owner.login)), ("gravatar_id", ""),
                ("url", .string("\(GitHubWorld.api)/orgs/\(owner.login)")),
                ("avatar_url", .string("https://avatars.githubusercontent.com/u/\(owner.id)?")))))
        }
        return EventRecord(id: id, createdAt: createdAt, json: JSON.object(pairs).rendered)
    }
}
