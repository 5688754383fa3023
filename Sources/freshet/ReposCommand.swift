import ArgumentParser
import Foundation

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
