import Foundation
import Freshet
import HackerNewsAPI

/// A Hacker News story list that stays current: streamed from Firebase
/// (`HackerNews/listChanges(_:)` through `APIClient/events(_:options:)`), or polled when the
/// server answers plain JSON instead of a stream.
///
/// Each time the list changes, the shown stories are loaded by ``StoryLoader`` — a story loaded
/// in the last 5 minutes is fresh in the cache and costs no request, so a new story is fetched
/// once, and a shown one again only once its copy has gone stale — and handed on when they
/// differ from the last ones handed on. A reconnecting stream keeps the last
/// stories; its first `put` on the new connection brings the whole list again.
public struct LiveStories: Sendable {
    /// What the list is doing, for a status line.
    public enum Status: Sendable, Equatable {
        /// Connecting (connection `connection`, 1 for the first).
        case connecting(connection: Int)
        /// Streaming: changes arrive as they happen.
        case live
        /// The stream broke; the next connection is made after `after`.
        case reconnecting(after: Duration, reason: String)
        /// The server does not stream this list: it is asked again every `every`.
        case polling(every: Duration)
    }

    /// Loads the stories.
    public var loader: StoryLoader
    /// The list.
    public var list: HackerNews.StoryList
    /// How many stories are shown.
    public var limit: Int
    /// Their order.
    public var sort: StoryLoader.Sort
    /// The wait between two polls, when the server does not stream.
    public var interval: Duration
    /// How the stream keeps its connection.
    public var options: EventStreamOptions

    /// Creates a live list.
    public init(loader: StoryLoader, list: HackerNews.StoryList, limit: Int, sort: StoryLoader.Sort = .rank,
                interval: Duration = .seconds(30), options: EventStreamOptions = EventStreamOptions()) {
        self.loader = loader
        self.list = list
        self.limit = limit
        self.sort = sort
        self.interval = interval
        self.options = options
    }

    /// Follows the list until the calling task is cancelled: `onStatus` with each change of the
    /// connection, `onPage` with the stories each time the shown ones change (the first time
    /// once the list has arrived).
    /// - Throws: the stream's or the poll's error when nothing more can be shown (the server
    ///   refuses the list); never for cancellation, after which it returns.
    public func run(onStatus: @escaping @Sendable (Status) -> Void, onPage: (StoryPage) async -> Void) async throws(APIError) {
        var shown: [RankedStory]?
        var options = self.options
        let previous = options.onState
        options.onState = { state in
            previous?(state)
            switch state {
            case .connecting(let connection): onStatus(.connecting(connection: connection))
            case .open: onStatus(.live)
            case .reconnecting(let after, let cause): onStatus(.reconnecting(after: after, reason: cause.reason ?? cause.description))
            }
        }
        var live = HackerNews.LiveList()
        do {
            stream: for try await event in loader.client.events(HackerNews.listChanges(list), options: options) {
                switch event.type {
                case "put", "patch":
                    // A change that does not decode is left out; the next `put` brings the whole list again.
                    guard let change = try? event.value() else { continue }
                    // The first list counts even when it is empty: it is what there is to show.
                    guard live.apply(event.type, change) || shown == nil else { continue }
                    let page = await loader.stories(live.ids, of: list, limit: limit, sort: sort)
                    if Task.isCancelled { return }
                    if page.stories != shown {
                        shown = page.stories
                        await onPage(page)
                    }
                case "cancel":
                    // Firebase stopped serving the stream (its rules no longer let it be read): poll.
                    break stream
                default:
                    continue
                }
            }
            if Task.isCancelled { return }
        } catch {
            if Task.isCancelled { return }
            guard let error = error as? APIError, case .notAnEventStream = error else {
                throw (error as? APIError) ?? APIError.wrapping(error, url: nil)
            }
        }
        try await poll(shown: shown, onStatus: onStatus, onPage: onPage)
    }

    /// Asks for the list every ``interval`` (the list revalidated each time, the items when stale).
    private func poll(shown: [RankedStory]?, onStatus: @Sendable (Status) -> Void, onPage: (StoryPage) async -> Void)
        async throws(APIError)
    {
        var shown = shown
        while !Task.isCancelled {
            onStatus(.polling(every: interval))
            do {
                let page = try await loader.load(list, limit: limit, sort: sort, forceList: true, forceItems: false)
                if page.stories != shown {
                    shown = page.stories
                    await onPage(page)
                }
            } catch {
                if error == .cancelled || Task.isCancelled { return }
                // Nothing shown yet: nothing to keep showing.
                guard shown != nil else { throw error }
                onStatus(.reconnecting(after: interval, reason: error.reason ?? error.description))
            }
            do { try await Task.sleep(for: interval) } catch { return }
        }
    }
}
