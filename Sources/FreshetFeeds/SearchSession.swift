import AsyncAlgorithms
import Foundation
import Freshet
import Synchronization

/// What a ``SearchSession`` reports while it runs.
public enum SearchUpdate<Results: Sendable>: Sendable {
    /// A request for `query` started (any older request was cancelled first).
    case searching(query: String)
    /// The newest query's results arrived.
    case results(query: String, Results)
    /// The newest query failed. Rate limits arrive as `APIError.rateLimited(resetAt:message:url:response:)`.
    case failed(query: String, APIError)

    /// The query this update is about.
    public var query: String {
        switch self {
        case .searching(let query), .results(let query, _), .failed(let query, _): return query
        }
    }
}

/// Search-as-you-type (the seeds' search bar): the text of a search field flows through
///
/// 1. `debounce` — nothing is sent until typing pauses for ``debounce`` (300 ms by default),
///    measured on an injectable `Clock`;
/// 2. drop empty — a field that is (or was cleared to) blank searches nothing;
/// 3. `removeDuplicates` — a query equal to the previous one is not requested again;
/// 4. switch to latest (`flatMapLatest`) — each new query cancels the request still in flight
///    for an older one, so a stale answer is never delivered.
///
/// Steps 1 and 3 are swift-async-algorithms' `debounce(for:tolerance:clock:)` and
/// `removeDuplicates()`. Step 2 comes after the debounce, not before it: typing "s" and
/// deleting it within the debounce interval must not search for "s". Step 4 is done here with
/// task cancellation: it reacts to a new query at once, whether or not the consumer is waiting
/// for the next update (a pull-driven `flatMapLatest` only looks at the next query when the
/// consumer asks for more, which lets a stale request run to completion).
///
/// One session type serves every search: `freshet repos` and `freshet blogs` build theirs with
/// ``SearchSession/repositories(client:sort:perPage:debounce:)`` and
/// ``SearchSession/blogs(client:sort:size:debounce:)``.
///
/// ```swift
/// let session = SearchSession.repositories(client: context.gitHub())
/// for await update in session.updates(for: fieldText) {
///     render(update)
/// }
/// ```
public struct SearchSession<Results: Sendable>: Sendable {
    /// The quiet time after the last keystroke before a query is sent.
    public var debounce: Duration
    /// Runs one query. Cancelling the calling task must cancel the request (`APIClient` does).
    public let search: @Sendable (String) async throws(APIError) -> Results

    /// The default debounce interval: 300 ms.
    public static var defaultDebounce: Duration { .milliseconds(300) }

    /// Creates a session that runs `search` for each settled query.
    public init(
        debounce: Duration = SearchSession.defaultDebounce,
        search: @escaping @Sendable (String) async throws(APIError) -> Results
    ) {
        self.debounce = debounce
        self.search = search
    }

    /// The updates for a stream of field texts, timed by the continuous clock.
    public func updates<Input: AsyncSequence & Sendable>(for input: Input) -> AsyncStream<SearchUpdate<Results>>
    where Input.Element == String {
        updates(for: input, clock: ContinuousClock())
    }

    /// The updates for a stream of field texts (the whole text after each keystroke).
    ///
    /// Queries are trimmed of surrounding whitespace. The stream ends after `input` ends and the
    /// last query's request has answered (a query still being debounced when `input` ends is
    /// sent at once). Ending the iteration (or cancelling the iterating task) cancels the
    /// request in flight.
    /// - Parameters:
    ///   - input: the field's text after each change.
    ///   - clock: the clock the debounce waits on; tests pass one they advance by hand.
    public func updates<Input: AsyncSequence & Sendable, C: Clock>(for input: Input, clock: C)
        -> AsyncStream<SearchUpdate<Results>>
    where Input.Element == String, C.Duration == Duration {
        let (stream, continuation) = AsyncStream.makeStream(of: SearchUpdate<Results>.self)
        let queries = input
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            .debounce(for: debounce, clock: clock)
            .filter { !$0.isEmpty }
            .removeDuplicates()
        let latest = LatestSearch(search: search, continuation: continuation)
        let driver = Task {
            do {
                for try await query in queries {
                    latest.start(query)
                }
            } catch {
                // The input failed: treat it as its end.
            }
            await latest.finish()
            continuation.finish()
        }
        continuation.onTermination = { _ in
            driver.cancel()
            latest.cancel()
        }
        return stream
    }
}

/// The switch-to-latest step: at most one request runs; a newer query cancels it, and the
/// generation check keeps a cancelled request's late answer from being delivered.
private final class LatestSearch<Results: Sendable>: Sendable {
    private struct State {
        var generation = 0
        var task: Task<Void, Never>?
        var cancelled = false
    }

    private let state = Mutex(State())
    private let search: @Sendable (String) async throws(APIError) -> Results
    private let continuation: AsyncStream<SearchUpdate<Results>>.Continuation

    init(search: @escaping @Sendable (String) async throws(APIError) -> Results,
         continuation: AsyncStream<SearchUpdate<Results>>.Continuation) {
        self.search = search
        self.continuation = continuation
    }

    /// Cancels the request in flight and starts one for `query`.
    func start(_ query: String) {
        let generation: Int? = state.withLock { state in
            guard !state.cancelled else { return nil }
            state.task?.cancel()
            state.task = nil
            state.generation += 1
            // Yielded under the lock: nothing of an older generation can follow it.
            continuation.yield(.searching(query: query))
            return state.generation
        }
        guard let generation else { return }
        let search = self.search
        let task = Task { [self] in
            let update: SearchUpdate<Results>
            do throws(APIError) {
                update = .results(query: query, try await search(query))
            } catch {
                if error == .cancelled { return }
                update = .failed(query: query, error)
            }
            deliver(update, generation: generation)
        }
        state.withLock { state in
            if state.generation == generation, !state.cancelled { state.task = task } else { task.cancel() }
        }
    }

    private func deliver(_ update: SearchUpdate<Results>, generation: Int) {
        state.withLock { state in
            guard state.generation == generation, !state.cancelled, !Task.isCancelled else { return }
            continuation.yield(update)
        }
    }

    /// Waits for the newest request to answer.
    func finish() async {
        let task = state.withLock { $0.task }
        await task?.value
    }

    /// Cancels the request in flight; nothing more is delivered.
    func cancel() {
        state.withLock { state in
            state.cancelled = true
            state.task?.cancel()
            state.task = nil
        }
    }
}

/// What a search screen shows, folded from ``SearchUpdate``s: the newest query, whether it is
/// loading, the last results that arrived (kept while a newer query loads) and the newest error.
public struct SearchState<Results: Sendable>: Sendable {
    /// The query most recently sent.
    public var query: String?
    /// Whether a request for ``query`` is in flight.
    public var isLoading = false
    /// The query ``results`` answer.
    public var resultsQuery: String?
    /// The last results that arrived.
    public var results: Results?
    /// Why the newest query failed, if it did.
    public var error: APIError?

    /// An empty state: nothing searched yet.
    public init() {}

    /// Applies one update.
    public mutating func apply(_ update: SearchUpdate<Results>) {
        switch update {
        case .searching(let query):
            self.query = query
            isLoading = true
            error = nil
        case .results(let query, let results):
            self.query = query
            isLoading = false
            resultsQuery = query
            self.results = results
            error = nil
        case .failed(let query, let error):
            self.query = query
            isLoading = false
            self.error = error
        }
    }
}
