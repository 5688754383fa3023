import Foundation
import Freshet
import FreshetSimulator
import Synchronization
import HTTPTypes

/// One request as the simulator logged it (`GET /_sim/log`).
public struct SimLogEntry: Decodable, Sendable {
    public var id: Int
    public var method: String
    public var path: String
    public var headers: [String: String]
    public var status: Int?
    public var finished: Bool
    public var aborted: Bool
    public var bytesSent: Int?
    public var bytesReceived: Int?
}

/// The simulator's counters (`GET /_sim/stats`).
public struct SimStats: Decodable, Sendable {
    public var requests: Int
    public var inFlight: Int
    public var maxInFlight: Int
}

/// Drives the simulator's `/_sim/` control endpoints over HTTP.
public struct SimControl: Sendable {
    let client: APIClient

    /// A controller for the simulator at `baseURL`.
    public init(_ sim: RunningSimulator) {
        client = APIClient(baseURL: sim.baseURL, transport: liveTransport)
    }

    /// The request log, in arrival order.
    public func log() async throws -> [SimLogEntry] {
        try await client.value(Endpoint<[SimLogEntry]>.get("_sim", "log"))
    }

    /// Clears the log and the counters.
    public func resetLog() async throws {
        _ = try await client.send(Endpoint<Data>(method: .delete, path: ["_sim", "log"]) { data, _ in data })
    }

    /// The counters.
    public func stats() async throws -> SimStats {
        try await client.value(Endpoint<SimStats>.get("_sim", "stats"))
    }

    /// Posts a JSON control command.
    public func post(_ path: String, _ json: [String: any Sendable]) async throws {
        let body = try JSONSerialization.data(withJSONObject: json)
        _ = try await client.send(Endpoint<Data>(method: .post, path: ["_sim", path], body: body) { data, _ in data })
    }

    /// Delay before headers for paths starting with `route`.
    public func setLatency(route: String, milliseconds: Int) async throws {
        try await post("latency", ["route": route, "ms": milliseconds])
    }

    /// Holds the requests under `route` before their response until ``release(route:)``.
    public func hold(route: String) async throws {
        try await post("hold", ["route": route])
    }

    /// Lets the requests held under `route` go on.
    public func release(route: String) async throws {
        var request = Endpoint<Data>(method: .delete, path: ["_sim", "hold"]) { data, _ in data }
        request.query = [QueryItem("route", route)]
        _ = try await client.send(request)
    }

    /// The next `times` requests under `route` get this canned answer.
    public func fault(route: String, status: Int, times: Int = 1, headers: [String: String] = [:], body: String = "") async throws {
        try await post("faults", ["route": route, "status": status, "times": times, "headers": headers, "body": body])
    }
}

extension SimControl {
    /// Scripts the answer of `/scripted/<name>` (see the simulator's `Script`).
    public func script(_ name: String, status: Int = 200, headers: [(String, String)], body: String = "{}",
                       unsafeHeaders: [(String, String)] = []) async throws {
        try await post("script", [
            "path": "/scripted/\(name)", "status": status, "headers": headers.map { [$0.0, $0.1] },
            "body": body, "unsafeHeaders": unsafeHeaders.map { [$0.0, $0.1] },
        ])
    }
}

/// A clock a test moves by hand: freshness is tested by advancing it, never by sleeping.
public final class TestClock: Sendable {
    private let current: Mutex<Date>

    /// Starts at `start` (default: now).
    public init(_ start: Date = Date()) {
        current = Mutex(start)
    }

    /// The current time.
    public var now: Date { current.withLock { $0 } }

    /// Moves the clock forward.
    public func advance(_ seconds: Double) {
        current.withLock { $0 += seconds }
    }

    /// The clock as a `now` function to inject.
    public var function: @Sendable () -> Date { { [self] in now } }
}
