import CompressNIO
import Foundation
import Freshet
import FreshetTransports
import HTTPTypes
import NIOCore
import OpenAPIRuntime
import Testing

/// `ContentCoding`: which `Content-Encoding` values are decoded, and the streaming decoder on
/// bodies split at every boundary, in both `deflate` forms, empty, cut short, corrupt, and
/// followed by bytes that are not part of the stream.
@Suite("Content decoding")
struct ContentDecodingTests {
    /// 200 KiB of text that compresses well but not to nothing (so several windows come out).
    static let text: [UInt8] = Array((0..<20_000).map { "line \($0) of the body\n" }.joined().utf8.prefix(200 * 1024))

    static func encoded(_ bytes: [UInt8], _ algorithm: CompressionAlgorithm) throws -> [UInt8] {
        var buffer = ByteBuffer(bytes: bytes)
        return Array(try buffer.compress(with: algorithm).readableBytesView)
    }

    /// The decoded bytes of `encoded` sent in chunks of `size`, and the largest chunk decoded.
    static func decode(_ encoded: [UInt8], _ coding: ContentCoding, chunk size: Int, window: Int = 64 * 1024) async throws
        -> (bytes: [UInt8], largest: Int)
    {
        let chunks = stride(from: 0, to: encoded.count, by: size).map { ArraySlice(encoded[$0..<min($0 + size, encoded.count)]) }
        let body = HTTPBody(chunks.async, length: .unknown, iterationBehavior: .single)
        var bytes: [UInt8] = []
        var largest = 0
        for try await chunk in coding.decoding(body, window: window) {
            bytes += chunk
            largest = max(largest, chunk.count)
        }
        return (bytes, largest)
    }

    @Test("DecompressionMiddleware: the bytes a middleware beneath had decoded come up as that decoding; others are decoded")
    func judgedBodyKept() async throws {
        let one = try Self.encoded(Array("[1]".utf8), .gzip()), two = try Self.encoded(Array("[2]".utf8), .gzip())
        try #require(one.count == two.count)
        let head = HTTPResponse(status: .ok, headerFields: [.contentEncoding: "gzip", .contentType: "application/json"])
        // Beneath, a judge of the body (as the cache is) has `one` decoded, then hands up `bytes`.
        func send(handingUp bytes: [UInt8]) async throws -> (length: HTTPBody.Length?, text: String) {
            let request = HTTPRequest(method: .get, scheme: "http", authority: "example.com", path: "/")
            let (response, body) = try await DecompressionMiddleware().intercept(
                request, body: nil, baseURL: URL(string: "http://example.com")!, operationID: ""
            ) { _, _, _ in
                let judged = try await ContentDecoding.decoder?.decode(Data(one), fields: head.headerFields, limit: 1 << 20)
                #expect(judged == Data("[1]".utf8))
                return (head, HTTPBody(bytes))
            }
            #expect(response.headerFields[.contentEncoding] == nil)
            let decoded = try #require(body)
            return (decoded.length, String(decoding: try await Data(collecting: decoded, upTo: 1 << 20), as: UTF8.self))
        }
        let same = try await send(handingUp: one)
        #expect(same.length == .known(3), "decoded as read, the length would be unknown")
        #expect(same.text == "[1]")
        let other = try await send(handingUp: two)
        #expect(other.text == "[2]", "bytes of the same length that are not the judged ones")
    }

    @Test("Content-Encoding: one gzip, x-gzip or deflate is decoded; identity is no coding; br or two codings are left alone")
    func whichCodings() {
        func coding(_ values: String...) -> ContentCoding? {
            var fields = HTTPFields()
            for value in values { fields.append(HTTPField(name: .contentEncoding, value: value)) }
            return ContentCoding.single(in: fields)
        }
        #expect(coding("gzip") == .gzip)
        #expect(coding("X-Gzip") == .gzip)
        #expect(coding("deflate") == .deflate)
        #expect(coding("identity, gzip") == .gzip)
        #expect(coding() == nil)
        #expect(coding("identity") == nil)
        #expect(coding("br") == nil)
        #expect(coding("gzip, gzip") == nil)
        #expect(coding("gzip", "br") == nil)
    }

    @Test("gzip split at every size from 1 byte to whole comes out the same, in windows no larger than asked", arguments: [1, 7, 4096, 1 << 20])
    func gzipAcrossChunkBoundaries(chunk: Int) async throws {
        let encoded = try Self.encoded(Self.text, .gzip())
        let (bytes, largest) = try await Self.decode(encoded, .gzip, chunk: chunk, window: 16 * 1024)
        #expect(bytes == Self.text)
        #expect(largest <= 16 * 1024)
    }

    @Test("deflate: a zlib stream and a raw deflate stream both decode")
    func deflateBothForms() async throws {
        #expect(try await Self.decode(try Self.encoded(Self.text, .zlib()), .deflate, chunk: 1000).bytes == Self.text)
        #expect(try await Self.decode(try Self.encoded(Self.text, .deflate()), .deflate, chunk: 1).bytes == Self.text)
    }

    @Test("An empty body is empty; bytes after the end of the stream are ignored")
    func emptyAndTrailing() async throws {
        #expect(try await Self.decode([], .gzip, chunk: 1).bytes.isEmpty)
        let encoded = try Self.encoded(Self.text, .gzip()) + Array("trailing junk".utf8)
        #expect(try await Self.decode(encoded, .gzip, chunk: 333).bytes == Self.text)
    }

    @Test("A stream cut short fails: the stream ends early", arguments: [1, 8, 100])
    func truncated(cut: Int) async throws {
        let encoded = try Self.encoded(Self.text, .gzip())
        await #expect(throws: ContentDecodingFailure(coding: "gzip", reason: "the stream ends early")) {
            _ = try await Self.decode(Array(encoded.dropLast(cut)), .gzip, chunk: 4096)
        }
    }

    @Test("Corrupt data fails: the data is corrupt")
    func corrupt() async throws {
        var encoded = try Self.encoded(Self.text, .gzip())
        for i in 10..<40 { encoded[i] = 0xFF }
        await #expect(throws: ContentDecodingFailure(coding: "gzip", reason: "the data is corrupt")) {
            _ = try await Self.decode(encoded, .gzip, chunk: 4096)
        }
    }

    @Test("decode(_:limit:), a whole buffer without a stream, agrees with the stream: both deflate forms, empty, trailing bytes, cut short, corrupt")
    func wholeAgreesWithStream() async throws {
        let gzip = try Self.encoded(Self.text, .gzip())
        let limit = Self.text.count
        #expect(try await ContentCoding.deflate.decode(try Self.encoded(Self.text, .zlib()), limit: limit) == Self.text)
        #expect(try await ContentCoding.deflate.decode(try Self.encoded(Self.text, .deflate()), limit: limit) == Self.text)
        #expect(try await ContentCoding.gzip.decode([UInt8](), limit: limit).isEmpty)
        #expect(try await ContentCoding.gzip.decode(gzip + Array("trailing junk".utf8), limit: limit) == Self.text)
        for cut in [1, 8, 100] {
            await #expect(throws: ContentDecodingFailure(coding: "gzip", reason: "the stream ends early")) {
                _ = try await ContentCoding.gzip.decode(Array(gzip.dropLast(cut)), limit: limit)
            }
        }
        var corrupt = gzip
        for i in 10..<40 { corrupt[i] = 0xFF }
        await #expect(throws: ContentDecodingFailure(coding: "gzip", reason: "the data is corrupt")) {
            _ = try await ContentCoding.gzip.decode(corrupt, limit: limit)
        }
    }

    @Test("decode(_:limit:) refuses what decodes past the limit")
    func wholeWithLimit() async throws {
        let encoded = try Self.encoded(Self.text, .gzip())
        #expect(try await ContentCoding.gzip.decode(encoded, limit: Self.text.count) == Self.text)
        await #expect(throws: ContentDecodingFailure.self) {
            _ = try await ContentCoding.gzip.decode(encoded, limit: Self.text.count - 1)
        }
    }
}

extension Array where Element: Sendable {
    /// The elements as an async sequence.
    fileprivate var async: AsyncStream<Element> {
        AsyncStream { continuation in
            for element in self { continuation.yield(element) }
            continuation.finish()
        }
    }
}
