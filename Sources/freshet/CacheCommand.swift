import ArgumentParser
import Foundation
import FreshetCache
import FreshetFeeds
import FreshetTerminal

struct CacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache", abstract: "Inspect or empty the local store.",
        subcommands: [Stats.self, Clear.self])

    /// The JSON of `stats` and `clear`: keys sorted, so the output is the same from run to run.
    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }

    struct Stats: AsyncParsableCommand {
        // Named here: without it ArgumentParser derives the name from the type's name
        // (`String(describing:)`, a runtime metadata walk) at every start of every command.
        static let configuration = CommandConfiguration(
            commandName: "stats",
            abstract: "Show what the local store holds and how the HTTP cache has answered.")

        @OptionGroup var common: StoreOptions

        func run() async throws {
            let context = try common.makeContext()
            let stats = try await context.cacheStore.stats()
            let feedEvents = try await FeedStore(writer: context.database.writer).totalCount()
            let path = context.database.path?.path ?? "(in memory)"
            if common.json {
                struct Report: Encodable {
                    var database: String
                    var entries: Int
                    var bytes: Int
                    var outcomes: [String: Int]
                    var feedEvents: Int
                    enum CodingKeys: String, CodingKey {
                        case database, entries, bytes, outcomes
                        case feedEvents = "feed_events"
                    }
                }
                try printJSON(Report(database: path, entries: stats.entries, bytes: stats.bytes,
                                     outcomes: stats.outcomes, feedEvents: feedEvents), encoder: CacheCommand.encoder)
                return
            }
            let outcomes = ["hit", "revalidated", "miss", "stale"].map { "\($0) \(stats.outcomes[$0] ?? 0)" }
            let rows = [
                ["database", path],
                ["HTTP cache", "\(counted(stats.entries, "response")), \(Self.bytes(stats.bytes))"],
                ["answers", outcomes.joined(separator: ", ")],
                ["feed", "\(counted(feedEvents, "stored event"))"],
            ]
            output(TextLayout.columns(rows).joined(separator: "\n"))
        }

        static func bytes(_ count: Int) -> String {
            switch count {
            case ..<1024: return "\(count) B"
            case ..<(1024 * 1024): return String(format: "%.1f KiB", Double(count) / 1024)
            default: return String(format: "%.1f MiB", Double(count) / 1_048_576)
            }
        }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "clear",
            abstract: "Empty the local store: the HTTP cache and the stored feeds.")

        @OptionGroup var common: StoreOptions

        func run() async throws {
            let context = try common.makeContext()
            let before = try await context.cacheStore.stats()
            let feed = FeedStore(writer: context.database.writer)
            let events = try await feed.totalCount()
            try await context.cacheStore.removeAll()
            try await feed.removeAll()
            if common.json {
                try printJSON(["removed_responses": before.entries, "removed_feed_events": events], encoder: CacheCommand.encoder)
            } else {
                output("removed \(counted(before.entries, "cached response")) and \(counted(events, "stored event"))")
            }
        }
    }
}

/// `count` and `noun`, plural unless the count is 1: "1 response", "2 responses".
func counted(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}
