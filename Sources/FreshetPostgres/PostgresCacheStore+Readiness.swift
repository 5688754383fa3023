import FreshetCache
import PostgresNIO
import Synchronization

extension PostgresCacheStore: CacheStoreReadiness {
    /// Ready when the store is connected — not answering from its memory tier alone after
    /// losing the server, nor shut down — and a trivial query (`SELECT 1`) answers within the
    /// query timeout.
    public func readiness() async -> StoreReadiness {
        let (healthy, closed) = state.withLock { ($0.healthy, $0.closed) }
        if closed { return .notReady("the PostgreSQL store is shut down") }
        guard healthy else {
            return .notReady("lost PostgreSQL at \(configuration.description); answering from the memory tier and the origin until it is back")
        }
        do {
            try await query { client, logger in
                _ = try await client.query("SELECT 1", logger: logger).collect()
            }
            return .ready
        } catch let error as PostgresStoreError {
            return .notReady("PostgreSQL at \(configuration.description) does not answer (\(error.reason))")
        } catch {
            return .notReady("PostgreSQL at \(configuration.description) does not answer")
        }
    }
}
