/// The simulated Daum (Kakao) blog search corpus: Korean and English posts generated
/// from the seed, searched and highlighted the way `/v2/search/blog` answers.
struct KakaoWorld: Sendable {
    struct Post: Sendable {
        var title: String
        var contents: String
        var url: String
        var blogname: String
        var thumbnail: String
        var datetime: Int
        var haystack: String
    }

    struct Blog {
        var id: String
        var name: String
        var platform: Int
    }

    let posts: [Post]

    static let techTopics = ["RxSwift", "Combine", "SwiftUI", "Alamofire", "Moya", "TCA", "Swift Concurrency", "GRDB", "Vapor", "URLSession", "Kotlin Coroutines", "RxJava", "React"]
    static let subjects = ["Observable과 Subscribe", "Scheduler", "Subject와 Relay", "Publisher와 Subscriber", "Task와 취소", "ETag와 캐시", "Driver와 Signal", "에러 처리", "테스트 코드"]
    static let paradigms = ["비동기", "반응형", "함수형", "프로토콜 지향"]
    static let places = ["제주도", "부산", "강릉", "경주", "여수", "전주", "속초"]
    static let areas = ["성수동", "연남동", "판교", "을지로", "해운대", "망원동"]
    static let foods = ["돼지국밥", "냉면", "떡볶이", "칼국수", "초밥", "파스타"]

    init(seed: UInt64, anchor: Int) {
        var r = SplitMix64(seed: seed, stream: "kakao.corpus")
        let blogNames = ["개발 일지", "코딩하는 고양이", "iOS 개발 노트", "Dev Notes", "여행하는 개발자", "맛있는 하루", "스위프트 공부방",
                         "주니어의 성장기", "Swift Diary", "기록하는 습관", "오늘의 삽질", "Tech & Life", "모바일 개발 이야기", "느리게 걷기"]
        let handles = ["devkim", "swiftlover", "jihoon", "minji-dev", "ios-park", "codingcat", "hyun", "seoyeon", "rx-master", "nomad", "yuna", "taehyun", "sejin", "dohyun"]
        var blogs: [Blog] = []
        for i in 0..<120 {
            let handle = r.pick(handles) + (i < handles.count ? "" : String(r.int(1...999)))
            let name = r.chance(0.3) ? "\(handle)의 기술 블로그" : r.pick(blogNames)
            blogs.append(Blog(id: handle, name: name, platform: r.int(0..<5)))
        }

        var posts: [Post] = []
        posts.reserveCapacity(2400)
        for n in 0..<2400 {
            let blog = r.pick(blogs)
            let t = r.pick(Self.techTopics)
            var t2 = r.pick(Self.techTopics)
            if t2 == t { t2 = "Combine" == t ? "RxSwift" : "Combine" }
            let s = r.pick(Self.subjects)
            let k = r.pick(Self.paradigms)
            let title: String
            var sentences: [String]
            switch r.weighted([40, 15, 25, 20]) {
            case 0:  // Korean tech
                title = [
                    "\(t) 입문 - \(s) 이해하기",
                    "[iOS] \(t)로 네트워크 계층 만들기",
                    "\(t) vs \(t2) 비교 정리",
                    "Swift Concurrency async/await 정리 (\(r.int(1...9))편)",
                    "\(t)에서 메모리 누수 잡기",
                    "스위프트 \(k) 프로그래밍",
                    "\(t) 스터디 \(r.int(1...12))주차 회고",
                    "\"\(t)\" 도입 후기 & 주의할 점",
                ][r.int(0..<8)]
                sentences = [
                    "오늘은 \(t)의 \(s)에 대해 알아보겠습니다.",
                    "\"\(t)\"를 사용하면 \(k) 코드가 훨씬 간결해집니다.",
                    "Observable<Int>와 Single<Response>의 차이를 정리했습니다.",
                    "\(t)와 \(t2)를 비교하면 스케줄러 개념이 비슷합니다.",
                    "API 응답이 304 Not Modified 일 때 캐시된 값을 그대로 쓰는 방법 & 주의점을 다룹니다.",
                    "예제 코드는 GitHub에 올려 두었습니다.",
                ]
            case 1:  // Kakao / Daum APIs
                title = ["다음 검색 API로 블로그 검색 만들기", "카카오 REST API 키 발급 방법", "Kakao 검색 API 페이지네이션 (is_end) 처리", "\(t)로 다음 블로그 검색 구현하기"][r.int(0..<4)]
                sentences = [
                    "Authorization 헤더에 KakaoAK {REST_API_KEY} 형식으로 키를 넣어야 합니다.",
                    "meta.is_end 가 false 이면 다음 페이지가 있습니다.",
                    "query 파라미터가 없으면 400 에러 (MissingParameter)가 반환됩니다.",
                    "검색 결과의 title과 contents에는 <b> 태그로 강조 표시가 들어 있습니다.",
                    "\(t)의 debounce 연산자로 검색어 입력을 처리했습니다.",
                ]
            case 2:  // Korean lifestyle
                let place = r.pick(Self.places)
                let area = r.pick(Self.areas)
                let food = r.pick(Self.foods)
                let nights = r.int(1...4)
                title = ["\(place) 여행 \(nights)박 \(nights + 1)일 코스", "\(area) 카페 추천 - 조용히 작업하기 좋은 곳", "\(place) \(food) 맛집 후기", "주말 \(area) 산책 & 브런치"][r.int(0..<4)]
                sentences = [
                    "\(place)에 다녀왔습니다. 날씨가 정말 좋았어요.",
                    "\(food) 한 그릇에 \(r.int(8...15)),000원, 가격 대비 만족스러웠습니다.",
                    "웨이팅이 길어서 \"오픈런\"을 추천합니다.",
                    "노트북 작업하기 좋은 카페 & 디저트 맛집 정리.",
                    "주차는 근처 공영주차장을 이용했습니다.",
                ]
            default:  // English tech
                title = [
                    "Understanding \(t) Schedulers",
                    "Building a typed API client in Swift",
                    "\(t) & \(t2): a practical comparison",
                    "Why your HTTP cache returns stale data",
                    "Using Result<Value, Error> with \(t)",
                    "Notes on \"\(t)\" in production",
                ][r.int(0..<6)]
                sentences = [
                    "In this post we look at how \(t) handles cancellation and back-pressure.",
                    "A 304 response means \"use what you have\" & costs nothing against the rate limit.",
                    "Generic types like Observable<T> make the API surface small.",
                    "We compare \(t) with \(t2) using the same networking layer.",
                    "The full sample project is on GitHub.",
                ]
            }
            r.shuffle(&sentences)
            let contents = sentences.prefix(r.int(2...3)).joined(separator: " ")
            let number = r.int(1...1500)
            let url: String
            switch blog.platform {
            case 0: url = "https://\(blog.id).tistory.com/\(number)"
            case 1: url = "https://brunch.co.kr/@\(blog.id)/\(number % 300 + 1)"
            case 2: url = "https://velog.io/@\(blog.id)/post-\(number)"
            case 3: url = "http://blog.daum.net/\(blog.id)/\(number)"
            default: url = "https://blog.naver.com/\(blog.id)/\(222_000_000_000 + n * 7919)"
            }
            let thumbnail = r.chance(0.3) ? "" : "https://search\(r.int(1...4)).kakaocdn.net/argon/130x130_85_c/\(r.hex(11))"
            var datetime = anchor - r.int(3600...6 * 365 * 86_400)
            if r.chance(0.3) {
                // Older posts often carry only a date: midnight KST.
                let kst = datetime + 9 * 3600
                datetime = kst - kst % 86_400 - 9 * 3600
            }
            posts.append(Post(title: title, contents: contents, url: url, blogname: blog.name, thumbnail: thumbnail,
                              datetime: datetime, haystack: (title + " " + contents).lowercased()))
        }
        self.posts = posts
    }

    /// Search result indices for `query`, in `sort` order (`accuracy` or `recency`).
    func search(query: String, sort: String) -> [Int] {
        let terms = Self.terms(query)
        guard !terms.isEmpty else { return [] }
        var matches: [(index: Int, score: Int)] = []
        for (i, post) in posts.enumerated() where terms.allSatisfy({ post.haystack.contains($0) }) {
            let titleLower = post.title.lowercased()
            let score = terms.reduce(0) { $0 + (titleLower.contains($1) ? 3 : 0) + 1 }
            matches.append((i, score))
        }
        if sort == "recency" {
            matches.sort { (posts[$0.index].datetime, $1.index) > (posts[$1.index].datetime, $0.index) }
        } else {
            matches.sort { ($0.score, posts[$0.index].datetime, $1.index) > ($1.score, posts[$1.index].datetime, $0.index) }
        }
        return matches.map(\.index)
    }

    static func terms(_ query: String) -> [String] {
        query.lowercased().split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "+" }).map(String.init).filter { !$0.isEmpty }
    }

    func documentJSON(_ index: Int, query: String) -> JSON {
        let post = posts[index]
        let terms = Self.terms(query)
        return obj(
            ("title", .string(Self.highlight(post.title, terms: terms))),
            ("contents", .string(Self.highlight(post.contents, terms: terms))),
            ("url", .string(post.url)), ("blogname", .string(post.blogname)), ("thumbnail", .string(post.thumbnail)),
            ("datetime", .string(SimDate.kakao(post.datetime))))
    }

    /// HTML-escapes `text` and wraps case-insensitive occurrences of `terms` in `<b>…</b>`.
    static func highlight(_ text: String, terms: [String]) -> String {
        let chars = Array(text)
        let lowered: [Character] = chars.map { c in String(c).lowercased().first ?? c }
        var marked = [Bool](repeating: false, count: chars.count)
        for term in terms {
            let t = Array(term)
            guard !t.isEmpty, t.count <= chars.count else { continue }
            var i = 0
            while i + t.count <= chars.count {
                if Array(lowered[i..<(i + t.count)]) == t {
                    for j in i..<(i + t.count) { marked[j] = true }
                    i += t.count
                } else {
                    i += 1
                }
            }
        }
        var out = ""
        var inBold = false
        for (i, c) in chars.enumerated() {
            if marked[i] != inBold {
                out += marked[i] ? "<b>" : "</b>"
                inBold = marked[i]
            }
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(c)
            }
        }
        if inBold { out += "</b>" }
        return out
    }
}
