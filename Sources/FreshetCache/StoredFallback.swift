import Foundation
import Freshet
import HTTPTypes

extension APIClient {
    /// Sends `endpoint`; when the exchange fails for a reason the server may get over (rate
    /// limit, `Retry-After` beyond the cap, 5xx, unreachable, timeout, a broken or oversized
    /// body, a redirect loop), answers with the response the cache has stored, stale, instead.
    ///
    /// The cache middleware already serves stored responses when the network fails under it;
    /// this covers the failures raised *outside* it — by the retry middleware giving up, the
    /// redirect middleware, or the client's body limit — by asking the cache alone
    /// (`Cache-Control: max-stale, only-if-cached`: no network). The response then reports
    /// ``CacheOutcome/stale`` and the original failure as its ``Response/staleReason``.
    ///
    /// Definitive answers are not hidden: a `404`, `401`, `422` or any other 4xx but `408` and
    /// `429` is thrown as it is, and so is cancellation.
    /// - Throws: the original error when nothing usable is stored.
    public func sendOrStored<Value>(_ endpoint: Endpoint<Value>) async throws(APIError) -> Response<Value> {
        do {
            return try await send(endpoint)
        } catch {
            // Without a cache in the chain, `only-if-cached` would go to the server: no second try.
            guard Self.storedMayReplace(error), !Task.isCancelled, middlewares.contains(where: { $0 is CacheMiddleware })
            else { throw error }
            var fromStore = endpoint
            fromStore.headers[.cacheControl] = "max-stale, only-if-cached"
            guard var stored = try? await send(fromStore) else { throw error }
            stored.cache = .stale
            stored.headers[.freshetStaleReason] = error.description
            return stored
        }
    }

    /// Whether a stored response may stand in after `error`.
    static func storedMayReplace(_ error: APIError) -> Bool {
        switch error {
        case .cancelled, .invalidRequest: return false
        case .httpStatus(let code, _, _): return code == 408 || code == 429 || code >= 500
        default: return true
        }
    }
}
