// news-combine: the News app's Combine pipeline (one publisher per story, merged, scanned into a
// growing list, sorted), on Freshet's client with FreshetCombine, so it runs on Linux too.
//
//   news-combine [--limit N] [--json]
//
// Lists the first N stories of Hacker News' top list, as `freshet hn --limit N` does: the same
// stories in rank order (null, deleted and dead items left out), the same rows; with --json, an
// array of the items with their upstream fields. The API lives at FRESHET_HN_URL (default
// https://hacker-news.firebaseio.com/v0).

import ArgumentParser
#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import Foundation
import Freshet
import FreshetCombine
import FreshetFeeds
import FreshetTerminal
import FreshetTransports
import HackerNewsAPI
import Synchronization

@main
struct NewsCombine: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "news-combine",
        abstract: "Hacker News' top stories through a Combine pipeline (merge, scan, sort).")

    @Option(help: "How many stories of the top list (1–500).")
    var limit = 30

    @Flag(help: "Print the items as a JSON array (upstream field names).")
    var json = false

    func validate() throws {
        guard (1...500).contains(limit) else { throw ValidationError("--limit must be between 1 and 500.") }
    }

    func run() async throws {
        let baseURL: URL
        do {
            baseURL = try AppConfiguration.from().hackerNewsURL
        } catch {
            throw fail(error.description)
        }
        let client = APIClient(baseURL: baseURL, transport: Transports.asyncHTTPClient())
        let limit = self.limit

        // The News app's pipeline: the list, then one publisher per story merged into one
        // stream, scanned into a growing list, each version sorted by rank.
        let stories = client.publisher(for: HackerNews.stories(.top))
            .flatMap { ids in visibleStories(unique(ids), from: 0, wanted: limit, client) }
            .scan([RankedStory]()) { stories, story in stories + [story] }
            .map { stories in stories.sorted { $0.rank < $1.rank } }

        let result: Result<[RankedStory], APIError> = await withCheckedContinuation { continuation in
            var latest: [RankedStory] = []
            let box = CancellableBox()
            box.cancellable = stories.sink(
                receiveCompletion: { completion in
                    switch completion {
                    case .finished: continuation.resume(returning: .success(latest))
                    case .failure(let error): continuation.resume(returning: .failure(error))
                    }
                    box.cancellable = nil
                },
                receiveValue: { latest = $0 })
        }
        switch result {
        case .success(let stories) where json:
            let data = try HackerNews.encoder.encode(stories.map(\.item.decodedForJSON))
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        case .success(let stories):
            let width = ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init).map { max($0, 21) } ?? 100
            let lines = HNFormat.storyLines(stories, width: width, header: false, color: false)
            if !lines.isEmpty { print(lines.joined(separator: "\n")) }
        case .failure(let error):
            throw fail("could not load the top stories: \(error.description)", code: 2)
        }
    }
}

/// The stories of `ids` from `start` on, as they land: the next `wanted` publishers merged, then,
/// for each that turned out null, deleted or dead, one more from further down the list (as
/// `freshet hn --limit` counts the stories it shows).
func visibleStories(_ ids: [Int], from start: Int, wanted: Int, _ client: APIClient) -> AnyPublisher<RankedStory, APIError> {
    let end = min(start + wanted, ids.count)
    guard start < end else { return Empty().eraseToAnyPublisher() }
    let skipped = Counter()
    return Publishers.MergeMany((start..<end).map { story(ids[$0], rank: $0 + 1, client) })
        .handleEvents(receiveOutput: { if $0 == nil { skipped.add() } })
        .compactMap { $0 }
        .append(Deferred { visibleStories(ids, from: end, wanted: skipped.value, client) })
        .eraseToAnyPublisher()
}

/// One story as a publisher of one value: the ranked story, or `nil` for a null, deleted or dead
/// item; an item that fails (named on stderr) completes without a value instead of failing the merge.
func story(_ id: Int, rank: Int, _ client: APIClient) -> AnyPublisher<RankedStory?, APIError> {
    client.publisher(for: HackerNews.item(id: id))
        .map { item in item.flatMap { $0.isVisible ? RankedStory(rank: rank, item: $0) : nil } }
        .catch { error -> Empty<RankedStory?, APIError> in
            FileHandle.standardError.write(Data("warning: could not load item \(id): \(error.description)\n".utf8))
            return Empty()
        }
        .eraseToAnyPublisher()
}

/// `ids` without repeats, in order, as `freshet hn` takes them.
func unique(_ ids: [Int]) -> [Int] {
    var seen = Set<Int>()
    return ids.filter { seen.insert($0).inserted }
}

/// A count shared by a pipeline's closures.
final class Counter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}

/// Keeps the subscription alive until the pipeline completes.
final class CancellableBox: @unchecked Sendable {
    var cancellable: AnyCancellable?
}

/// Writes `message` on stderr and returns the exit code to throw.
func fail(_ message: String, code: Int32 = 1) -> ExitCode {
    FileHandle.standardError.write(Data("error: \(message)\n".utf8))
    return ExitCode(code)
}
