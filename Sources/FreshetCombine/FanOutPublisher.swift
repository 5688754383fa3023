#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import Freshet

extension APIClient {
    /// A publisher that sends `endpoints` with at most `maxConcurrent` in flight and delivers each
    /// result as it completes (completion order), then finishes: the Combine face of
    /// `APIClient.fanOut(_:maxConcurrent:)`.
    ///
    /// One failing request never ends the stream: its `FanOutResult` carries the error.
    /// The bound is `flatMap(maxPublishers:)`'s, so a request starts only when one of the
    /// `maxConcurrent` before it has finished. Cancelling the subscription cancels the requests in
    /// flight and starts no new ones.
    ///
    /// ```swift
    /// client.fanOutPublisher(ids.map { HackerNews.item(id: $0) }, maxConcurrent: 8)
    ///     .compactMap { try? $0.result.get().value }
    ///     .scan([]) { stories, story in stories + [story] }
    ///     .sink { stories in show(stories) }
    /// ```
    public func fanOutPublisher<Value>(
        _ endpoints: some Sequence<Endpoint<Value>>, maxConcurrent: Int
    ) -> AnyPublisher<FanOutResult<Value>, Never> {
        let client = self
        return Array(Array(endpoints).enumerated()).publisher
            .flatMap(maxPublishers: .max(max(1, maxConcurrent))) { offset, endpoint in
                TaskPublisher { () async throws(APIError) -> Response<Value> in try await client.send(endpoint) }
                    .map { FanOutResult(offset: offset, result: .success($0)) }
                    .catch { Just(FanOutResult(offset: offset, result: .failure($0))) }
            }
            .eraseToAnyPublisher()
    }
}
