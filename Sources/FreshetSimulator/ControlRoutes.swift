import Foundation
import Hummingbird

extension Simulator {
    /// `/_sim/…` control endpoints (not recorded in the request log).
    func control(_ request: Request, path: String) async throws -> Response {
        let segments = HTTPSupport.segments(path)
        guard segments.count == 2 else { return HTTPSupport.controlError(404, "unknown control endpoint \(path)") }
        let method = request.method
        let ok = obj(("ok", true)).rendered

        switch (segments[1], method) {
        case ("log", .get):
            let log = await requestLog()
            return HTTPSupport.json(200, JSON.array(log.map(Self.logJSON)).rendered)
        case ("log", .delete):
            await resetLog()
            return HTTPSupport.json(200, ok)
        case ("stats", .get):
            let s = await stats()
            return HTTPSupport.json(200, obj(("requests", .int(s.requests)), ("inFlight", .int(s.inFlight)), ("maxInFlight", .int(s.maxInFlight))).rendered)

        case ("latency", .post):
            struct Body: Decodable { var route: String?; var ms: Int }
            guard let body: Body = try await decode(request) else { return HTTPSupport.controlError(400, "expected {\"route\":\"/v0/item\",\"ms\":50}") }
            await setLatency(route: body.route ?? "", milliseconds: body.ms)
            return HTTPSupport.json(200, ok)

        case ("events", .post):
            struct Body: Decodable { var repo: String; var count: Int? }
            guard let body: Body = try await decode(request) else { return HTTPSupport.controlError(400, "expected {\"repo\":\"owner/name\",\"count\":3}") }
            guard await addEvents(repo: body.repo, count: body.count ?? 1) else {
                return HTTPSupport.controlError(404, "unknown repository \(body.repo)")
            }
            return HTTPSupport.json(200, ok)

        case ("faults", .post):
            guard let fault: Fault = try await decode(request) else {
                return HTTPSupport.controlError(400, "expected {\"route\":\"/path\",\"status\":503,\"times\":1,\"headers\":{},\"body\":\"…\"}")
            }
            await injectFaults(fault)
            return HTTPSupport.json(200, ok)
        case ("faults", .delete):
            await clearFaults()
            return HTTPSupport.json(200, ok)
        case ("fault-mode", .post), ("fault-mode", .delete):
            return try await faultModeControl(request)

        case ("ratelimit", .post):
            struct Body: Decodable { var resource: String?; var remaining: Int; var reset: Int?; var authenticated: Bool? }
            guard let body: Body = try await decode(request),
                let resource = RateLimitResource(rawValue: body.resource ?? "core")
            else {
                return HTTPSupport.controlError(400, "expected {\"resource\":\"core|search\",\"remaining\":0,\"reset\":<epoch>}")
            }
            await setRateLimit(resource: resource, remaining: body.remaining, reset: body.reset, authenticated: body.authenticated)
            return HTTPSupport.json(200, ok)

        case ("script", .post):
            struct Body: Decodable {
                var path: String
                var script: Script
                init(from decoder: any Decoder) throws {
                    struct Path: Decodable { var path: String }
                    path = try Path(from: decoder).path
                    script = try Script(from: decoder)
                }
            }
            guard let body: Body = try await decode(request), body.path.hasPrefix("/scripted/") else {
                return HTTPSupport.controlError(400, "expected {\"path\":\"/scripted/…\",\"status\":200,\"headers\":[[\"Name\",\"value\"]],\"body\":\"…\"}")
            }
            await setScript(path: body.path, body.script)
            return HTTPSupport.json(200, ok)

        case ("clock", .post):
            struct Body: Decodable { var offset: Int }
            guard let body: Body = try await decode(request) else {
                return HTTPSupport.controlError(400, "expected {\"offset\":30}")
            }
            await setClockOffset(seconds: body.offset)
            return HTTPSupport.json(200, ok)

        case ("routes", .get):
            return HTTPSupport.json(200, JSON.array(Self.routes.map(JSON.string)).rendered)

        default:
            return HTTPSupport.controlError(404, "unknown control endpoint \(method.rawValue) \(path)")
        }
    }

    func decode<T: Decodable>(_ request: Request) async throws -> T? {
        var request = request
        let buffer = try await request.collectBody(upTo: 1 << 20)
        return try? JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
    }

    static func logJSON(_ entry: LoggedRequest) -> JSON {
        obj(
            ("id", .int(entry.id)), ("method", .string(entry.method)), ("path", .string(entry.path)),
            ("headers", .object(entry.headers.sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value)) })),
            ("status", .int(entry.status)), ("finished", .bool(entry.finished)), ("aborted", .bool(entry.aborted)),
            ("bytesSent", .int(entry.bytesSent)))
    }
}
