import ArgumentParser
import Foundation

struct RepoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "repo", abstract: "One GitHub repository.")

    @Argument(help: "The repository as OWNER/REPO.")
    var repository: String

    @OptionGroup var common: CommonOptions

    func run() async throws { try notImplemented("repo") }
}
