import CoreMetrics
import Foundation
import Freshet
import FreshetCache
import HTTPTypes
import Metrics
import OpenAPIRuntime
import Prometheus
import Synchronization

/// The proxy's metrics, in Prometheus' text format (swift-metrics handlers from
/// swift-prometheus, in a registry of their own: two proxies in one process never mix counts).
///
/// | metric | type | what |
/// |---|---|---|
/// | `freshet_proxy_requests_total{cache}` | counter | answered requests by cache outcome: `hit`, `miss`, `revalidated`, `stale`, or `none` for the proxy's own answers (a `502`, `504` or `400`) |
/// | `freshet_proxy_origin_duration_seconds` | histogram | time from sending a request to the origin to its response head |
/// | `freshet_proxy_requests_in_flight` | gauge | requests being forwarded now (hits answered from memory take no time) |
/// | `freshet_cache_memory_bytes` | gauge | bytes in the memory tier of the cache's store |
/// | `freshet_cache_store_errors_total` | counter | failed or timed-out queries of the shared store (PostgreSQL) |
/// | `freshet_proxy_credential_requests_total{credential}` | counter | answered requests by credential |
/// | `freshet_ratelimit_remaining{credential,resource}` | gauge | the origin's `X-RateLimit-Remaining` in its last answer to the credential for the resource (`X-RateLimit-Resource`; `default` when it names none) |
/// | `freshet_ratelimit_reset_timestamp_seconds{credential,resource}` | gauge | the origin's `X-RateLimit-Reset` (Unix seconds) in the same answer |
///
/// **Credentials** are known by a label, never by their value: the first 12 hex digits of the
/// SHA-256 of the request's `Authorization` and `Cookie` (`RequestCredential.label`), or
/// `anonymous` without either. At most ``maxCredentials`` labels are kept; requests of
/// credentials seen after those are counted under `credential="other"`, whose rate-limit
/// gauges hold the last answer to any of them. At most ``maxResources`` resource names are
/// kept (lowercase letters, digits, `_`, `-`, `.`; up to 40 characters); others are `other`.
/// The rate-limit gauges are set from every answer of the origin that carries
/// `X-RateLimit-Limit`, `-Remaining` and `-Reset`, background revalidations included.
public final class ProxyMetrics: Sendable {
    /// The most credential labels the metrics keep (besides `anonymous` and `other`).
    public static let maxCredentials = 64
    /// The most rate-limit resource names the metrics keep (besides `other`).
    public static let maxResources = 16
    /// The registry the handlers write to.
    let registry = PrometheusCollectorRegistry()
    /// Makes handlers that write to this registry: give it to anything else that should report
    /// here (the PostgreSQL store's error counter).
    public let factory: any MetricsFactory
    private let requests: [CacheOutcome?: CoreMetrics.Counter]
    private let originDuration: CoreMetrics.Timer
    private let inFlight: CoreMetrics.Meter
    private let memoryBytes: CoreMetrics.Gauge
    private let labels = Mutex(Labels())

    /// The credential and resource labels seen so far, and their handlers.
    private struct Labels {
        /// The credentials known by their own label (at most ``ProxyMetrics/maxCredentials``).
        var credentials: Set<String> = []
        var requests: [String: CoreMetrics.Counter] = [:]
        var resources: Set<String> = []
        var rateLimits: [RateLimitKey: (remaining: CoreMetrics.Gauge, reset: CoreMetrics.Gauge)] = [:]
    }

    private struct RateLimitKey: Hashable {
        var credential: String
        var resource: String
    }

    /// Metrics at zero, in a registry of their own.
    public init() {
        var prometheus = PrometheusMetricsFactory(registry: registry)
        // Origin latency, from a loopback origin (sub-millisecond) to a slow API (seconds).
        prometheus.durationHistogramBuckets["freshet_proxy_origin_duration_seconds"] = [
            .microseconds(500), .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
            .seconds(2.5), .seconds(5), .seconds(10),
        ]
        factory = prometheus
        var requests: [CacheOutcome?: CoreMetrics.Counter] = [:]
        for outcome in [CacheOutcome.hit, .miss, .revalidated, .stale, nil] {
            requests[outcome] = CoreMetrics.Counter(label: "freshet_proxy_requests_total",
                                        dimensions: [("cache", outcome?.rawValue ?? "none")], factory: prometheus)
        }
        self.requests = requests
        originDuration = CoreMetrics.Timer(label: "freshet_proxy_origin_duration_seconds", dimensions: [], factory: prometheus)
        inFlight = CoreMetrics.Meter(label: "freshet_proxy_requests_in_flight", dimensions: [], factory: prometheus)
        memoryBytes = CoreMetrics.Gauge(label: "freshet_cache_memory_bytes", dimensions: [], factory: prometheus)
        // Present from the first scrape, at zero.
        _ = CoreMetrics.Counter(label: "freshet_cache_store_errors_total", dimensions: [], factory: prometheus)
    }

    /// Counts one answered request, by outcome and by the credential in `request`'s fields.
    func answered(_ outcome: CacheOutcome?, request fields: HTTPFields) {
        requests[outcome]?.increment()
        let label = credentialLabel(fields)
        let counter = labels.withLock { labels in
            if let known = labels.requests[label] { return known }
            let made = CoreMetrics.Counter(label: "freshet_proxy_credential_requests_total",
                                           dimensions: [("credential", label)], factory: factory)
            labels.requests[label] = made
            return made
        }
        counter.increment()
    }

    /// Sets the rate-limit gauges of the credential in `request` from the origin's `response`,
    /// when it carries a budget (`X-RateLimit-Limit`, `-Remaining`, `-Reset`).
    func rateLimit(_ response: HTTPFields, request: HTTPFields) {
        guard let budget = RateLimitBudget(headers: response, defaultResource: RateLimitTracker.defaultResource) else { return }
        let credential = credentialLabel(request)
        let gauges = labels.withLock { labels in
            var resource = Self.resourceLabel(budget.resource)
            if resource != "other", !labels.resources.contains(resource) {
                if labels.resources.count < Self.maxResources { labels.resources.insert(resource) } else { resource = "other" }
            }
            let key = RateLimitKey(credential: credential, resource: resource)
            if let known = labels.rateLimits[key] { return known }
            let dimensions = [("credential", credential), ("resource", resource)]
            let made = (remaining: CoreMetrics.Gauge(label: "freshet_ratelimit_remaining", dimensions: dimensions, factory: factory),
                        reset: CoreMetrics.Gauge(label: "freshet_ratelimit_reset_timestamp_seconds", dimensions: dimensions,
                                                 factory: factory))
            labels.rateLimits[key] = made
            return made
        }
        gauges.remaining.record(budget.remaining)
        gauges.reset.record(budget.resetAt.timeIntervalSince1970.rounded())
    }

    /// The label of the credential in `fields`: its `RequestCredential` label while fewer than
    /// ``maxCredentials`` are known (or it is one of them), `other` past that, `anonymous`
    /// without a credential.
    func credentialLabel(_ fields: HTTPFields) -> String {
        guard let label = RequestCredential(fields)?.label else { return "anonymous" }
        return labels.withLock { labels in
            if labels.credentials.contains(label) { return label }
            guard labels.credentials.count < Self.maxCredentials else { return "other" }
            labels.credentials.insert(label)
            return label
        }
    }

    /// A resource name fit for a label: lowercase letters, digits, `_`, `-` and `.`, at most 40
    /// characters; `other` for anything else.
    static func resourceLabel(_ resource: String) -> String {
        let lowered = resource.lowercased()
        let allowed = lowered.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-" || $0 == "."
        }
        return allowed && !lowered.isEmpty && lowered.count <= 40 ? lowered : "other"
    }

    /// A request starts (`+1`) or ends (`-1`) being forwarded.
    func forwarding(_ delta: Int) {
        if delta > 0 { inFlight.increment(by: Double(delta)) } else { inFlight.decrement(by: Double(-delta)) }
    }

    /// One exchange with the origin took `duration` to its response head.
    func origin(_ duration: Duration) {
        originDuration.record(duration: duration)
    }

    /// The current values in Prometheus' text exposition format (version 0.0.4), with the
    /// memory tier's size as `memoryTierBytes`.
    func exposition(memoryTierBytes: Int) -> String {
        memoryBytes.record(memoryTierBytes)
        return registry.emitToString()
    }
}

/// Times each exchange with the origin, to its response head, and reads its rate-limit budget.
struct MeasuredTransport: ClientTransport {
    let transport: any ClientTransport
    let metrics: ProxyMetrics

    func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws
        -> (HTTPResponse, HTTPBody?)
    {
        let start = ContinuousClock.now
        defer { metrics.origin(ContinuousClock.now - start) }
        let (response, responseBody) = try await transport.send(request, body: body, baseURL: baseURL, operationID: operationID)
        metrics.rateLimit(response.headerFields, request: request.headerFields)
        return (response, responseBody)
    }
}
