import Foundation
import Logging
import OpenAPIRuntime

/// The recommended middleware chain.
public enum Middlewares {
    /// Freshet's standard chain, outermost first:
    /// logging → redirect policy → retry → rate limit → coalescing → (`extra`, e.g. the cache).
    ///
    /// The cache belongs innermost (pass it in `innermost`) so a retried or coalesced request still
    /// hits it, and retry sits outside it so a failed revalidation can be retried.
    public static func standard(
        logger: Logger? = nil,
        retry: RetryMiddleware = RetryMiddleware(),
        rateLimit: RateLimitMiddleware = RateLimitMiddleware(),
        coalescing: CoalescingMiddleware? = CoalescingMiddleware(),
        innermost: [any ClientMiddleware] = []
    ) -> [any ClientMiddleware] {
        var chain: [any ClientMiddleware] = []
        if let logger { chain.append(LoggingMiddleware(logger: logger)) }
        chain.append(RedirectMiddleware())
        chain.append(retry)
        chain.append(rateLimit)
        if let coalescing { chain.append(coalescing) }
        return chain + innermost
    }
}
