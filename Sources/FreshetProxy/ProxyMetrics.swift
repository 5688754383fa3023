import CoreMetrics
import Foundation
import Freshet
import FreshetCache
import HTTPTypes
import Metrics
import OpenAPIRuntime
import Prometheus

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
public final class ProxyMetrics: Sendable {
    /// The registry the handlers write to.
    let registry = PrometheusCollectorRegistry()
    /// Makes handlers that write to this registry: give it to anything else that should report
    /// here (the PostgreSQL store's error counter).
    public let factory: any MetricsFactory
    private let requests: [CacheOutcome?: CoreMetrics.Counter]
    private let originDuration: CoreMetrics.Timer
    private let inFlight: CoreMetrics.Meter
    private let memoryBytes: CoreMetrics.Gauge

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

    /// Counts one answered request.
    func answered(_ outcome: CacheOutcome?) {
        requests[outcome]?.increment()
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

/// Times each exchange with the origin, to its response head.
struct MeasuredTransport: ClientTransport {
    let transport: any ClientTransport
    let metrics: ProxyMetrics

    func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws
        -> (HTTPResponse, HTTPBody?)
    {
        let start = ContinuousClock.now
        defer { metrics.origin(ContinuousClock.now - start) }
        return try await transport.send(request, body: body, baseURL: baseURL, operationID: operationID)
    }
}
