import ArgumentParser
import Foundation

struct HNCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hn", abstract: "Hacker News stories: top, new, best, ask, show or job; `hn item ID` for a thread.")

    @Argument(help: "The list: top, new, best, ask, show or job; or `item` followed by an ID.")
    var list = "top"

    @Argument(help: "The item ID, after `item`.")
    var id: Int?

    @Option(help: "How many stories.")
    var limit = 30

    @Option(help: "Order: rank, score or time.")
    var sort = "rank"

    @Option(help: "How many item requests in flight at once.")
    var concurrency = 32

    @OptionGroup var common: CommonOptions

    func run() async throws { try notImplemented("hn") }
}

struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "user", abstract: "A GitHub user's profile.")

    @Argument(help: "The GitHub login.")
    var login: String

    @OptionGroup var common: CommonOptions

    func run() async throws { try notImplemented("user") }
}

struct RepoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "repo", abstract: "One GitHub repository.")

    @Argument(help: "The repository as OWNER/REPO.")
    var repository: String

    @OptionGroup var common: CommonOptions

    func run() async throws { try notImplemented("repo") }
}

struct ReposCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "repos", abstract: "Search GitHub repositories; without a query on a terminal, search as you type.")

    @Argument(help: "The search query (GitHub search syntax).")
    var query: String?

    @Option(help: "Order: stars, forks or updated.")
    var sort: String?

    @Option(help: "How many results.")
    var limit = 20

    @OptionGroup var common: CommonOptions

    func run() async throws { try notImplemented("repos") }
}

struct BlogsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blogs", abstract: "Daum blog search (Kakao API); without a query on a terminal, search as you type.")

    @Argument(help: "The search query.")
    var query: String?

    @Option(help: "Order: accuracy, recency (server side), title or datetime (client side).")
    var sort = "accuracy"

    @OptionGroup var common: CommonOptions

    func run() async throws { try notImplemented("blogs") }
}

struct ProxyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proxy", abstract: "A caching reverse proxy: any HTTP tool gets Freshet's cache.")

    @Option(help: "The origin to forward to, e.g. https://api.github.com.")
    var origin: String

    @Option(help: "Where to listen, HOST:PORT (port 0 picks one).")
    var listen = "127.0.0.1:8080"

    func run() async throws { try notImplemented("proxy") }
}

struct CacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache", abstract: "Inspect or empty the local store.",
        subcommands: [Stats.self, Clear.self])

    struct Stats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show what the local store holds.")
        func run() async throws { try notImplemented("cache stats") }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Empty the local store.")
        func run() async throws { try notImplemented("cache clear") }
    }
}
