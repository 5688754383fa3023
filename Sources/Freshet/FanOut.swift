import Foundation

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
        let limit = max(1, maxConcurrent)
        let client = self
        return AsyncStream { continuation in
            let task = Task {
                await withTaskGroup(of: FanOutResult<Value>.self) { group in
                    var next = 0
                    func startNext() {
                        guard next < work.count else { return }
                        let offset = next
                        let endpoint = work[offset]
                        next += 1
                        group.addTask {
                            do {
                                return FanOutResult(offset: offset, result: .success(try await client.send(endpoint)))
                            } catch {
                                return FanOutResult(offset: offset, result: .failure(APIError.wrapping(error, url: nil)))
                            }
                        }
                    }
                    for _ in 0..<min(limit, work.count) { startNext() }
                    while let done = await group.next() {
                        if Task.isCancelled { break }
                        continuation.yield(done)
                        startNext()
                    }
                    group.cancelAll()
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// ``fanOut(_:maxConcurrent:)`` for endpoints that are likely in the HTTP cache: reads the
    /// store in one go for all of them (``preload(_:)``), yields what the cache answers fresh without a
    /// trip through the chain (``storedAnswers(_:)``), then sends the rest. Results arrive in
    /// completion order, the stored ones first; ending the iteration early cancels what is left.
    ///
    /// The first `probe` endpoints are asked first: when the store has none of them (a cold store),
    /// the others are not looked up twice, here and again by the chain.
    public func fanOutStoredFirst<Value>(
        _ endpoints: [Endpoint<Value>], maxConcurrent: Int, probe: Int = 8
    ) -> AsyncStream<FanOutResult<Value>> {
        let client = self
        return AsyncStream { continuation in
            let task = Task {
                // Each request is built and shaped once, for the preload and the stored answers.
                var stored: [Response<Value>?] = []
                if let lookups = client.storedLookups(endpoints) {
                    await client.preload(lookups)
                    let asked = min(max(0, probe), endpoints.count)
                    stored = await client.storedAnswers(endpoints, lookups, in: 0..<asked)
                    if stored.contains(where: { $0 != nil }) {
                        stored += await client.storedAnswers(endpoints, lookups, in: asked..<endpoints.count)
                    }
                }
                stored += [Response<Value>?](repeating: nil, count: endpoints.count - stored.count)
                for (offset, response) in stored.enumerated() {
                    if let response { continuation.yield(FanOutResult(offset: offset, result: .success(response))) }
                }
                let unanswered = stored.indices.filter { stored[$0] == nil }
                for await done in client.fanOut(unanswered.map { endpoints[$0] }, maxConcurrent: maxConcurrent) {
                    if Task.isCancelled { break }
                    continuation.yield(FanOutResult(offset: unanswered[done.offset], result: done.result))
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
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
