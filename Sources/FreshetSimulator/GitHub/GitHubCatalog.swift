/// Hand-written facts about well-known repositories and people, so the simulated
/// GitHub looks like the real one. Everything not listed here is generated.
enum GitHubCatalog {
    struct KnownRepo {
        let fullName: String
        let description: String?
        let language: String?
        let stars: Int
        let forks: Int
        let topics: [String]
        let license: String?
        let defaultBranch: String
        let createdYear: Int
        let homepage: String?
    }

    struct KnownUser {
        let login: String
        let isOrganization: Bool
        let name: String?
        let company: String?
        let location: String?
        let blog: String
        let bio: String?
    }

    struct License {
        let key: String
        let name: String
        let spdx: String
    }

    /// Ids quoted in the API documentation, kept so examples line up.
    static let fixedUserIDs: [String: Int] = ["octocat": 583_231, "Alamofire": 7_774_181]
    static let fixedRepoIDs: [String: Int] = ["Alamofire/Alamofire": 22_458_259, "octocat/Hello-World": 1_296_269]

    static let licenses: [String: License] = [
        "mit": License(key: "mit", name: "MIT License", spdx: "MIT"),
        "apache-2.0": License(key: "apache-2.0", name: "Apache License 2.0", spdx: "Apache-2.0"),
        "bsd-3-clause": License(key: "bsd-3-clause", name: "BSD 3-Clause \"New\" or \"Revised\" License", spdx: "BSD-3-Clause"),
        "mpl-2.0": License(key: "mpl-2.0", name: "Mozilla Public License 2.0", spdx: "MPL-2.0"),
        "gpl-3.0": License(key: "gpl-3.0", name: "GNU General Public License v3.0", spdx: "GPL-3.0"),
        "other": License(key: "other", name: "Other", spdx: "NOASSERTION"),
    ]

    static let repos: [KnownRepo] = [
        KnownRepo(fullName: "ReactiveX/RxSwift", description: "Reactive Programming in Swift", language: "Swift", stars: 24_412, forks: 4_183, topics: ["functional", "reactive", "rxswift", "observer", "unidirectional", "ios"], license: "mit", defaultBranch: "main", createdYear: 2015, homepage: nil),
        KnownRepo(fullName: "apple/swift", description: "The Swift Programming Language", language: "C++", stars: 68_120, forks: 10_512, topics: ["swift", "compiler", "programming-language"], license: "apache-2.0", defaultBranch: "main", createdYear: 2015, homepage: "https://swift.org"),
        KnownRepo(fullName: "Alamofire/Alamofire", description: "Elegant HTTP Networking in Swift", language: "Swift", stars: 41_302, forks: 7_566, topics: ["networking", "swift", "alamofire", "urlsession", "xcode", "carthage", "certificate-pinning", "httpurlresponse", "parameter-encoding", "public-key-pinning", "request", "response"], license: "mit", defaultBranch: "master", createdYear: 2014, homepage: nil),
        KnownRepo(fullName: "vapor/vapor", description: "💧 A server-side Swift HTTP web framework.", language: "Swift", stars: 25_012, forks: 1_462, topics: ["server-side-swift", "vapor", "swift", "framework", "http", "web-framework", "server"], license: "mit", defaultBranch: "main", createdYear: 2016, homepage: "https://vapor.codes"),
        KnownRepo(fullName: "pointfreeco/swift-composable-architecture", description: "A library for building applications in a consistent and understandable way, with composition, testing, and ergonomics in mind.", language: "Swift", stars: 13_021, forks: 1_512, topics: ["architecture", "composition", "modularity", "swiftui", "testability", "uikit"], license: "mit", defaultBranch: "main", createdYear: 2020, homepage: "https://www.pointfree.co/collections/composable-architecture"),
        KnownRepo(fullName: "kean/Get", description: "Web API client built using async/await", language: "Swift", stars: 1_012, forks: 81, topics: ["async-await", "http", "networking", "urlsession", "swift"], license: "mit", defaultBranch: "main", createdYear: 2021, homepage: nil),
        KnownRepo(fullName: "onevcat/Kingfisher", description: "A lightweight, pure-Swift library for downloading and caching images from the web.", language: "Swift", stars: 23_512, forks: 2_702, topics: ["image", "cache", "swift", "kingfisher", "image-processor", "filters", "xcode", "swiftui"], license: "mit", defaultBranch: "master", createdYear: 2015, homepage: nil),
        KnownRepo(fullName: "Moya/Moya", description: "Network abstraction layer written in Swift.", language: "Swift", stars: 15_213, forks: 1_989, topics: ["network", "swift", "moya", "reactiveswift", "rxswift", "alamofire", "combine"], license: "mit", defaultBranch: "master", createdYear: 2014, homepage: "https://moya.github.io"),
        KnownRepo(fullName: "groue/GRDB.swift", description: "A toolkit for SQLite databases, with a focus on application development", language: "Swift", stars: 7_120, forks: 712, topics: ["sqlite", "database", "swift", "sql", "database-observation", "grdb", "sqlcipher", "combine", "swiftui"], license: "mit", defaultBranch: "master", createdYear: 2015, homepage: "https://swiftpackageindex.com/groue/GRDB.swift/documentation"),
        KnownRepo(fullName: "apple/swift-nio", description: "Event-driven network application framework for high performance protocol servers & clients, non-blocking.", language: "Swift", stars: 8_012, forks: 652, topics: ["swift", "networking", "nio", "swift-server", "event-driven", "non-blocking"], license: "apache-2.0", defaultBranch: "main", createdYear: 2018, homepage: "https://swiftpackageindex.com/apple/swift-nio/documentation"),
        KnownRepo(fullName: "SwiftyJSON/SwiftyJSON", description: "The better way to deal with JSON data in Swift.", language: "Swift", stars: 22_612, forks: 3_431, topics: ["json", "swift", "swiftyjson"], license: "mit", defaultBranch: "master", createdYear: 2014, homepage: nil),
        KnownRepo(fullName: "SnapKit/SnapKit", description: "A Swift Autolayout DSL for iOS & OS X", language: "Swift", stars: 20_012, forks: 1_985, topics: ["autolayout", "swift", "snapkit", "ios", "macos"], license: "mit", defaultBranch: "develop", createdYear: 2014, homepage: "https://snapkit.github.io/SnapKit/"),
        KnownRepo(fullName: "realm/SwiftLint", description: "A tool to enforce Swift style and conventions.", language: "Swift", stars: 18_602, forks: 2_231, topics: ["swift", "linter", "static-analysis", "code-quality", "hacktoberfest"], license: "mit", defaultBranch: "main", createdYear: 2015, homepage: "https://realm.github.io/SwiftLint"),
        KnownRepo(fullName: "nicklockwood/SwiftFormat", description: "A command-line tool and Xcode Extension for formatting Swift code", language: "Swift", stars: 8_012, forks: 652, topics: ["swift", "formatter", "xcode", "xcode-extension"], license: "mit", defaultBranch: "main", createdYear: 2016, homepage: nil),
        KnownRepo(fullName: "kean/Nuke", description: "Image loading system", language: "Swift", stars: 8_112, forks: 531, topics: ["image", "image-loading", "image-processing", "caching", "swiftui"], license: "mit", defaultBranch: "main", createdYear: 2015, homepage: "https://kean.blog/nuke"),
        KnownRepo(fullName: "airbnb/lottie-ios", description: "An iOS library to natively render After Effects vector animations", language: "Swift", stars: 25_612, forks: 3_745, topics: ["animation", "ios", "lottie", "after-effects", "swift"], license: "apache-2.0", defaultBranch: "master", createdYear: 2017, homepage: "http://airbnb.io/lottie/"),
        KnownRepo(fullName: "ReactiveCocoa/ReactiveSwift", description: "Streams of values over time", language: "Swift", stars: 3_002, forks: 431, topics: ["frp", "reactive-programming", "reactiveswift", "streams"], license: "mit", defaultBranch: "master", createdYear: 2016, homepage: nil),
        KnownRepo(fullName: "Quick/Quick", description: "The Swift (and Objective-C) testing framework.", language: "Swift", stars: 9_712, forks: 912, topics: ["testing", "bdd", "swift", "xctest"], license: "apache-2.0", defaultBranch: "main", createdYear: 2014, homepage: "https://quick.github.io/Quick/"),
        KnownRepo(fullName: "Quick/Nimble", description: "A Matcher Framework for Swift and Objective-C", language: "Swift", stars: 4_812, forks: 601, topics: ["matcher", "testing", "swift", "nimble"], license: "apache-2.0", defaultBranch: "main", createdYear: 2014, homepage: nil),
        KnownRepo(fullName: "krzyzanowskim/CryptoSwift", description: "CryptoSwift is a growing collection of standard and secure cryptographic algorithms implemented in Swift", language: "Swift", stars: 10_212, forks: 1_712, topics: ["cryptography", "aes", "sha", "hmac", "chacha20", "swift"], license: "other", defaultBranch: "main", createdYear: 2014, homepage: "https://cryptoswift.io"),
        KnownRepo(fullName: "danielgindi/Charts", description: "Beautiful charts for iOS/tvOS/OSX! The Apple side of the crossplatform MPAndroidChart.", language: "Swift", stars: 27_512, forks: 5_989, topics: ["charts", "ios", "swift", "linechart", "barchart", "piechart"], license: "apache-2.0", defaultBranch: "master", createdYear: 2015, homepage: nil),
        KnownRepo(fullName: "mxcl/PromiseKit", description: "Promises for Swift & ObjC.", language: "Swift", stars: 14_212, forks: 1_452, topics: ["promises", "swift", "async"], license: "mit", defaultBranch: "master", createdYear: 2014, homepage: nil),
        KnownRepo(fullName: "apple/swift-format", description: "Formatting technology for Swift source code", language: "Swift", stars: 2_612, forks: 232, topics: ["swift", "formatter"], license: "apache-2.0", defaultBranch: "main", createdYear: 2019, homepage: nil),
        KnownRepo(fullName: "apple/swift-async-algorithms", description: "Async Algorithms for Swift", language: "Swift", stars: 3_112, forks: 152, topics: ["async", "algorithms", "swift", "concurrency"], license: "apache-2.0", defaultBranch: "main", createdYear: 2021, homepage: nil),
        KnownRepo(fullName: "apple/swift-argument-parser", description: "Straightforward, type-safe argument parsing for Swift", language: "Swift", stars: 3_412, forks: 321, topics: ["swift", "command-line", "argument-parser", "cli"], license: "apache-2.0", defaultBranch: "main", createdYear: 2020, homepage: nil),
        KnownRepo(fullName: "apple/swift-collections", description: "Commonly used data structures for Swift", language: "Swift", stars: 3_812, forks: 312, topics: ["collections", "data-structures", "swift", "deque", "ordered-dictionary"], license: "apache-2.0", defaultBranch: "main", createdYear: 2021, homepage: nil),
        KnownRepo(fullName: "apple/swift-log", description: "A Logging API for Swift", language: "Swift", stars: 3_612, forks: 302, topics: ["logging", "swift", "swift-server"], license: "apache-2.0", defaultBranch: "main", createdYear: 2018, homepage: nil),
        KnownRepo(fullName: "swift-server/async-http-client", description: "HTTP client library built on SwiftNIO", language: "Swift", stars: 962, forks: 122, topics: ["http", "http-client", "swift-nio", "swift-server"], license: "apache-2.0", defaultBranch: "main", createdYear: 2019, homepage: nil),
        KnownRepo(fullName: "hummingbird-project/hummingbird", description: "Lightweight, modular, extensible Swift server framework 🐦", language: "Swift", stars: 1_512, forks: 72, topics: ["swift", "server", "http", "swift-server", "swift-nio"], license: "apache-2.0", defaultBranch: "main", createdYear: 2021, homepage: "https://hummingbird.codes"),
        KnownRepo(fullName: "realm/realm-swift", description: "Realm is a mobile database: a replacement for Core Data & SQLite", language: "Objective-C", stars: 16_302, forks: 2_152, topics: ["realm", "database", "ios", "mobile", "swift"], license: "apache-2.0", defaultBranch: "master", createdYear: 2014, homepage: "https://realm.io"),
        KnownRepo(fullName: "SwiftGen/SwiftGen", description: "The Swift code generator for your assets, storyboards, Localizable.strings, … — Get rid of all String-based APIs!", language: "Swift", stars: 9_112, forks: 742, topics: ["code-generation", "assets", "xcode", "swift", "localization"], license: "mit", defaultBranch: "stable", createdYear: 2015, homepage: nil),
        KnownRepo(fullName: "JohnSundell/Publish", description: "A static site generator for Swift developers", language: "Swift", stars: 4_812, forks: 312, topics: ["static-site-generator", "swift", "website"], license: "mit", defaultBranch: "master", createdYear: 2019, homepage: nil),
        KnownRepo(fullName: "jpsim/SourceKitten", description: "An adorable little framework and command line tool for interacting with SourceKit.", language: "Swift", stars: 2_312, forks: 231, topics: ["sourcekit", "swift", "cli"], license: "mit", defaultBranch: "main", createdYear: 2015, homepage: nil),
        KnownRepo(fullName: "Juanpe/SkeletonView", description: "☠️ An elegant way to show users that something is happening and also prepare them to which contents they are awaiting", language: "Swift", stars: 12_612, forks: 1_112, topics: ["skeleton", "loading", "ios", "swift", "uikit"], license: "mit", defaultBranch: "main", createdYear: 2017, homepage: nil),
        KnownRepo(fullName: "Kitura/Kitura", description: "A Swift web framework and HTTP server.", language: "Swift", stars: 7_612, forks: 492, topics: ["swift", "web-framework", "server-side-swift"], license: "apache-2.0", defaultBranch: "master", createdYear: 2015, homepage: "http://kitura.dev"),
        KnownRepo(fullName: "Swinject/Swinject", description: "Dependency injection framework for Swift with iOS/macOS/Linux", language: "Swift", stars: 6_312, forks: 512, topics: ["dependency-injection", "swift", "ioc-container"], license: "mit", defaultBranch: "master", createdYear: 2015, homepage: nil),
        KnownRepo(fullName: "RxSwiftCommunity/RxDataSources", description: "UITableView and UICollectionView Data Sources for RxSwift (sections, animated updates, editing ...)", language: "Swift", stars: 3_112, forks: 492, topics: ["rxswift", "uitableview", "uicollectionview", "reactive"], license: "mit", defaultBranch: "main", createdYear: 2016, homepage: nil),
        KnownRepo(fullName: "CombineCommunity/CombineExt", description: "CombineExt provides a collection of operators, publishers and utilities for Combine, that are not provided by Apple themselves, but are common in other Reactive Frameworks and standards.", language: "Swift", stars: 1_712, forks: 152, topics: ["combine", "reactive", "operators", "swift"], license: "mit", defaultBranch: "main", createdYear: 2020, homepage: nil),
        KnownRepo(fullName: "OpenCombine/OpenCombine", description: "Open source implementation of Apple's Combine framework for processing values over time.", language: "Swift", stars: 2_712, forks: 132, topics: ["combine", "reactive", "linux", "swift"], license: "mit", defaultBranch: "master", createdYear: 2019, homepage: "https://opencombine.github.io"),
        KnownRepo(fullName: "AFNetworking/AFNetworking", description: "A delightful networking framework for iOS, macOS, watchOS, and tvOS.", language: "Objective-C", stars: 33_312, forks: 10_412, topics: ["networking", "ios", "objective-c"], license: "mit", defaultBranch: "master", createdYear: 2011, homepage: "http://afnetworking.com"),
        KnownRepo(fullName: "SDWebImage/SDWebImage", description: "Image loading and caching with UIImageView category", language: "Objective-C", stars: 25_012, forks: 5_952, topics: ["image", "cache", "ios", "objective-c"], license: "mit", defaultBranch: "master", createdYear: 2009, homepage: "https://sdwebimage.github.io"),
        KnownRepo(fullName: "ReactiveX/RxJava", description: "RxJava – Reactive Extensions for the JVM – a library for composing asynchronous and event-based programs using observable sequences for the Java VM.", language: "Java", stars: 47_612, forks: 7_612, topics: ["rxjava", "reactive-streams", "flow", "java"], license: "apache-2.0", defaultBranch: "3.x", createdYear: 2013, homepage: nil),
        KnownRepo(fullName: "ReactiveX/rxjs", description: "A reactive programming library for JavaScript", language: "TypeScript", stars: 30_512, forks: 3_012, topics: ["rxjs", "javascript", "reactive", "observables"], license: "apache-2.0", defaultBranch: "master", createdYear: 2015, homepage: "https://rxjs.dev"),
        KnownRepo(fullName: "square/okhttp", description: "Square’s meticulous HTTP client for the JVM, Android, and GraalVM.", language: "Kotlin", stars: 45_612, forks: 9_212, topics: ["android", "java", "kotlin", "http"], license: "apache-2.0", defaultBranch: "master", createdYear: 2012, homepage: "https://square.github.io/okhttp/"),
        KnownRepo(fullName: "octocat/Hello-World", description: "My first repository on GitHub!", language: nil, stars: 2_612, forks: 2_412, topics: [], license: nil, defaultBranch: "master", createdYear: 2011, homepage: ""),
    ]

    static let users: [KnownUser] = [
        KnownUser(login: "octocat", isOrganization: false, name: "The Octocat", company: "@github", location: "San Francisco", blog: "https://github.blog", bio: nil),
        KnownUser(login: "ReactiveX", isOrganization: true, name: "ReactiveX", company: nil, location: nil, blog: "http://reactivex.io", bio: "Reactive Extensions for Async Programming"),
        KnownUser(login: "apple", isOrganization: true, name: "Apple", company: nil, location: "Cupertino, CA", blog: "https://apple.com", bio: nil),
        KnownUser(login: "Alamofire", isOrganization: true, name: "Alamofire", company: nil, location: nil, blog: "https://alamofire.github.io", bio: "Elegant Networking in Swift"),
        KnownUser(login: "vapor", isOrganization: true, name: "Vapor", company: nil, location: "Earth", blog: "https://vapor.codes", bio: "Server-side Swift. Built with a non-blocking, event-driven architecture."),
        KnownUser(login: "pointfreeco", isOrganization: true, name: "Point-Free", company: nil, location: "Brooklyn, NY", blog: "https://www.pointfree.co", bio: "A video series exploring advanced programming topics in Swift."),
        KnownUser(login: "kean", isOrganization: false, name: "Alex Grebenyuk", company: nil, location: "Boston, MA", blog: "https://kean.blog", bio: "Creator of Nuke, Pulse, Get"),
        KnownUser(login: "onevcat", isOrganization: false, name: "Wei Wang", company: "LINE", location: "Tokyo, Japan", blog: "https://onevcat.com", bio: "Developer, creator, proud father."),
        KnownUser(login: "Moya", isOrganization: true, name: "Moya", company: nil, location: nil, blog: "https://moya.github.io", bio: nil),
        KnownUser(login: "groue", isOrganization: false, name: "Gwendal Roué", company: nil, location: "Paris, France", blog: "", bio: nil),
        KnownUser(login: "kzaher", isOrganization: false, name: "Krunoslav Zaher", company: nil, location: "Seattle, WA", blog: "", bio: nil),
        KnownUser(login: "freak4pc", isOrganization: false, name: "Shai Mishali", company: "@monday", location: "Tel Aviv, Israel", blog: "https://github.com/sponsors/freak4pc", bio: "iOS Tech Lead • RxSwift & RxSwiftCommunity maintainer • Author"),
        KnownUser(login: "jshier", isOrganization: false, name: "Jon Shier", company: nil, location: "Detroit, MI", blog: "", bio: "Alamofire maintainer"),
        KnownUser(login: "cnoon", isOrganization: false, name: "Christian Noon", company: nil, location: "Salt Lake City, UT", blog: "", bio: nil),
        KnownUser(login: "0xTim", isOrganization: false, name: "Tim Condon", company: "Broken Hands", location: "Manchester, UK", blog: "https://www.timc.dev", bio: "Core Team @vapor"),
        KnownUser(login: "gwynne", isOrganization: false, name: "Gwynne Raskind", company: nil, location: nil, blog: "", bio: nil),
        KnownUser(login: "mbrandonw", isOrganization: false, name: "Brandon Williams", company: "@pointfreeco", location: "Brooklyn, NY", blog: "https://www.pointfree.co", bio: nil),
        KnownUser(login: "stephencelis", isOrganization: false, name: "Stephen Celis", company: "@pointfreeco", location: "Brooklyn, NY", blog: "https://www.stephencelis.com", bio: nil),
        KnownUser(login: "weissi", isOrganization: false, name: "Johannes Weiss", company: nil, location: "London, UK", blog: "", bio: nil),
        KnownUser(login: "Lukasa", isOrganization: false, name: "Cory Benfield", company: "@apple", location: "London, UK", blog: "", bio: nil),
        KnownUser(login: "FranzBusch", isOrganization: false, name: "Franz Busch", company: "@apple", location: "Munich, Germany", blog: "", bio: nil),
        KnownUser(login: "adam-fowler", isOrganization: false, name: "Adam Fowler", company: nil, location: "Edinburgh, UK", blog: "", bio: nil),
        KnownUser(login: "ktoso", isOrganization: false, name: "Konrad `ktoso` Malawski", company: "@apple", location: "Tokyo, Japan", blog: "https://www.kalmar.io", bio: "Swift, Distributed, Concurrency"),
        KnownUser(login: "DougGregor", isOrganization: false, name: "Doug Gregor", company: "Apple", location: nil, blog: "", bio: nil),
        KnownUser(login: "hborla", isOrganization: false, name: "Holly Borla", company: "@apple", location: "San Francisco, CA", blog: "", bio: "Swift compiler engineer"),
        KnownUser(login: "slavapestov", isOrganization: false, name: "Slava Pestov", company: nil, location: nil, blog: "", bio: nil),
    ]

    static let maintainers: [String: [String]] = [
        "reactivex/rxswift": ["kzaher", "freak4pc"],
        "alamofire/alamofire": ["jshier", "cnoon"],
        "vapor/vapor": ["0xTim", "gwynne"],
        "pointfreeco/swift-composable-architecture": ["mbrandonw", "stephencelis"],
        "kean/get": ["kean"],
        "kean/nuke": ["kean"],
        "onevcat/kingfisher": ["onevcat"],
        "groue/grdb.swift": ["groue"],
        "apple/swift-nio": ["weissi", "Lukasa", "FranzBusch"],
        "apple/swift": ["DougGregor", "hborla", "slavapestov"],
        "hummingbird-project/hummingbird": ["adam-fowler"],
        "apple/swift-async-algorithms": ["FranzBusch"],
    ]

    static let firstNames = [
        "Anna", "Ben", "Chloe", "Daniel", "Elif", "Felix", "Grace", "Hiro", "Isabel", "Jonas", "Kai", "Lena",
        "Mateo", "Nadia", "Oliver", "Priya", "Quentin", "Rosa", "Sven", "Tomás", "Uma", "Viktor", "Wen", "Xavier",
        "Yuki", "Zoe", "Minjun", "Seoyeon", "Jiho", "Amara", "Lars", "Ines", "Marco", "Sofia", "Arjun", "Leila",
        "Noah", "Maya", "Pavel", "Hana",
    ]

    static let lastNames = [
        "Kim", "Park", "Lee", "Novak", "Schmidt", "Garcia", "Rossi", "Tanaka", "Sato", "Müller", "Silva", "Chen",
        "Nguyen", "Ivanov", "Kowalski", "Andersson", "Dubois", "Okafor", "Haddad", "Patel", "Yilmaz", "Berg",
        "Moreau", "Costa", "Lindqvist", "Fischer", "Horvat", "Jensen", "Ortega", "Wright",
    ]

    static let companies = [
        "@apple", "@google", "@shopify", "@spotify", "@airbnb", "Kakao", "LINE", "@naver", "@toss", "@monzo",
        "@github", "Freelance", "@stripe", "@uber", "@figma", "@cloudflare",
    ]

    static let locations = [
        "Seoul, South Korea", "Berlin, Germany", "San Francisco, CA", "Tokyo, Japan", "London, UK", "Toronto, Canada",
        "Amsterdam", "Stockholm, Sweden", "Paris, France", "Lisbon, Portugal", "Kraków, Poland", "New York, NY",
        "Singapore", "Pangyo", "Austin, TX", "Remote",
    ]

    static let bios = [
        "iOS developer. Swift, RxSwift, Combine.",
        "Building things with Swift on the server.",
        "Open source enthusiast • coffee • cycling",
        "Mobile engineer. Opinions are my own.",
        "I write code and sometimes it compiles.",
        "Swift & Kotlin. Previously @startup.",
        "Reactive programming nerd.",
        "Making apps since iPhone OS 3.",
    ]

    static let nameStems = [
        "Cache", "Router", "Store", "Kit", "Flow", "Net", "HTTP", "JSON", "Image", "Layout", "Form", "Log", "Date",
        "Color", "Keychain", "Graph", "Chart", "Sheet", "Toast", "Feed", "Pager", "Calendar", "Markdown", "Crypto",
        "Socket", "Queue", "Promise", "Signal", "Binding", "Theme", "Test", "Mock", "Snapshot", "Coordinator",
        "Navigator", "Sync", "Realtime", "Audio", "Video", "Camera", "Map", "Locale", "Font", "Icon", "Haptic",
    ]

    static let namePrefixes = ["Swifty", "Rx", "Combine", "Async", "Simple", "Fast", "Tiny", "Easy", "Smart", "Swift", "Reactive", "Modern", "Light"]
    static let kebabPrefixes = ["swift-", "swiftui-", "ios-", "rx-", ""]

    static let descriptionTemplates = [
        "A lightweight %@ library written in Swift",
        "Elegant %@ for iOS and macOS",
        "%@ made simple, with async/await support",
        "Reactive %@ extensions for RxSwift",
        "Combine-friendly %@ for SwiftUI apps",
        "A type-safe %@ toolkit for Swift",
        "Fast and flexible %@ in pure Swift",
        "%@ for server-side Swift, built on SwiftNIO",
        "Declarative %@ for UIKit and SwiftUI",
        "Experimental %@ playground",
    ]

    static let topicPool = [
        "swift", "ios", "swiftui", "uikit", "macos", "rxswift", "combine", "async-await", "networking", "json",
        "cache", "animation", "architecture", "testing", "server-side-swift", "linux", "cli", "concurrency",
    ]
}
