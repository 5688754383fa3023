import CompressNIO
import Foundation
import HTTPTypes
import Hummingbird

/// Decoded query items, plus the raw text for rebuilding pagination links.
struct QueryItems: Sendable {
    let raw: String
    let items: [(name: String, value: String)]

    init(_ raw: String?) {
        self.raw = raw ?? ""
        var items: [(String, String)] = []
        for part in self.raw.split(separator: "&", omittingEmptySubsequences: true) {
            let kv = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = Self.decode(String(kv[0]))
            let value = kv.count > 1 ? Self.decode(String(kv[1])) : ""
            items.append((name, value))
        }
        self.items = items
    }

    static func decode(_ s: String) -> String {
        let spaced = s.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }

    subscript(_ name: String) -> String? {
        items.first { $0.name == name }?.value
    }

    func int(_ name: String) -> Int? {
        self[name].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// The raw query with `page` replaced by `page` (appended last, as GitHub does).
    func replacingPage(_ page: Int) -> String {
        var parts = raw.split(separator: "&", omittingEmptySubsequences: true).filter {
            $0.split(separator: "=", maxSplits: 1).first.map { Self.decode(String($0)) } != "page"
        }.map(String.init)
        parts.append("page=\(page)")
        return parts.joined(separator: "&")
    }
}

extension HTTPFields {
    mutating func set(_ name: String, _ value: String) {
        if let n = HTTPFields.Element.Name(name) { self[n] = value }
    }

    func value(_ name: String) -> String? {
        HTTPFields.Element.Name(name).flatMap { self[$0] }
    }
}

extension SimRequestContext {
    /// The path parameter `name`, percent-decoded (`""` when the route has none).
    func parameter(_ name: String) -> String {
        let raw = parameters.get(name) ?? ""
        return raw.removingPercentEncoding ?? raw
    }
}

enum HTTPSupport {
    static func status(_ code: Int) -> HTTPResponse.Status {
        let phrases: [Int: String] = [
            200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 301: "Moved Permanently", 302: "Found",
            304: "Not Modified", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 408: "Request Timeout", 409: "Conflict", 410: "Gone", 413: "Content Too Large",
            422: "Unprocessable Entity", 429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
            503: "Service Unavailable", 504: "Gateway Timeout",
        ]
        return HTTPResponse.Status(code: code, reasonPhrase: phrases[code] ?? "")
    }

    static func json(
        _ code: Int, _ body: String, headers: HTTPFields = [:],
        contentType: String = "application/json; charset=utf-8"
    ) -> Response {
        var h = headers
        h[.contentType] = contentType
        return Response(status: status(code), headers: h, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }

    /// A response without a body and without `Content-Length` (304).
    static func empty(_ code: Int, headers: HTTPFields) -> Response {
        var response = Response(status: status(code), headers: headers, body: ResponseBody())
        response.headers[.contentLength] = nil
        return response
    }

    static func controlError(_ code: Int, _ message: String) -> Response {
        json(code, obj(("error", .string(message))).rendered)
    }

    /// Splits a raw path into percent-decoded segments (empty ones dropped).
    static func segments(_ path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map {
            String($0).removingPercentEncoding ?? String($0)
        }
    }

    /// Weak comparison of `If-None-Match` against `etag` (handles lists and `*`).
    static func ifNoneMatch(_ header: String, matches etag: String) -> Bool {
        let opaque = { (tag: String) -> String in
            var t = tag.trimmingCharacters(in: .whitespaces)
            if t.hasPrefix("W/") || t.hasPrefix("w/") { t.removeFirst(2) }
            return t
        }
        let target = opaque(etag)
        var tags: [String] = []
        var current = ""
        var inQuotes = false
        for c in header {
            if c == "\"" { inQuotes.toggle() }
            if c == "," && !inQuotes {
                tags.append(current)
                current = ""
            } else {
                current.append(c)
            }
        }
        tags.append(current)
        for tag in tags {
            let t = tag.trimmingCharacters(in: .whitespaces)
            if t == "*" || (!t.isEmpty && opaque(t) == target) { return true }
        }
        return false
    }

    // MARK: gzip

    /// Whether `Accept-Encoding` (every line of it) accepts gzip, as RFC 9110 §12.5.3 reads it:
    /// `gzip` or `x-gzip` with a q-value above 0, or, when neither is named, `*` above 0. No field
    /// (or an empty one) asks for identity; `gzip;q=0` refuses gzip whatever `*` says.
    static func acceptsGzip(_ headers: HTTPFields) -> Bool {
        var named: Double?
        var wildcard: Double?
        for line in headers[values: .acceptEncoding] {
            for element in line.split(separator: ",") {
                let parameters = element.split(separator: ";")
                guard let coding = parameters.first?.trimmingCharacters(in: .whitespaces).lowercased(), !coding.isEmpty else { continue }
                var q = 1.0
                for parameter in parameters.dropFirst() {
                    let pair = parameter.split(separator: "=", maxSplits: 1)
                    guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "q" else { continue }
                    // A q-value that is not a number in 0...1 accepts nothing.
                    q = Double(pair[1].trimmingCharacters(in: .whitespaces)).flatMap { (0...1).contains($0) ? $0 : nil } ?? 0
                }
                switch coding {
                case "gzip", "x-gzip": named = max(named ?? 0, q)
                case "*": wildcard = max(wildcard ?? 0, q)
                default: break
                }
            }
        }
        if let named { return named > 0 }
        return (wildcard ?? 0) > 0
    }

    /// `body` gzip-encoded (zlib through CompressNIO; deterministic: no name, no time).
    static func gzip(_ body: ByteBuffer) throws -> ByteBuffer {
        var input = body
        return try input.compress(with: .gzip())
    }

    /// A body that claims to be gzip and is not: a valid gzip header (so it is recognised as
    /// gzip), then `0xFF` bytes where the deflate stream should be (a block of the reserved
    /// type 3, which every inflater refuses), as long as the real encoding of `body`.
    static func corruptGzip(_ body: ByteBuffer) throws -> ByteBuffer {
        let valid = try gzip(body)
        var corrupt = ByteBuffer()
        corrupt.writeBytes(valid.readableBytesView.prefix(10))
        corrupt.writeRepeatingByte(0xFF, count: max(valid.readableBytes - 10, 8))
        return corrupt
    }

    /// A chunked body that is a gzip stream of `decodedSize` zero bytes (at most 1 TiB) without its
    /// trailer: a gzip header and a first MiB of deflate output, then the next MiB's output again
    /// and again (each MiB of zeros after the first encodes to the same bytes, about 1 KiB), in
    /// 64 KiB writes. Aborted on shutdown.
    static func gzipBomb(decodedSize: Int) throws -> ResponseBody {
        let mebibyte = 1 << 20
        let blocks = max(min(decodedSize, 1 << 40) / mebibyte, 1)
        let compressor = try ZlibCompressor(algorithm: .gzip)
        func block() throws -> ByteBuffer {
            var zeros = ByteBuffer(repeating: 0, count: mebibyte)
            var output = ByteBufferAllocator().buffer(capacity: 64 * 1024)
            try compressor.deflate(from: &zeros, to: &output, flush: .sync)
            return output
        }
        let first = try block()
        let next = try block()
        let perWrite = max(64 * 1024 / max(next.readableBytes, 1), 1)
        var repeated = ByteBuffer()
        for _ in 0..<perWrite { repeated.writeImmutableBuffer(next) }
        let batch = repeated
        return ResponseBody { writer in
            try await writer.write(first)
            var sent = 1
            while sent < blocks {
                let count = min(perWrite, blocks - sent)
                try await writer.write(count == perWrite ? batch : batch.getSlice(at: 0, length: count * next.readableBytes)!)
                sent += count
            }
            try await writer.finish(nil)
        }
    }

    /// Adds `Vary: Accept-Encoding` unless a `Vary` line already names it (or is `*`).
    static func varyOnAcceptEncoding(_ headers: inout HTTPFields) {
        let named = headers[values: .vary].contains { line in
            line.split(separator: ",").contains {
                let token = $0.trimmingCharacters(in: .whitespaces).lowercased()
                return token == "accept-encoding" || token == "*"
            }
        }
        if !named { headers.append(HTTPField(name: .vary, value: "Accept-Encoding")) }
    }

    /// A JSON body of exactly `size` bytes: `{"pad":"xxx…"}` (or `{}` plus spaces when
    /// shorter than 10 bytes); `byte(at:)` produces it without materialising it.
    struct PaddedObject {
        let size: Int
        static let prefix = Array("{\"pad\":\"".utf8)
        static let suffix = Array("\"}".utf8)

        func byte(at i: Int) -> UInt8 {
            if size >= 10 {
                if i < Self.prefix.count { return Self.prefix[i] }
                if i >= size - 2 { return Self.suffix[i - (size - 2)] }
                return UInt8(ascii: "x")
            }
            if size == 1 { return UInt8(ascii: "0") }
            if i == 0 { return UInt8(ascii: "{") }
            if i == 1 { return UInt8(ascii: "}") }
            return UInt8(ascii: " ")
        }

        func chunk(from start: Int, count: Int) -> ByteBuffer {
            var buffer = ByteBuffer()
            buffer.reserveCapacity(count)
            if size >= 10 && start >= Self.prefix.count && start + count <= size - 2 {
                buffer.writeRepeatingByte(UInt8(ascii: "x"), count: count)
            } else {
                for i in start..<(start + count) { buffer.writeInteger(byte(at: i)) }
            }
            return buffer
        }
    }

    /// A JSON string of exactly `size` bytes: `"xxx…"`.
    struct PaddedString {
        let size: Int

        func chunk(from start: Int, count: Int) -> ByteBuffer {
            var buffer = ByteBuffer()
            buffer.reserveCapacity(count)
            for i in start..<(start + count) {
                let b: UInt8
                if size == 1 {
                    b = UInt8(ascii: "0")
                } else if i == 0 || i == size - 1 {
                    b = UInt8(ascii: "\"")
                } else {
                    b = UInt8(ascii: "x")
                }
                buffer.writeInteger(b)
            }
            return buffer
        }
    }
}
