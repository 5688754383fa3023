import Foundation

/// The simulated Hacker News: stories, Ask/Show HN, jobs, polls, comment trees and
/// users, generated from the seed. Text is generated when an item is rendered, from a
/// generator seeded with the item id, so it is as deterministic as the structure.
struct HackerNewsWorld: Sendable {
    enum Kind: UInt8, Sendable { case story, ask, show, job, poll, pollopt, comment }

    struct Item: Sendable {
        var id: Int
        var kind: Kind
        var by: String?
        var time: Int
        var title: String?
        var url: String?
        var hasText: Bool
        var score: Int
        var parent: Int?
        var kids: [Int] = []
        var parts: [Int] = []
        var descendants: Int = 0
        var deleted = false
        var dead = false
        var bare = false
        var depth = 0
    }

    struct User: Sendable {
        var id: String
        var created: Int
        var karma: Int
        var hasAbout: Bool
        var submitted: [Int]
    }

    let seed: UInt64
    let anchor: Int
    private(set) var items: [Int: Item] = [:]
    /// Allocated ids whose item is the JSON literal `null` (item 0 is always null too).
    private(set) var nullIDs: Set<Int> = []
    private(set) var lists: [String: [Int]] = [:]
    private(set) var users: [String: User] = [:]
    private(set) var maxItemID = 0

    init(seed: UInt64, anchor: Int, storyCount: Int) {
        self.seed = seed
        self.anchor = anchor
        var rng = SplitMix64(seed: seed, stream: "hn.world")
        let userPool = Self.makeUserPool(&rng)

        let plainCount = max(0, storyCount)
        let sideCount = min(200, max(10, storyCount * 2 / 5))
        let pollCount = max(1, storyCount / 100)

        struct Spec { var kind: Kind; var time: Int }
        var specs: [Spec] = []
        func add(_ kind: Kind, count: Int, span: Int) {
            for _ in 0..<count {
                specs.append(Spec(kind: kind, time: anchor - rng.int(60...span)))
            }
        }
        add(.story, count: plainCount, span: max(3600, 3 * 86_400 * max(plainCount, 1) / 500))
        add(.ask, count: sideCount, span: 12 * 86_400)
        add(.show, count: sideCount, span: 9 * 86_400)
        add(.job, count: sideCount, span: 40 * 86_400)
        add(.poll, count: pollCount, span: 20 * 86_400)
        specs.sort { $0.time < $1.time }

        var nextID = 41_000_000 + Int(rng.next() % 900_000)
        func allocate() -> Int {
            nextID += rng.int(1...9)
            return nextID
        }

        var topLevel: [Int] = []
        for spec in specs {
            let id = allocate()
            var r = SplitMix64(seed: seed, stream: "hn.item", index: UInt64(id))
            var item = Item(id: id, kind: spec.kind, by: r.pick(userPool), time: spec.time, title: nil, url: nil,
                            hasText: false, score: 1, parent: nil)
            switch spec.kind {
            case .story:
                item.title = Self.storyTitle(&r)
                item.url = Self.storyURL(&r, title: item.title!)
                item.score = r.heavyTail(min: 1, median: 12, max: 2_400)
                let roll = r.double()
                if roll < 0.01 { item.dead = true } else if roll < 0.015 { item.deleted = true } else if roll < 0.02 { item.bare = true }
            case .ask:
                item.title = Self.askTitle(&r)
                item.hasText = true
                item.score = r.heavyTail(min: 1, median: 20, max: 900)
            case .show:
                item.title = Self.showTitle(&r)
                item.url = r.chance(0.85) ? "https://github.com/\(item.by!)/\(Self.slug(item.title!, maxWords: 2))" : nil
                item.hasText = item.url == nil || r.chance(0.4)
                item.score = r.heavyTail(min: 1, median: 10, max: 900)
            case .job:
                item.title = Self.jobTitle(&r)
                if r.chance(0.4) { item.by = nil }
                if r.chance(0.6) {
                    item.url = "https://www.ycombinator.com/companies/\(Self.slug(item.title!, maxWords: 1))/jobs/\(r.hex(7))-\(Self.slug(item.title!, maxWords: 4))"
                } else {
                    item.hasText = true
                }
                item.score = 1
                if r.chance(0.03) { nullIDs.insert(id) }
            case .poll:
                item.title = HNText.pollTitle(seed: seed, poll: id)
                item.hasText = r.chance(0.5)
                item.score = r.heavyTail(min: 5, median: 60, max: 700)
                for option in 0..<HNText.pollOptionCount(seed: seed, poll: id) {
                    let pid = allocate()
                    var opt = Item(id: pid, kind: .pollopt, by: item.by, time: item.time, title: nil, url: nil, hasText: true,
                                   score: r.heavyTail(min: 0, median: 30, max: 600), parent: id)
                    opt.depth = option
                    items[pid] = opt
                    item.parts.append(pid)
                }
            case .pollopt, .comment:
                break
            }
            items[id] = item
            topLevel.append(id)

            // Comment tree.
            guard spec.kind != .job, !item.deleted, !item.bare else { continue }
            var target = 0
            if !(spec.kind == .story && item.score < 4 && r.chance(0.6)) {
                target = min(120, Int(Double(item.score) * r.double() * 0.5) + (r.chance(0.5) ? r.int(0...6) : 0))
            }
            if item.dead { target = 0 }
            var comments: [Int] = []
            var live = 0
            for i in 0..<target {
                let cid = allocate()
                let parentID: Int
                if i == 0 || r.chance(0.35) || comments.isEmpty {
                    parentID = id
                } else {
                    let window = comments.suffix(8)
                    let candidate = window[window.startIndex + r.int(0..<window.count)]
                    parentID = (items[candidate]?.depth ?? 0) >= 9 ? id : candidate
                }
                let parentItem = items[parentID]!
                let ceiling = anchor - 1
                let t = min(ceiling, max(parentItem.time + 1, parentItem.time + r.int(20...(r.chance(0.7) ? 3_600 : 14_400))))
                var c = Item(id: cid, kind: .comment, by: r.pick(userPool), time: t, title: nil, url: nil, hasText: true,
                             score: 0, parent: parentID)
                c.depth = parentID == id ? 0 : parentItem.depth + 1
                let roll = r.double()
                if roll < 0.02 { c.deleted = true } else if roll < 0.035 { c.dead = true } else { live += 1 }
                items[cid] = c
                items[parentID]!.kids.append(cid)
                comments.append(cid)
            }
            // Kids arrive ranked, not in id order.
            for cid in comments where items[cid]!.kids.count > 1 {
                r.shuffle(&items[cid]!.kids)
            }
            r.shuffle(&items[id]!.kids)
            items[id]!.descendants = live
        }
        maxItemID = nextID

        // Lists.
        func rank(_ item: Item) -> Double {
            let ageHours = Double(max(0, anchor - item.time)) / 3600
            return Double(max(0, item.score - 1)) / Self.pow18(ageHours + 2)
        }
        let all = topLevel.compactMap { items[$0] }
        let visible = all.filter { !$0.dead && !$0.deleted && !$0.bare && ($0.kind != .job) }
        var top = visible.sorted { (rank($0), $0.id) > (rank($1), $1.id) }.map(\.id)
        let jobsNewest = all.filter { $0.kind == .job }.sorted { $0.time > $1.time }.map(\.id)
        if let firstNullJob = jobsNewest.first(where: { nullIDs.contains($0) }) ?? jobsNewest.first {
            nullIDs.insert(firstNullJob)
            if top.count > 11 { top.insert(firstNullJob, at: 11) } else { top.append(firstNullJob) }
        }
        var position = 40
        for job in jobsNewest.prefix(12) where !top.contains(job) {
            if position < top.count { top.insert(job, at: position) }
            position += 30
        }
        lists["topstories"] = Array(top.prefix(500))
        lists["newstories"] = Array(all.filter { $0.kind != .job }.sorted { $0.time > $1.time }.map(\.id).prefix(500))
        lists["beststories"] = Array(visible.filter { $0.kind != .job }.sorted { ($0.score, $0.id) > ($1.score, $1.id) }.map(\.id).prefix(500))
        lists["askstories"] = Array(visible.filter { $0.kind == .ask }.sorted { (rank($0), $0.id) > (rank($1), $1.id) }.map(\.id).prefix(200))
        lists["showstories"] = Array(visible.filter { $0.kind == .show }.sorted { (rank($0), $0.id) > (rank($1), $1.id) }.map(\.id).prefix(200))
        lists["jobstories"] = Array(jobsNewest.prefix(200))

        // Users and what they submitted.
        var submitted: [String: [Int]] = [:]
        for item in items.values {
            if let by = item.by, !item.deleted, !item.bare { submitted[by, default: []].append(item.id) }
        }
        for login in userPool {
            var r = SplitMix64(seed: seed, stream: "hn.user", index: Hashing.fnv1a64(login))
            let ids = (submitted[login] ?? []).sorted(by: >)
            users[login] = User(
                id: login, created: anchor - r.int(200 * 86_400...16 * 365 * 86_400),
                karma: r.heavyTail(min: 1, median: 2_000, max: 180_000), hasAbout: r.chance(0.45), submitted: ids)
        }
    }

    private static func pow18(_ x: Double) -> Double {
        pow(x, 1.8)
    }

    // MARK: - Rendering

    /// The body of `/v0/item/{id}.json`, exactly as Firebase writes it (keys sorted).
    func itemJSON(_ id: Int) -> String {
        guard id > 0, !nullIDs.contains(id), let item = items[id] else { return "null" }
        let kind: String
        switch item.kind {
        case .story, .ask, .show: kind = "story"
        case .job: kind = "job"
        case .poll: kind = "poll"
        case .pollopt: kind = "pollopt"
        case .comment: kind = "comment"
        }
        if item.bare {
            return JSON.sortedObject([("id", .int(id)), ("time", .int(item.time)), ("type", .string(kind))]).rendered
        }
        var pairs: [(String, JSON)] = [("id", .int(id)), ("time", .int(item.time)), ("type", .string(kind))]
        if item.deleted {
            pairs.append(("deleted", true))
            if let parent = item.parent { pairs.append(("parent", .int(parent))) }
            if !item.kids.isEmpty { pairs.append(("kids", .array(item.kids.map(JSON.int)))) }
            return JSON.sortedObject(pairs).rendered
        }
        if let by = item.by { pairs.append(("by", .string(by))) }
        if item.dead { pairs.append(("dead", true)) }
        if !item.kids.isEmpty { pairs.append(("kids", .array(item.kids.map(JSON.int)))) }
        var r = SplitMix64(seed: seed, stream: "hn.text", index: UInt64(id))
        switch item.kind {
        case .story, .ask, .show, .poll:
            pairs.append(("descendants", .int(item.descendants)))
            pairs.append(("score", .int(item.score)))
            pairs.append(("title", .string(HNText.escapeTitle(item.title ?? ""))))
            if let url = item.url { pairs.append(("url", .string(url))) }
            if item.hasText { pairs.append(("text", .string(HNText.body(&r, paragraphs: r.int(1...3))))) }
            if item.kind == .poll { pairs.append(("parts", .array(item.parts.map(JSON.int)))) }
        case .job:
            pairs.append(("score", .int(item.score)))
            pairs.append(("title", .string(HNText.escapeTitle(item.title ?? ""))))
            if let url = item.url { pairs.append(("url", .string(url))) }
            if item.hasText { pairs.append(("text", .string(HNText.jobText(&r)))) }
        case .pollopt:
            pairs.append(("poll", .int(item.parent ?? 0)))
            pairs.append(("score", .int(item.score)))
            pairs.append(("text", .string(HNText.escape(HNText.pollOption(seed: seed, poll: item.parent ?? 0, index: item.depth)))))
        case .comment:
            pairs.append(("parent", .int(item.parent ?? 0)))
            pairs.append(("text", .string(HNText.body(&r, paragraphs: r.chance(0.6) ? 1 : r.int(2...4)))))
        }
        return JSON.sortedObject(pairs).rendered
    }

    /// The body of `/v0/user/{id}.json`.
    func userJSON(_ login: String) -> String {
        guard let user = users[login] else { return "null" }
        var pairs: [(String, JSON)] = [
            ("id", .string(user.id)), ("created", .int(user.created)), ("karma", .int(user.karma)),
            ("submitted", .array(user.submitted.map(JSON.int))),
        ]
        if user.hasAbout {
            var r = SplitMix64(seed: seed, stream: "hn.about", index: Hashing.fnv1a64(login))
            pairs.append(("about", .string(HNText.about(&r))))
        }
        return JSON.sortedObject(pairs).rendered
    }

    func listJSON(_ name: String) -> String? {
        lists[name].map { JSON.array($0.map(JSON.int)).rendered }
    }
}
