import Foundation
import Hummingbird

/// The `/_sim/…` control endpoints (not recorded in the request log, not delayed, not faulted).
/// Each answers `{"ok": true}` or `{"error": "…"}`; the Swift accessors on ``Simulator`` do the same.
struct ControlController {
    let simulator: Simulator

    /// `{"ok": true}`.
    static let ok = obj(("ok", true)).rendered

    // What each command's body looks like: shown in `/_sim/routes` and in the `400` answers.
    static let latencyBody = #"{"route":"/v0/item","ms":50}"#
    static let holdBody = #"{"route":"/v0/item/8863.json"}"#
    static let eventsBody = #"{"repo":"owner/name","count":3}"#
    static let faultBody = #"{"route":"/path","status":503,"times":1,"headers":{},"body":"…"}"#
    static let faultModeBody = #"{"route":"/path","mode":""# + FaultModeKind.allCases.map(\.rawValue).joined(separator: "|")
        + #"","times":1,"bytes":100,"chunk":64,"intervalMs":100,"delayMs":1000,"size":52428800,"chunked":false}"#
    static let rateLimitBody = #"{"resource":"core|search","remaining":0,"reset":<epoch>}"#
    static let scriptBody = #"{"path":"/scripted/…","status":200,"headers":[["Name","value"]],"body":"…"}"#
    static let clockBody = #"{"offset":30}"#
    static let hnListBody = #"{"ids":[8863,8917]}"#
    static let stallBody = #"{"stalled":true}"#

    func addRoutes(to routes: SimRoutes) {
        routes.on("/_sim/log", methods: [.get]) { _, _ in
            let log = await simulator.requestLog()
            return HTTPSupport.json(200, JSON.array(log.map(Self.logJSON)).rendered)
        }
        routes.on("/_sim/log", methods: [.delete]) { _, _ in
            await simulator.resetLog()
            return HTTPSupport.json(200, Self.ok)
        }
        routes.on("/_sim/stats", methods: [.get]) { _, _ in
            let s = await simulator.stats()
            return HTTPSupport.json(200, obj(
                ("requests", .int(s.requests)), ("inFlight", .int(s.inFlight)), ("maxInFlight", .int(s.maxInFlight))).rendered)
        }
        routes.on("/_sim/latency", methods: [.post], " " + Self.latencyBody) { request, _ in
            struct Body: Decodable { var route: String?; var ms: Int }
            guard let body: Body = try await Self.decode(request) else { return Self.expected(Self.latencyBody) }
            await simulator.setLatency(route: body.route ?? "", milliseconds: body.ms)
            return HTTPSupport.json(200, Self.ok)
        }
        routes.on("/_sim/hold", methods: [.post], " " + Self.holdBody) { request, _ in
            struct Body: Decodable { var route: String }
            guard let body: Body = try await Self.decode(request) else { return Self.expected(Self.holdBody) }
            await simulator.hold(route: body.route)
            return HTTPSupport.json(200, Self.ok)
        }
        routes.on("/_sim/hold", methods: [.delete], " ?route=/path (none: every hold)") { request, _ in
            await simulator.release(route: QueryItems(request.uri.query)["route"])
            return HTTPSupport.json(200, Self.ok)
        }
        routes.on("/_sim/events", methods: [.post], " " + Self.eventsBody) { request, _ in
            struct Body: Decodable { var repo: String; var count: Int? }
            guard let body: Body = try await Self.decode(request) else { return Self.expected(Self.eventsBody) }
            guard await simulator.addEvents(repo: body.repo, count: body.count ?? 1) else {
                return HTTPSupport.controlError(404, "unknown repository \(body.repo)")
            }
            return HTTPSupport.json(200, Self.ok)
        }
        routes.on("/_sim/faults", methods: [.post], " " + Self.faultBody) { request, _ in
            guard let fault: Fault = try await Self.decode(request) else { return Self.expected(Self.faultBody) }
            await simulator.injectFaults(fault)
            return HTTPSupport.json(200, Self.ok)
        }
        routes.on("/_sim/faults", methods: [.delete]) { _, _ in
            await simulator.clearFaults()
            return HTTPSupport.json(200, Self.ok)
        }
        routes.on("/_sim/fault-mode", methods: [.post], " " + Self.faultModeBody) { request, _ in
            guard let mode: FaultMode = try await Self.decode(request) else { return Self.expected(Self.faultModeBody) }
            await simulator.injectFaultMode(mode)
            return HTTPSupport.json(200, Self.ok)
        }
        routes.on("/_sim/fault-mode", methods: [.delete]) { _, _ in
            await simulator.clearFaultModes()
            return HTTPSupport.json(200, Self.ok)
        }
        routes.on("/_sim/ratelimit", methods: [.post], " " + Self.rateLimitBody) { request, _ in
            struct Body: Decodable { var resource: String?; var remaining: Int; var reset: Int?; var authenticated: Bool? }
            guard let body: Body = try await Self.decode(request),
                let resource = RateLimitResource(rawValue: body.resource ?? "core")
            else { return Self.expected(Self.rateLimitBody) }
            await simulator.setRateLimit(resource: resource, remaining: body.remaining, reset: body.reset, authenticated: body.authenticated)
            return HTTPSupport.json(200, Self.ok)
        }
        routes.on(
            "/_sim/ratelimits", methods: [.get],
            #" (per credential and resource: [{"credential":"<12 hex of the token's SHA-256>|anonymous","resource":"core|search","limit":5000,"used":1,"remaining":4999,"reset":<epoch>}])"#
        ) { _, _ in
            let usage = await simulator.rateLimits()
            return HTTPSupport.json(200, JSON.array(usage.map(Self.rateLimitJSON)).rendered)
        }
        routes.on("/_sim/script", methods: [.post], " " + Self.scriptBody) { request, _ in
            struct Body: Decodable {
                var path: String
                var script: Script
                init(from decoder: any Decoder) throws {
                    struct Path: Decodable { var path: String }
                    path = try Path(from: decoder).path
                    script = try Script(from: decoder)
                }
            }
            guard let body: Body = try await Self.decode(request), body.path.hasPrefix("/scripted/") else {
                return Self.expected(Self.scriptBody)
            }
            await simulator.setScript(path: body.path, body.script)
            return HTTPSupport.json(200, Self.ok)
        }
        routes.on("/_sim/clock", methods: [.post], " \(Self.clockBody) (the Date of scripted answers runs this many seconds ahead)") { request, _ in
            struct Body: Decodable { var offset: Int }
            guard let body: Body = try await Self.decode(request) else { return Self.expected(Self.clockBody) }
            await simulator.setClockOffset(seconds: body.offset)
            return HTTPSupport.json(200, Self.ok)
        }
        routes.on("/_sim/auth/expire", methods: [.post], " (the current access token of /auth/me stops working)") { _, _ in
            await simulator.expireAccessToken()
            return HTTPSupport.json(200, Self.ok)
        }
        routes.on("/_sim/auth", methods: [.get], " (how many tokens /oauth/token handed out)") { _, _ in
            HTTPSupport.json(200, obj(("refreshes", .int(await simulator.tokenRefreshCount()))).rendered)
        }
        routes.on("/_sim/files/{name}/change", methods: [.post], " (a new version of /files/{name})") { _, context in
            await simulator.changeFile(try context.parameters.require("name"))
            return HTTPSupport.json(200, Self.ok)
        }
        routes.on("/_sim/hn/lists/{list}", methods: [.post], " \(Self.hnListBody) (the list's ids from now on; open streams get a patch)") { request, context in
            struct Body: Decodable { var ids: [Int] }
            guard let body: Body = try await Self.decode(request) else { return Self.expected(Self.hnListBody) }
            let list = try context.parameters.require("list")
            guard simulator.setHackerNewsList(list, ids: body.ids) else {
                return HTTPSupport.controlError(404, "unknown list \(list)")
            }
            return HTTPSupport.json(200, Self.ok)
        }
        routes.on("/_sim/hn/streams/drop", methods: [.post], " (every open Hacker News event stream ends abruptly)") { _, _ in
            simulator.dropHackerNewsStreams()
            return HTTPSupport.json(200, Self.ok)
        }
        routes.on("/_sim/hn/streams/stall", methods: [.post], " \(Self.stallBody) (open streams fall silent, keep-alives too)") { request, _ in
            struct Body: Decodable { var stalled: Bool }
            guard let body: Body = try await Self.decode(request) else { return Self.expected(Self.stallBody) }
            simulator.stallHackerNewsStreams(body.stalled)
            return HTTPSupport.json(200, Self.ok)
        }
        routes.on("/_sim/hn/streams", methods: [.get], #" ({"open": <event streams open now>})"#) { _, _ in
            HTTPSupport.json(200, obj(("open", .int(simulator.openHackerNewsStreams()))).rendered)
        }
        routes.on("/_sim/routes", methods: [.get]) { _, _ in
            HTTPSupport.json(200, JSON.array(Simulator.routes.map(JSON.string)).rendered)
        }
    }

    /// `400 {"error": "expected <body>"}`.
    static func expected(_ body: String) -> Response {
        HTTPSupport.controlError(400, "expected " + body)
    }

    /// The JSON body as `T`, or `nil` when it is not one (at most 1 MiB is read).
    static func decode<T: Decodable>(_ request: Request) async throws -> T? {
        var request = request
        let buffer = try await request.collectBody(upTo: 1 << 20)
        return try? JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
    }

    /// A budget's spending as `GET /_sim/ratelimits` writes it.
    static func rateLimitJSON(_ usage: RateLimitUsage) -> JSON {
        obj(
            ("credential", .string(usage.credential)), ("resource", .string(usage.resource.rawValue)), ("limit", .int(usage.limit)),
            ("used", .int(usage.used)), ("remaining", .int(usage.remaining)), ("reset", .int(usage.reset)))
    }

    /// A request-log entry as `GET /_sim/log` writes it.
    static func logJSON(_ entry: LoggedRequest) -> JSON {
        obj(
            ("id", .int(entry.id)), ("method", .string(entry.method)), ("path", .string(entry.path)),
            ("headers", .object(entry.headers.sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value)) })),
            ("status", .int(entry.status)), ("finished", .bool(entry.finished)), ("aborted", .bool(entry.aborted)),
            ("bytesSent", .int(entry.bytesSent)), ("bytesReceived", .int(entry.bytesReceived)))
    }
}
