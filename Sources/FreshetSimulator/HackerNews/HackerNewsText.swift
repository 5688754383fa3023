import Foundation

/// Titles, URLs, usernames and HTML bodies in Hacker News style.
extension HackerNewsWorld {
    static let famousUsers = [
        "pg", "dang", "tptacek", "patio11", "jacquesm", "dhouston", "sama", "jl", "tosh", "ingve", "luu", "Tomte",
        "rbanffy", "todsacerdoti", "mooreds", "pseudolus", "CharlesW", "bookofjoe", "gmays", "PaulHoule", "zdw",
        "walterbell", "signa11", "jgrahamc", "kentonv", "simonw", "pjmlp", "surprisetalk", "thunderbong", "lxm",
        "whoishiring", "kragen", "nostrademons", "cperciva", "btilly", "DanielBMarkham",
    ]

    static func makeUserPool(_ r: inout SplitMix64) -> [String] {
        let adjectives = ["quiet", "rusty", "lazy", "brave", "cosmic", "tiny", "salty", "async", "lambda", "null", "hyper", "dark", "sober", "grumpy", "sleepy"]
        let nouns = ["fox", "otter", "compiler", "pointer", "kernel", "monad", "gopher", "crab", "falcon", "parser", "socket", "daemon", "penguin", "yak", "badger"]
        var pool = famousUsers
        var seen = Set(pool)
        while pool.count < 360 {
            let name: String
            switch r.int(0..<5) {
            case 0: name = r.pick(adjectives) + r.pick(nouns)
            case 1: name = r.pick(adjectives) + "_" + r.pick(nouns) + String(r.int(1...99))
            case 2: name = "throwaway" + String(r.int(1000...99999))
            case 3: name = String(r.hex(2)) + r.pick(nouns) + String(r.int(0...9))
            default: name = r.pick(nouns).capitalizedFirst + r.pick(adjectives).capitalizedFirst
            }
            if seen.insert(name).inserted { pool.append(name) }
        }
        return pool
    }

    static let topics = [
        "SQLite", "Rust", "Swift concurrency", "WebAssembly", "Postgres", "the Linux kernel", "HTTP caching",
        "reactive programming", "CRDTs", "Zig", "compilers", "type inference", "garbage collection", "TCP congestion control",
        "Bloom filters", "static site generators", "E-ink displays", "the 6502", "vector databases", "B-trees",
    ]

    static func storyTitle(_ r: inout SplitMix64) -> String {
        let topic = r.pick(topics)
        let companies = ["Apple", "Google", "Mozilla", "Cloudflare", "Kakao", "Fly.io", "GitHub", "Valve", "Nintendo", "Fastly"]
        let products = ["a new programming language", "an open-source sync engine", "a RISC-V laptop", "a local-first notes app", "a faster JSON parser"]
        switch r.int(0..<12) {
        case 0: return "\(["SQLite", "Rust", "Swift", "Postgres", "Python", "Go"][r.int(0..<6)]) \(r.int(1...17)).\(r.int(0...9)) released"
        case 1: return "The surprising history of \(topic)"
        case 2: return "Why \(topic) is harder than it looks"
        case 3: return "\(r.pick(companies)) announces \(r.pick(products))"
        case 4: return "A deep dive into \(topic)"
        case 5: return "I built \(r.pick(products)) in a weekend"
        case 6: return "\(topic.capitalizedFirst): lessons from \(r.int(2...15)) years in production"
        case 7: return "How we cut our p99 latency by \(r.int(20...95))%"
        case 8: return "What's new in Swift 6.\(r.int(0...2))"
        case 9: return "Q&A with the people behind \(topic)"
        case 10: return "\"\(topic.capitalizedFirst) considered harmful\" (\(r.int(1995...2023)))"
        default: return "Show the code: \(topic) in \(r.int(50...500)) lines"
        }
    }

    static func askTitle(_ r: inout SplitMix64) -> String {
        let topic = r.pick(topics)
        switch r.int(0..<7) {
        case 0: return "Ask HN: What are you working on? (\(["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"][r.int(0..<12)]) \(r.int(2023...2025)))"
        case 1: return "Ask HN: How do you keep up with \(topic)?"
        case 2: return "Ask HN: Q&A – best resources for learning \(topic)?"
        case 3: return "Ask HN: Is it worth learning \(["Rust", "Swift", "Haskell", "Elixir", "Zig"][r.int(0..<5)]) in \(r.int(2024...2025))?"
        case 4: return "Ask HN: What's your favorite \(["terminal", "text editor", "keyboard", "note-taking app"][r.int(0..<4)]) and why?"
        case 5: return "Ask HN: Those making $\(r.int(1...20) * 500)/month on side projects – show and tell"
        default: return "Ask HN: How do you handle rate limits & retries in API clients?"
        }
    }

    static func showTitle(_ r: inout SplitMix64) -> String {
        let names = ["Freshet", "Tidepool", "Quill", "Burrow", "Lantern", "Pebble", "Driftwood", "Sparrow", "Kelp", "Ripple"]
        let descriptions = [
            "A typed HTTP client for Swift with an RFC 9111 cache",
            "I made a terminal UI for Hacker News",
            "Search-as-you-type for any JSON API",
            "A tiny SQLite-backed job queue",
            "Open-source alternative to Postman that lives in your terminal",
            "A keyboard-driven GitHub activity feed",
            "I rewrote my side project's backend in Swift",
        ]
        return "Show HN: \(r.pick(names)) – \(r.pick(descriptions))"
    }

    static func jobTitle(_ r: inout SplitMix64) -> String {
        let companies = ["Tidebase", "Kelpware", "Lumen Labs", "Pebblebed", "Ferrous", "Quillpad", "Northwind AI", "Corvid"]
        let roles = ["Senior iOS Engineers", "a Founding Engineer", "Backend Engineers (Swift/Go)", "a Staff Infrastructure Engineer", "Product Designers", "an Engineering Manager"]
        return "\(r.pick(companies)) (YC \(r.chance(0.5) ? "S" : "W")\(r.int(15...24))) is hiring \(r.pick(roles))"
    }


    static func storyURL(_ r: inout SplitMix64, title: String) -> String {
        let s = slug(title, maxWords: 6)
        switch r.int(0..<9) {
        case 0: return "https://github.com/\(r.pick(famousUsers).lowercased())/\(slug(title, maxWords: 2))"
        case 1: return "https://lwn.net/Articles/\(r.int(900_000...999_999))/"
        case 2: return "https://en.wikipedia.org/wiki/\(slug(title, maxWords: 3).replacingOccurrences(of: "-", with: "_").capitalizedFirst)"
        case 3: return "https://arxiv.org/abs/\(r.int(2301...2512)).\(r.int(10000...29999))"
        case 4: return "https://www.nytimes.com/\(r.int(2024...2025))/\(r.int(1...12))/\(r.int(1...28))/technology/\(s).html"
        case 5: return "https://arstechnica.com/gadgets/\(r.int(2024...2025))/\(r.int(1...12))/\(s)/"
        case 6: return "https://blog.\(["rust-lang.org", "cloudflare.com", "jetbrains.com", "swift.org"][r.int(0..<4)])/\(s)/"
        case 7: return "https://www.youtube.com/watch?v=\(r.hex(11))"
        default: return "https://\(r.pick(famousUsers).lowercased()).dev/posts/\(s)"
        }
    }

    static func slug(_ title: String, maxWords: Int) -> String {
        var words: [String] = []
        var current = ""
        for c in title.lowercased() {
            if c.isASCII && (c.isLetter || c.isNumber) {
                current.append(c)
            } else if !current.isEmpty {
                words.append(current)
                current = ""
            }
        }
        if !current.isEmpty { words.append(current) }
        return words.prefix(maxWords).joined(separator: "-")
    }
}

/// HTML bodies escaped the way Hacker News escapes them (`&#x27;`, `&#x2F;`, `&quot;`).
enum HNText {
    static func escape(_ s: String) -> String { escape(s, title: false) }

    /// Titles arrive with `&`, `'` and `<>` escaped (`Q&amp;A`, `What&#x27;s`), not `"` or `/`.
    static func escapeTitle(_ s: String) -> String { escape(s, title: true) }

    private static func escape(_ s: String, title: Bool) -> String {
        var out = ""
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "'": out += "&#x27;"
            case "\"" where !title: out += "&quot;"
            case "/" where !title: out += "&#x2F;"
            default: out.append(c)
            }
        }
        return out
    }

    static let sentences = [
        "I've been using this in production for two years and it's been rock solid.",
        "The benchmarks don't include the cold-start case, which is where most of the cost is.",
        "This is the kind of thing that looks simple until you have to handle retries, timeouts & cancellation.",
        "Honestly the \"rewrite it\" approach rarely works; incremental migration is the way.",
        "We hit exactly this bug at work: the cache served a stale 200 after a 304 revalidation.",
        "Is there a reason they didn't use ETags here? That's what they're for.",
        "The original paper is worth reading, it's only 12 pages.",
        "Counterpoint: most teams don't need this level of complexity.",
        "I'd love to see a comparison with SQLite's WAL mode under concurrent writers.",
        "The author seems to conflate latency and throughput, which makes the conclusions shaky.",
        "Rate limits are a feature, not a bug: GitHub asks clients to back off when X-RateLimit-Remaining hits 0.",
        "Anyone know if this works on Linux? The README only mentions macOS.",
        "It's funny how every generation rediscovers the same ideas with a new name.",
        "Kind of off-topic, but the typography on that site is <really> nice.",
        "My rule of thumb: if it's not tested against a real server, it doesn't work.",
        "Swift's structured concurrency makes cancellation almost free, as long as you check for it.",
    ]

    static let links = [
        "https://github.com/apple/swift-nio",
        "https://www.sqlite.org/wal.html",
        "https://datatracker.ietf.org/doc/html/rfc9111",
        "https://news.ycombinator.com/item?id=8863",
        "https://en.wikipedia.org/wiki/Exponential_backoff",
    ]

    static let codeSnippets = [
        "  let (data, response) = try await session.data(from: url)\n  guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw Err.bad }",
        "  $ curl -H \"If-None-Match: W/\\\"abc\\\"\" https://api.github.com/repos/a/b/events",
        "  for try await item in stream.prefix(30) {\n      print(item.title)\n  }",
        "  if (x < 0 && y > 0) return -1;",
    ]

    /// Paragraphs joined with `<p>` the way HN does (no tag before the first one).
    static func body(_ r: inout SplitMix64, paragraphs: Int) -> String {
        var parts: [String] = []
        for p in 0..<max(1, paragraphs) {
            let roll = r.double()
            if p > 0 && roll < 0.12 {
                parts.append("<pre><code>" + escape(r.pick(codeSnippets)) + "\n</code></pre>")
                continue
            }
            if p == 0 && roll < 0.15 {
                parts.append("&gt; " + escape(r.pick(sentences)))
                continue
            }
            var text = ""
            for s in 0..<r.int(1...3) {
                if s > 0 { text += " " }
                var sentence = escape(r.pick(sentences))
                if r.chance(0.15), let space = sentence.firstIndex(of: " ") {
                    let word = sentence[..<space]
                    sentence = "<i>" + word + "</i>" + sentence[space...]
                }
                text += sentence
            }
            if r.chance(0.15) {
                let link = escape(r.pick(links))
                text += " <a href=\"\(link)\" rel=\"nofollow\">\(link)</a>"
            }
            parts.append(text)
        }
        return parts.joined(separator: "<p>")
    }

    static func jobText(_ r: inout SplitMix64) -> String {
        "We're a small team building developer tools used by thousands of companies.<p>"
            + escape("We're hiring engineers who care about reliability & performance. Remote (US/EU) or onsite in San Francisco.")
            + "<p>Apply here: <a href=\"" + escape("https://example.com/jobs/\(r.hex(6))") + "\" rel=\"nofollow\">"
            + escape("https://example.com/jobs") + "</a>"
    }

    static func about(_ r: inout SplitMix64) -> String {
        let abouts = [
            "Building things on the internet since 1999.<p>Email: " + escape("me@example.com"),
            "Software engineer. Interested in " + escape("databases & distributed systems."),
            escape("I work on compilers. Views are my own.") + "<p><a href=\"" + escape("https://example.com") + "\" rel=\"nofollow\">" + escape("https://example.com") + "</a>",
            "[ my public key: https:&#x2F;&#x2F;keybase.io&#x2F;" + r.hex(8) + "; my proof: https:&#x2F;&#x2F;keybase.io&#x2F;" + r.hex(8) + "&#x2F;sigs&#x2F;" + r.hex(12) + " ]",
        ]
        return r.pick(abouts)
    }

    static let pollOptionSets = [
        ["Swift", "Rust", "Go", "Python", "TypeScript", "Other"],
        ["A VPS", "Fly.io / Render / Railway", "Kubernetes", "A Raspberry Pi under my desk"],
        ["Tabs", "Spaces", "Whatever the formatter says"],
        ["URLSession", "Alamofire", "AsyncHTTPClient", "Something I wrote myself"],
    ]

    static let pollTitles = [
        "Poll: What's your primary programming language?", "Poll: How do you deploy side projects?",
        "Poll: Tabs or spaces in 2025?", "Poll: Which HTTP client do you use in Swift?",
    ]

    static func pollTitle(seed: UInt64, poll: Int) -> String {
        pollTitles[Int((seed ^ UInt64(poll)) % UInt64(pollOptionSets.count))]
    }

    static func pollOptionCount(seed: UInt64, poll: Int) -> Int {
        pollOptionSets[Int((seed ^ UInt64(poll)) % UInt64(pollOptionSets.count))].count
    }

    static func pollOption(seed: UInt64, poll: Int, index: Int) -> String {
        let set = pollOptionSets[Int((seed ^ UInt64(poll)) % UInt64(pollOptionSets.count))]
        return set[min(index, set.count - 1)]
    }
}
