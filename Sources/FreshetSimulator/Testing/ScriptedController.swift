import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// A resource whose answer a test scripts: status, header fields (in order, repeats allowed) and
/// body, served at `/scripted/…` with real conditional-request handling, so HTTP-cache behaviour
/// can be driven header by header.
public struct Script: Codable, Equatable, Sendable {
    /// The status of a full answer (default 200).
    public var status: Int
    /// Header fields as `[name, value]` pairs, in order.
    public var headers: [[String]]
    /// The body of a full answer.
    public var body: String
    /// Header fields added to the answer of an unsafe method (POST, PUT, DELETE, PATCH),
    /// which is `200` with an empty body — e.g. `Location` or `Content-Location`.
    public var unsafeHeaders: [[String]]
    /// When true, a `GET` that carries validators gets a full answer even if they match.
    public var ignoreValidators: Bool

    /// Creates a script.
    public init(status: Int = 200, headers: [[String]] = [], body: String = "", unsafeHeaders: [[String]] = [],
                ignoreValidators: Bool = false) {
        self.status = status
        self.headers = headers
        self.body = body
        self.unsafeHeaders = unsafeHeaders
        self.ignoreValidators = ignoreValidators
    }

    enum CodingKeys: String, CodingKey { case status, headers, body, unsafeHeaders, ignoreValidators }

    /// Decodes a script; everything but nothing is optional.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        status = try c.decodeIfPresent(Int.self, forKey: .status) ?? 200
        headers = try c.decodeIfPresent([[String]].self, forKey: .headers) ?? []
        body = try c.decodeIfPresent(String.self, forKey: .body) ?? ""
        unsafeHeaders = try c.decodeIfPresent([[String]].self, forKey: .unsafeHeaders) ?? []
        ignoreValidators = try c.decodeIfPresent(Bool.self, forKey: .ignoreValidators) ?? false
    }

    func value(_ name: String) -> String? {
        headers.first { $0.count == 2 && $0[0].lowercased() == name.lowercased() }?[1]
    }
}

extension Simulator {
    /// Scripts `path` (which must start with `/scripted/`), replacing any earlier script
    /// (`POST /_sim/script {"path": "/scripted/a", "status": 200, "headers": [["Cache-Control", "max-age=60"]], "body": "…"}`).
    public func setScript(path: String, _ script: Script) async {
        state.withLock { $0.scripts[path] = script }
    }

    /// Moves the simulator's clock for scripted resources: their date (unless scripted) is the
    /// real time plus `seconds` (`POST /_sim/clock {"offset": 30}`), so a test that advances its
    /// client's clock can keep the server's date in step.
    ///
    /// Hummingbird always writes its own `Date` header, so a scripted answer carries the date it
    /// means in `X-Sim-Date`; a test transport copies that into `Date`.
    public func setClockOffset(seconds: Int) async {
        state.withLock { $0.clockOffset = seconds }
    }

    /// `X-Sim-Date`: the `Date` a scripted answer means (see ``setClockOffset(seconds:)``).
    static let simDate = HTTPField.Name("X-Sim-Date")!
}

/// `/scripted/…`, any method: answers from the script set for the path (`POST /_sim/script`).
struct ScriptedController {
    let simulator: Simulator

    func addRoutes(to routes: SimRoutes) {
        routes.any("/scripted", use: scripted)
        routes.any("/scripted/**", " (answers from its script, with 304 on matching validators)", use: scripted)
    }

    /// Answers `/scripted/…` from its script: `304` without a body when the request's
    /// `If-None-Match` matches the scripted `ETag` (weak comparison) or its `If-Modified-Since` is
    /// not older than the scripted `Last-Modified`; the scripted answer otherwise; 404 if unscripted.
    /// Unsafe methods get `200` with an empty body and the script's ``Script/unsafeHeaders``.
    @Sendable func scripted(_ request: Request, context: SimRequestContext) -> Response {
        let path = request.uri.path
        guard let script = simulator.state.withLock({ $0.scripts[path] }) else {
            return HTTPSupport.json(404, obj(("message", .string("Not Found"))).rendered)
        }
        let offset = simulator.state.withLock { $0.clockOffset }
        func fields(_ pairs: [[String]]) -> HTTPFields {
            var fields = HTTPFields()
            let scriptedDate = pairs.first { $0.count == 2 && $0[0].lowercased() == "date" }?[1]
            fields[Simulator.simDate] = scriptedDate ?? SimDate.rfc1123(Simulator.now() + offset)
            for pair in pairs where pair.count == 2 {
                if let name = HTTPField.Name(pair[0]) { fields.append(HTTPField(name: name, value: pair[1])) }
            }
            return fields
        }
        let isSafe = request.method == .get || request.method == .head
        guard isSafe else {
            return HTTPSupport.empty(200, headers: fields(script.unsafeHeaders))
        }
        var notModified = false
        if !script.ignoreValidators {
            if let inm = request.headers[.ifNoneMatch], let etag = script.value("ETag") {
                notModified = HTTPSupport.ifNoneMatch(inm, matches: etag)
            } else if let ims = request.headers[.ifModifiedSince].flatMap(SimDate.parseHTTPDate),
                      let lastModified = script.value("Last-Modified").flatMap(SimDate.parseHTTPDate) {
                notModified = lastModified <= ims
            }
        }
        if notModified {
            var headers = fields(script.headers)
            headers[.contentLength] = nil
            headers[.contentType] = nil
            return HTTPSupport.empty(304, headers: headers)
        }
        var headers = fields(script.headers)
        headers[.contentLength] = String(script.body.utf8.count)
        return Response(status: HTTPSupport.status(script.status), headers: headers,
                        body: ResponseBody(byteBuffer: ByteBuffer(string: script.body)))
    }
}
