import Foundation
import Freshet
import FreshetCache
import FreshetSimulator
import FreshetTestSupport
import HTTPTypes
import OpenAPIRuntime
import Testing

/// A simulator, a hand-moved clock, a memory store and a client with the cache in front.
struct CacheHarness: Sendable {
    let sim: RunningSimulator
    let control: SimControl
    let clock: TestClock
    let store: MemoryCacheStore
    let client: APIClient

    /// GETs `/scripted/<name>` and returns the body as text, with the response metadata.
    func get(_ name: String, headers: HTTPFields = [:]) async throws -> Response<String> {
        var endpoint = Endpoint<String>(path: ["scripted", name]) { data, _ in String(decoding: data, as: UTF8.self) }
        endpoint.headers = headers
        return try await client.send(endpoint)
    }

    /// The requests the simulator saw for `/scripted/<name>`.
    func requests(_ name: String) async throws -> [SimLogEntry] {
        try await control.log().filter { $0.path == "/scripted/\(name)" }
    }

    /// Moves both clocks: the cache's and the `Date` the simulator's scripted resources send.
    func advance(_ seconds: Double) async throws {
        clock.advance(seconds)
        try await control.post("clock", ["offset": Int(clock.now.timeIntervalSinceNow.rounded())])
    }

    /// The `Date` header value for the clock's current time.
    var date: String { HTTPDate.format(clock.now) }
}

func withCache<T: Sendable>(
    _ options: CacheMiddleware.Options = .init(), background: Bool = false,
    _ body: @Sendable (CacheHarness) async throws -> T
) async throws -> T {
    try await withSimulator(.init()) { sim in
        let clock = TestClock()
        let store = MemoryCacheStore()
        let backgroundTransport = ClosureTransport { request, body, base in
            let (response, responseBody) = try await liveTransport.send(request, body: body, baseURL: base, operationID: "")
            return (ScriptedDate.restore(response), responseBody)
        }
        let cache = CacheMiddleware(store: store, options: options,
                                    backgroundTransport: background ? backgroundTransport : nil, now: clock.function)
        let client = APIClient(baseURL: sim.baseURL, transport: liveTransport, middlewares: [cache, ScriptedDate()])
        return try await body(CacheHarness(sim: sim, control: SimControl(sim), clock: clock, store: store, client: client))
    }
}

/// Hummingbird stamps every response with its own `Date`; the simulator's scripted answers carry
/// the date they mean in `X-Sim-Date`, and this shim (between the cache and the transport) puts
/// it back in `Date`, as a real origin would have sent it.
struct ScriptedDate: ClientMiddleware {
    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let (response, responseBody) = try await next(request, body, baseURL)
        return (Self.restore(response), responseBody)
    }

    static func restore(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        let simDate = HTTPField.Name("X-Sim-Date")!
        if let date = response.headerFields[simDate] {
            response.headerFields[.date] = date
            response.headerFields[simDate] = nil
        }
        return response
    }
}

extension Result where Failure == APIError {
    /// Captures the outcome of a typed-throwing async call.
    init(catching body: () async throws(APIError) -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
