import ArgumentParser
import Foundation

struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "user", abstract: "A GitHub user's profile.")

    @Argument(help: "The GitHub login.")
    var login: String

    @OptionGroup var common: CommonOptions

    func run() async throws { try notImplemented("user") }
}
