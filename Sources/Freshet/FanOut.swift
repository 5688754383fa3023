import Foundation
import Synchronization

/// One result of a fan-out: which input it belongs to, and how it went.
public struct FanOutResult<Value: Sendable>: Sendable {
    /// The position of the endpoint in the input sequence.
    public var offset: Int
    /// The response, or the error for this one request. One failure never ends the stream.
    public var result: Result<Response<Value>, APIError>

    /// Creates a result for the endpoint at `offset`.
    public init(offset: Int, result: Result<Response<Value>, APIError>) {
        self.offset = offset
        self.result = result
    }
}

extension APIClient {
    /// Sends many endpoints with at most `maxConcurrent` in flight, yielding each result as it
    /// completes (completion order).
    ///
    /// The stream ends after the last result. Ending the iteration early (or cancelling the
    /// consuming task) cancels the requests still in flight and starts no new ones.
    ///
    /// ```swift
    /// for await item in client.fanOut(ids.map(HackerNews.item), maxConcurrent: 32) {
    ///     if case .success(let response) = item.result { show(response.value) }
    /// }
    /// ```
    public func fanOut<Value>(
        _ endpoints: some Sequence<Endpoint<Value>>, maxConcurrent: Int
    ) -> AsyncStream<FanOutResult<Value>> {
        let work = Array(endpoints)
        let positions = FanOutPositions(count: work.count)
        let client = self
        return AsyncStream { continuation in
            // `maxConcurrent` workers, each sending the next endpoint as soon as its last one is done.
            // Not a task per endpoint started by the parent as one finishes: the parent's turn came
            // after every answer that arrived with the finished one had been decoded, so the freed
            // slots went out in waves (a cold `freshet hn --limit 500` spent ~25 ms a request on
            // answers that take 20).
            let task = Task {
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<min(max(1, maxConcurrent), work.count) {
                        group.addTask {
                            while !Task.isCancelled, let offset = positions.take() {
                                let result: Result<Response<Value>, APIError>
                                do {
                                    result = .success(try await client.send(work[offset]))
                                } catch {
                                    result = .failure(APIError.wrapping(error, url: nil))
                                }
                                guard !Task.isCancelled else { return }
                                continuation.yield(FanOutResult(offset: offset, result: result))
                            }
                        }
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// ``fanOut(_:maxConcurrent:)`` for endpoints that are likely in the HTTP cache: yields what
    /// the cache holds fresh for them first — read and answered as ``storedAnswers(_:)`` reads and
    /// answers, a long list in parts side by side, with no trip through the chain — then sends
    /// the rest. Results arrive in completion order, the stored ones first;
    /// ending the iteration early cancels what is left.
    ///
    /// Nothing is looked up twice: the read that answers the stored ones keeps what it did not
    /// find, so the chain's lookups of the rest (all of them, on a cold store) answer from memory.
    public func fanOutStoredFirst<Value>(
        _ endpoints: [Endpoint<Value>], maxConcurrent: Int
    ) -> AsyncStream<FanOutResult<Value>> {
        let client = self
        return AsyncStream { continuation in
            let task = Task {
                await client.fanOutStoredFirst(endpoints, maxConcurrent: maxConcurrent) { continuation.yield($0) }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// ``fanOutStoredFirst(_:maxConcurrent:)`` handing each result to `body` on the caller's
    /// task instead of yielding it: the stored answers in one go, then the others as they complete.
    /// It returns after the last one; cancelling the task cancels the requests still in flight.
    ///
    /// For a caller that goes through hundreds of stored answers: a stream hands each result over
    /// between tasks (in a warm `freshet hn --limit 500`, 4–5 ms of 90).
    public func fanOutStoredFirst<Value>(
        _ endpoints: [Endpoint<Value>], maxConcurrent: Int, _ body: (FanOutResult<Value>) -> Void
    ) async {
        let stored = await preloadedAnswers(endpoints)
        for case (let offset, let response?) in stored.enumerated() {
            body(FanOutResult(offset: offset, result: .success(response)))
        }
        let unanswered = stored.indices.filter { stored[$0] == nil }
        guard !unanswered.isEmpty else { return }
        for await done in fanOut(unanswered.map { endpoints[$0] }, maxConcurrent: maxConcurrent) {
            body(FanOutResult(offset: unanswered[done.offset], result: done.result))
        }
    }

    /// What the store answers `endpoints` with, as ``storedAnswers(_:)`` answers; `nil` for each
    /// endpoint to send.
    ///
    /// The endpoints are read in parts side by side (``readParts(_:)``), each part's requests built,
    /// read and answered on its own, so that one part's answers decode while another is still
    /// being read. Each part's read keeps what it did not find (``CacheStore/preload(keys:)``), so
    /// that on a cold store the chain's lookups answer from memory rather than each reading
    /// storage; when the chain may not hand stored answers out, the parts are only read ahead.
    /// No part waits for another: a first read to tell a cold store from a warm one held every
    /// warm run up by that read (about 1 ms of a warm `freshet hn --limit 500`).
    func preloadedAnswers<Value>(_ endpoints: [Endpoint<Value>]) async -> [Response<Value>?] {
        var stored = [Response<Value>?](repeating: nil, count: endpoints.count)
        await withTaskGroup(of: (Int, [Response<Value>?]).self) { group in
            for part in Self.readParts(endpoints.count) {
                group.addTask {
                    // Not `Array(endpoints[part])`: copying a slice of a generic element type instantiates
                    // its conformances at run time (one read of every conformance record, first time).
                    let endpoints = part.map { endpoints[$0] }
                    guard let lookups = storedLookups(endpoints) else { return (part.lowerBound, []) }
                    guard lookups.handedOut else {
                        await preload(lookups)
                        return (part.lowerBound, [])
                    }
                    return (part.lowerBound, await storedAnswers(endpoints, lookups, in: endpoints.indices))
                }
            }
            // Set in place: `+` of an array and a slice of a generic element instantiates their
            // conformances at run time (a read of every conformance record, the first time).
            for await (start, answers) in group { stored.replaceSubrange(start..<start + answers.count, with: answers) }
        }
        return stored
    }

    /// The cores this process may use, asked once: Foundation reads the cgroup's quota and
    /// CPU set from `/sys` at every ask.
    private static let cores = ProcessInfo.processInfo.activeProcessorCount

    /// The parts a read ahead of `count` endpoints is split into: at least 64 endpoints each, and
    /// two per core at most (four at most), so reads and decoding keep every core busy.
    package static func readParts(_ count: Int) -> [Range<Int>] {
        guard count > 0 else { return [] }
        let parts = max(1, min(min(4, 2 * cores), count / 64))
        let size = (count + parts - 1) / parts
        return stride(from: 0, to: count, by: size).map { $0..<min($0 + size, count) }
    }

    /// Like ``fanOut(_:maxConcurrent:)``, but yields results in input order: a result that
    /// completes early is held until every earlier one has been yielded.
    public func fanOutOrdered<Value>(
        _ endpoints: some Sequence<Endpoint<Value>>, maxConcurrent: Int
    ) -> AsyncStream<FanOutResult<Value>> {
        let completions = fanOut(endpoints, maxConcurrent: maxConcurrent)
        return AsyncStream { continuation in
            let task = Task {
                var pending: [Int: FanOutResult<Value>] = [:]
                var expected = 0
                for await item in completions {
                    pending[item.offset] = item
                    while let ready = pending.removeValue(forKey: expected) {
                        continuation.yield(ready)
                        expected += 1
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

/// Hands the positions `0..<count` out one at a time to the workers of a fan-out, each position once.
private final class FanOutPositions: Sendable {
    private let next = Mutex(0)
    private let count: Int

    init(count: Int) { self.count = count }

    /// The next position nobody has taken, or `nil` when all are taken.
    func take() -> Int? {
        next.withLock { next in
            guard next < count else { return nil }
            defer { next += 1 }
            return next
        }
    }
}
