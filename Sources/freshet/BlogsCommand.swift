import ArgumentParser
import Foundation

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
