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
