import Crypto
import Foundation
import Hummingbird
import MultipartKit
import NIOCore
import Synchronization

/// Routes for the client's transfers and authentication:
///
/// - `POST|PUT /upload`: reads the body as it streams in and answers what arrived — its size,
///   SHA-256, framing, and for `multipart/form-data` each part (parsed by MultipartKit, an
///   implementation independent of the client's).
/// - `GET /files/{name}?size=N`: a large generated file (default 16 MiB) with a strong `ETag`,
///   `Last-Modified` and single byte ranges (`Range`, `If-Range`, `416`). `POST
///   /_sim/files/{name}/change` makes a new version (new bytes, new validators).
///   `?holdAt=K` stops after `K` bytes while a hold covers `/files/{name}#body`.
/// - `POST /oauth/token` and `GET /auth/me`: an access token that `POST /_sim/auth/expire`
///   invalidates; `/auth/me` answers `401` with `WWW-Authenticate` to any other token, and the
///   token endpoint hands out the current one for the refresh token ``Simulator/refreshToken``.
struct TransfersController {
    let simulator: Simulator

    func addRoutes(to routes: SimRoutes) {
        routes.on("/upload", methods: [.post, .put], " any body (multipart/form-data is parsed)", use: upload)
        routes.get("/files/{name}", "?size=N[&holdAt=K] (Range, If-Range)", use: file)
        routes.on("/oauth/token", methods: [.post], " grant_type=refresh_token&refresh_token=…", use: token)
        routes.get("/auth/me", "Authorization: Bearer <token from /oauth/token>", use: me)
        routes.on("/auth/me", methods: [.post], " (the body is read, then the same as GET)") { request, context in
            var request = request
            _ = try await request.collectBody(upTo: 1 << 20)
            return try await me(request, context: context)
        }
    }

    // MARK: - Upload echo

    /// `POST /upload`: the body, read as it streams in, described as JSON.
    @Sendable func upload(_ request: Request, context: SimRequestContext) async throws -> Response {
        let contentType = request.headers[.contentType] ?? ""
        var whole = SHA256()
        var total = 0
        var parser: MultipartParser?
        let parts = PartCollector()
        if contentType.lowercased().hasPrefix("multipart/form-data"),
           let boundary = Self.parameter("boundary", in: contentType) {
            let p = MultipartParser(boundary: boundary)
            p.onHeader = { name, value in parts.header(name, value) }
            p.onBody = { buffer in parts.body(buffer) }
            p.onPartComplete = { parts.complete() }
            parser = p
        }
        do {
            for try await buffer in request.body {
                total += buffer.readableBytes
                whole.update(data: buffer.readableBytesView)
                try parser?.execute(buffer)
            }
        } catch {
            return HTTPSupport.json(400, obj(("error", .string("the multipart body does not parse: \(error)"))).rendered)
        }
        var fields: [(String, JSON)] = [
            ("method", .string(request.method.rawValue)),
            ("contentType", contentType.isEmpty ? .null : .string(contentType)),
            ("contentLength", request.headers[.contentLength].map(JSON.string) ?? .null),
            ("transferEncoding", request.headers[.transferEncoding].map(JSON.string) ?? .null),
            ("bytes", .int(total)),
            ("sha256", .string(Self.hex(whole.finalize()))),
        ]
        if parser != nil {
            fields.append(("parts", .array(parts.parts.map(\.json))))
        }
        return HTTPSupport.json(200, JSON.object(fields).rendered)
    }

    /// A `key=value` parameter of a header value (`boundary` of a `Content-Type`), unquoted.
    static func parameter(_ name: String, in value: String) -> String? {
        for piece in value.split(separator: ";").dropFirst() {
            let pair = piece.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[0].lowercased() == name else { continue }
            var v = pair[1]
            if v.hasPrefix("\""), v.hasSuffix("\""), v.count >= 2 { v = String(v.dropFirst().dropLast()) }
            return v
        }
        return nil
    }

    static func hex(_ digest: some Sequence<UInt8>) -> String {
        digest.map { String(format: "%02x", $0) }.joined()
    }

    /// Collects what MultipartKit's parser reports, part by part (it calls back on one task).
    final class PartCollector: @unchecked Sendable {
        struct Part {
            var headers: [(String, String)] = []
            var bytes = 0
            var hash = SHA256()
            var prefix = Data()

            var json: JSON {
                let disposition = headers.first { $0.0.lowercased() == "content-disposition" }?.1 ?? ""
                let text = String(data: prefix, encoding: .utf8)
                return obj(
                    ("headers", .object(headers.map { ($0.0.lowercased(), JSON.string($0.1)) })),
                    ("name", TransfersController.parameter("name", in: disposition).map(JSON.string) ?? .null),
                    ("filename", TransfersController.parameter("filename", in: disposition).map(JSON.string) ?? .null),
                    ("bytes", .int(bytes)),
                    ("sha256", .string(TransfersController.hex(hash.finalize()))),
                    ("text", bytes <= 1024 ? (text.map(JSON.string) ?? .null) : .null))
            }
        }

        private(set) var parts: [Part] = []
        private var current = Part()

        func header(_ name: String, _ value: String) { current.headers.append((name, value)) }

        func body(_ buffer: ByteBuffer) {
            current.bytes += buffer.readableBytes
            current.hash.update(data: buffer.readableBytesView)
            if current.prefix.count <= 1024 { current.prefix.append(contentsOf: buffer.readableBytesView.prefix(1025 - current.prefix.count)) }
        }

        func complete() {
            parts.append(current)
            current = Part()
        }
    }

    // MARK: - Large ranged download

    /// `GET /files/{name}?size=N`: the generated file, whole or one byte range of it.
    @Sendable func file(_ request: Request, context: SimRequestContext) async throws -> Response {
        let name = try context.parameters.require("name")
        let query = QueryItems(request.uri.query)
        let size = min(max(query.int("size") ?? 16 * 1024 * 1024, 0), 1 << 30)
        let version = simulator.state.withLock { $0.fileVersions[name, default: 0] }
        let file = SimulatedFile(name: name, version: version, size: size)
        var headers = HTTPFields()
        headers[.contentType] = "application/octet-stream"
        headers[.eTag] = file.etag
        headers[.lastModified] = file.lastModified
        headers[.acceptRanges] = "bytes"
        headers[.cacheControl] = "no-cache"

        var range = 0..<size
        var status = 200
        if let value = request.headers[.range] {
            // `If-Range` (RFC 9110 §13.1.5): the range only while the validator still matches.
            let validatorMatches = request.headers[.ifRange].map { $0 == file.etag || $0 == file.lastModified } ?? true
            if validatorMatches {
                switch Self.singleRange(value, size: size) {
                case .some(.some(let r)):
                    range = r
                    status = 206
                    headers[.contentRange] = "bytes \(r.lowerBound)-\(r.upperBound - 1)/\(size)"
                case .some(.none):
                    headers[.contentRange] = "bytes */\(size)"
                    return HTTPSupport.json(416, obj(("error", "range not satisfiable")).rendered, headers: headers)
                case .none:
                    break // not a single byte range: the whole file
                }
            }
        }
        let holdAt = query.int("holdAt")
        let sent = range
        let holdKey = "/files/\(name)#body"
        let body = ResponseBody(contentLength: sent.count) { [simulator] writer in
            var offset = sent.lowerBound
            let step = 64 * 1024
            while offset < sent.upperBound {
                if simulator.isShuttingDown { throw StreamAborted() }
                var n = min(step, sent.upperBound - offset)
                if let holdAt, offset - sent.lowerBound < holdAt { n = min(n, sent.lowerBound + holdAt - offset) }
                try await writer.write(ByteBuffer(bytes: file.bytes(offset..<(offset + n))))
                offset += n
                if let holdAt, offset - sent.lowerBound == holdAt {
                    let deadline = ContinuousClock.now + .seconds(120)
                    while simulator.state.withLock({ $0.isHeld(holdKey) }), ContinuousClock.now < deadline {
                        if simulator.isShuttingDown { throw StreamAborted() }
                        try await Task.sleep(for: .milliseconds(10))
                    }
                }
            }
            try await writer.finish(nil)
        }
        return Response(status: HTTPSupport.status(status), headers: headers, body: body)
    }

    /// One byte range of a `Range` value: `nil` when it is not a single `bytes` range (the whole
    /// file is sent), `.some(nil)` when it cannot be satisfied (`416`).
    static func singleRange(_ value: String, size: Int) -> Range<Int>?? {
        let v = value.trimmingCharacters(in: .whitespaces)
        guard v.lowercased().hasPrefix("bytes="), !v.contains(",") else { return nil }
        let spec = v.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard spec.count == 2 else { return nil }
        if spec[0].isEmpty {
            guard let suffix = Int(spec[1]) else { return nil }
            return suffix > 0 && size > 0 ? .some(max(0, size - suffix)..<size) : .some(nil)
        }
        guard let first = Int(spec[0]) else { return nil }
        let last = spec[1].isEmpty ? size - 1 : (Int(spec[1]) ?? -1)
        guard last >= first || spec[1].isEmpty else { return nil }
        guard first < size else { return .some(nil) }
        return .some(first..<(min(last, size - 1) + 1))
    }

    // MARK: - Token refresh

    /// `POST /oauth/token`: the current access token for the right refresh token.
    @Sendable func token(_ request: Request, context: SimRequestContext) async throws -> Response {
        var request = request
        let body = String(buffer: try await request.collectBody(upTo: 64 * 1024))
        let form = QueryItems(body)
        guard form["grant_type"] == "refresh_token", form["refresh_token"] == Simulator.refreshToken else {
            return HTTPSupport.json(400, obj(("error", "invalid_grant"),
                                             ("error_description", "the refresh token is not valid")).rendered)
        }
        let token = simulator.state.withLock { state -> String in
            state.authRefreshes += 1
            return Simulator.accessToken(generation: state.authGeneration)
        }
        return HTTPSupport.json(200, obj(("access_token", .string(token)), ("token_type", "bearer"),
                                         ("expires_in", 3600)).rendered, headers: [.cacheControl: "no-store"])
    }

    /// `GET /auth/me`: `200` for the current token, `401` with `WWW-Authenticate` otherwise.
    @Sendable func me(_ request: Request, context: SimRequestContext) async throws -> Response {
        let current = simulator.state.withLock { Simulator.accessToken(generation: $0.authGeneration) }
        guard request.headers[.authorization] == "Bearer " + current else {
            var headers = HTTPFields()
            headers[.wwwAuthenticate] = #"Bearer realm="sim", error="invalid_token""#
            return HTTPSupport.json(401, obj(("message", "Bad credentials")).rendered, headers: headers)
        }
        return HTTPSupport.json(200, obj(("login", "octocat")).rendered, headers: [.cacheControl: "private, no-store"])
    }
}

/// A generated file of the simulator (`GET /files/{name}`): its bytes are a pure function of
/// the name, the version and the offset, so any range is made without the rest.
public struct SimulatedFile: Sendable {
    /// The file's name.
    public var name: String
    /// Its version: `POST /_sim/files/{name}/change` adds one.
    public var version: Int
    /// Its size in bytes.
    public var size: Int

    /// Describes a generated file.
    public init(name: String, version: Int, size: Int) {
        self.name = name
        self.version = version
        self.size = size
    }

    /// The strong entity tag of this version and size.
    public var etag: String { "\"\(name)-v\(version)-\(size)\"" }

    /// `Last-Modified` of this version (a day apart per version).
    public var lastModified: String {
        SimDate.rfc1123(1_700_000_000 + version * 86_400)
    }

    /// The bytes of `range`.
    public func bytes(_ range: Range<Int>) -> [UInt8] {
        // Word n (8 bytes) is SplitMix64's output for the state seed + n: any range is made
        // without the bytes before it.
        let seed = Hashing.fnv1a64(name) ^ (UInt64(version) &* 0x9E37_79B9_7F4A_7C15)
        var out = [UInt8]()
        out.reserveCapacity(range.count)
        var offset = range.lowerBound
        while offset < range.upperBound {
            var z = seed &+ UInt64(offset / 8) &* 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            let start = offset % 8
            let end = min(8, start + (range.upperBound - offset))
            for i in start..<end { out.append(UInt8(truncatingIfNeeded: z >> (8 * UInt64(i)))) }
            offset += end - start
        }
        return out
    }
}

extension Simulator {
    /// The refresh token `POST /oauth/token` accepts (a fixture, not a secret).
    public static let refreshToken = "sim-refresh-token"

    /// The access token of a generation: only the current generation's is accepted.
    public static func accessToken(generation: Int) -> String { "sim-access-\(generation)" }

    /// Invalidates the current access token (`POST /_sim/auth/expire`); the token endpoint then
    /// hands out the next one.
    public func expireAccessToken() async {
        state.withLock { $0.authGeneration += 1 }
    }

    /// How many tokens `POST /oauth/token` has handed out.
    public func tokenRefreshCount() async -> Int {
        state.withLock { $0.authRefreshes }
    }

    /// Makes a new version of `/files/{name}` (`POST /_sim/files/{name}/change`): new bytes, `ETag`
    /// and `Last-Modified`.
    public func changeFile(_ name: String) async {
        state.withLock { $0.fileVersions[name, default: 0] += 1 }
    }

    /// The current version of `/files/{name}`.
    public func fileVersion(_ name: String) async -> Int {
        state.withLock { $0.fileVersions[name, default: 0] }
    }
}
