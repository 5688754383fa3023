import ArgumentParser
import Foundation

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
