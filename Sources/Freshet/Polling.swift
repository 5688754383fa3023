import Foundation
import HTTPTypes

extension APIClient {
    /// Requests `endpoint` again and again, yielding a response only when its content changed.
    ///
    /// Between requests it waits the server's `X-Poll-Interval` seconds, never less than
    /// `minimumInterval`. "Changed" means a different `ETag` when the server sends one, otherwise
    /// different body bytes; a cache-revalidated response (`304`) is unchanged by definition.
    /// The first response is always yielded. A failure ends the sequence with that error; wrap
    /// the client in ``RetryMiddleware`` to ride out transient ones. Cancel the consuming task
    /// (or stop iterating) to stop polling.
    public func poll<Value>(
        _ endpoint: Endpoint<Value>,
        minimumInterval: Duration = .seconds(60),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) -> AsyncThrowingStream<Response<Value>, any Error> {
        let client = self
        let raw = endpoint
        return AsyncThrowingStream { continuation in
            let task = Task {
                var lastTag: String?
                var lastBytes: Data?
                var first = true
                do {
                    while !Task.isCancelled {
                        // Fetch the bytes once; decode from them so change detection needs no re-request.
                        let bytes = try await client.send(Endpoint<Data>(
                            method: raw.method, path: raw.pathSegments, query: raw.query, headers: raw.headers,
                            body: raw.body, absoluteURL: raw.absoluteURL) { data, _ in data })
                        let tag = bytes.headers[.eTag]
                        let changed = first
                            || (bytes.cache != .revalidated && bytes.cache != .hit
                                && (tag != nil ? tag != lastTag : bytes.value != lastBytes))
                        if changed {
                            let value = try raw.decode(bytes.value, client.decoder)
                            continuation.yield(bytes.map { _ in value })
                        }
                        first = false
                        lastTag = tag
                        lastBytes = tag == nil ? bytes.value : nil
                        let advertised = bytes.headers[.xPollInterval].flatMap { Int64($0) }.map { Duration.seconds($0) }
                        try await sleep(max(minimumInterval, advertised ?? .zero))
                    }
                    continuation.finish()
                } catch let error as DecodingError {
                    continuation.finish(throwing: APIError.decoding(error, type: String(describing: Value.self)))
                } catch {
                    continuation.finish(throwing: Task.isCancelled ? APIError.cancelled : error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
