import Foundation
import Logging
import OpenAPIRuntime

/// The recommended middleware chain.
public enum Middlewares {
    /// Freshet's standard chain, outermost first:
    /// tracing → logging → metrics → authentication → redirect policy → retry → `decompression` →
    /// coalescing → `innermost` (the cache) → rate limit → transport.
    ///
    /// Tracing is outermost so its span covers the whole exchange and log lines carry its
    /// context. Metrics sit outside retry and the cache, so they count one request per call, with
    /// the cache's outcome and every retry it took. Authentication sits outside the redirect
    /// policy, which strips credentials on a redirect to another host, and outside retry, so a
    /// request sent again with a refreshed credential still gets the retry policy.
    ///
    /// Pass the cache in `innermost`. It sits inside retry and coalescing, so a retried or
    /// coalesced request still hits it, and a failed revalidation can be retried. The rate-limit
    /// middleware sits inside the cache (a change from the first design, which had it outside):
    /// a spent budget must never block an answer the cache can give without a request, and a
    /// refused revalidation lets the cache serve its stored response when it is allowed to.
    ///
    /// Pass content decoding in `decompression` (FreshetTransports' `DecompressionMiddleware`,
    /// which `APIClient.live` puts here when the chain has none; URLSession decodes on its own).
    /// It sits above the cache and coalescing, so the store keeps the encoded bytes (smaller,
    /// validators and `Vary` intact), concurrent callers share the encoded body, and each
    /// caller's decoded bytes count against its own body limit.
    public static func standard(
        logger: Logger? = nil,
        tracing: TracingMiddleware? = nil,
        metrics: MetricsMiddleware? = nil,
        authentication: (any ClientMiddleware)? = nil,
        retry: RetryMiddleware = RetryMiddleware(),
        rateLimit: RateLimitMiddleware = RateLimitMiddleware(),
        coalescing: CoalescingMiddleware? = CoalescingMiddleware(),
        decompression: (any ClientMiddleware)? = nil,
        innermost: [any ClientMiddleware] = []
    ) -> [any ClientMiddleware] {
        var chain: [any ClientMiddleware] = []
        if let tracing { chain.append(tracing) }
        if let logger { chain.append(LoggingMiddleware(logger: logger)) }
        if let metrics { chain.append(metrics) }
        if let authentication { chain.append(authentication) }
        chain.append(RedirectMiddleware())
        chain.append(retry)
        if let decompression { chain.append(decompression) }
        if let coalescing { chain.append(coalescing) }
        chain.append(contentsOf: innermost)
        chain.append(rateLimit)
        return chain
    }
}
