import Freshet
@testable import FreshetTransports
import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

/// A loop route's request heads written as bytes below NIO's encoder, and the `304`s to
/// conditional ones read without NIO's decoder (`HTTP1RawExchange`, `NotModifiedHead`): what NIO's
/// codec would make of the same bytes, or NIO's codec itself.
@Suite("HTTP/1 exchanges as bytes: request heads, and 304s read whole")
struct HTTP1RawExchangeTests {
    static func read(_ text: String) -> NotModifiedHead.Reading {
        Array(text.utf8).withUnsafeBytes { NotModifiedHead.read($0) }
    }

    static func head(_ text: String) -> NotModifiedHead? {
        if case .head(let head) = read(text) { return head }
        return nil
    }

    static func isIncomplete(_ text: String) -> Bool {
        if case .incomplete = read(text) { return true }
        return false
    }

    static func isOther(_ text: String) -> Bool {
        if case .other = read(text) { return true }
        return false
    }

    @Test("A 304's fields in order as spelled, repeats kept; its length; Connection: close ends the connection")
    func plainNotModified() throws {
        let text = "HTTP/1.1 304 Not Modified\r\nDate: Mon, 07 Dec 2026 14:00:00 GMT\r\nETag: \"e1\"\r\n"
            + "X-RateLimit-Remaining: 4999\r\nVary: Accept\r\nVary:Accept-Encoding\r\nX-Odd:\t a b \tc\r\n\r\n"
        let head = try #require(Self.head(text))
        #expect(head.fields.map(\.name.rawName) == ["Date", "ETag", "X-RateLimit-Remaining", "Vary", "Vary", "X-Odd"])
        #expect(head.fields.map(\.value) == ["Mon, 07 Dec 2026 14:00:00 GMT", "\"e1\"", "4999", "Accept", "Accept-Encoding", "a b \tc"])
        #expect(head.fields[.xRateLimitRemaining] == "4999")
        #expect(head.length == text.utf8.count && head.keepAlive)
        // What follows the head is not part of it.
        #expect(Self.head(text + "HTTP/1.1 200 OK\r\n")?.length == text.utf8.count)

        #expect(Self.head("HTTP/1.1 304 \r\nConnection: keep-alive, Close\r\n\r\n")?.keepAlive == false)
        #expect(Self.head("HTTP/1.1 304 Not Modified\r\nConnection: keep-alive\r\n\r\n")?.keepAlive == true)
        #expect(Self.head("HTTP/1.1 304 Not Modified\r\n\r\n")?.fields.isEmpty == true)
    }

    @Test("The start of a 304 waits for the rest; any other start is NIO's at once")
    func incompleteOrOther() {
        let whole = "HTTP/1.1 304 Not Modified\r\nETag: \"e1\"\r\n\r\n"
        for cut in 0..<whole.utf8.count {
            let part = String(whole.utf8.prefix(cut))!
            #expect(Self.isIncomplete(part), "\(part.debugDescription)")
        }
        for other in ["HTTP/1.1 200 OK\r\n", "HTTP/1.1 2", "HTTP/1.0 304 Not Modified\r\n\r\n", "HTTP/1.1 3040 X\r\n\r\n",
                      "http/1.1 304 Not Modified\r\n\r\n", "HTTP/1.1 304\r\n\r\n", "HTTP/1.1 404 Not Found\r\n\r\n"] {
            #expect(Self.isOther(other), "\(other.debugDescription)")
        }
        // A head that does not end within the limit is NIO's, with its own limits.
        let long = "HTTP/1.1 304 Not Modified\r\nX-Long: " + String(repeating: "a", count: NotModifiedHead.maxLength)
        #expect(Self.isOther(long))
    }

    @Test("What only NIO's decoder reads alike is left to it: obs-fold, obs-text, bare LF, whitespace before CRLF, bad names")
    func leftToTheDecoder() {
        for text in [
            "HTTP/1.1 304 Not Modified\r\nX-A: one\r\n two\r\n\r\n",        // obs-fold
            "HTTP/1.1 304 Not Modified\r\nX-A: caf\u{e9}\r\n\r\n",          // obs-text
            "HTTP/1.1 304 Not Modified\r\nX-A: one\nX-B: two\r\n\r\n",      // a bare LF
            "HTTP/1.1 304 Not Modified\r\nX-A: one \r\n\r\n",               // whitespace before CRLF
            "HTTP/1.1 304 Not Modified\r\nX A: one\r\n\r\n",                // not a token
            "HTTP/1.1 304 Not Modified\r\n: one\r\n\r\n",                   // no name
            "HTTP/1.1 304 Not Modified\r\nX-A one\r\n\r\n",                 // no colon
            "HTTP/1.1 304 Not Modified\r\nX-A: o\rne\r\n\r\n",              // a bare CR
            "HTTP/1.1 304 Not\u{1}Modified\r\n\r\n",                         // a control byte in the reason
        ] {
            #expect(Self.isOther(text), "\(text.debugDescription)")
        }
    }

    /// A loop route's pipeline in memory, the last handler keeping what NIO's decoder reads.
    final class Parts: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPClientResponsePart
        var read: [String] = []
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): read.append("head \(head.status.code)")
            case .body(let body): read.append("body \(String(buffer: body))")
            case .end: read.append("end")
            }
        }
    }

    static func pipeline() throws -> (EmbeddedChannel, HTTP1RawExchange, Parts, NotModifiedBox) {
        let channel = EmbeddedChannel()
        let exchange = try #require(try HTTP1Connection.addCodec(channel.pipeline.syncOperations, validating: false, rawExchange: true))
        let parts = Parts()
        try channel.pipeline.syncOperations.addHandler(parts)
        let box = NotModifiedBox()
        exchange.notModified = { box.heads.append($0) }
        try channel.connect(to: .init(ipAddress: "127.0.0.1", port: 80)).wait()
        return (channel, exchange, parts, box)
    }

    final class NotModifiedBox: @unchecked Sendable {
        var heads: [NotModifiedHead] = []
    }

    static func bytes(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    @Test("A conditional GET's bytes go out as written; its 304, in two reads, is read whole here and NIO's codec sees nothing")
    func notModifiedInTwoReads() throws {
        let (channel, exchange, parts, box) = try Self.pipeline()
        let request = "GET /a HTTP/1.1\r\nHost: origin\r\nIf-None-Match: \"e1\"\r\n\r\n"
        exchange.write(Self.bytes(request), isHead: false, conditional: true, promise: nil)
        #expect(try channel.readOutbound(as: ByteBuffer.self) == Self.bytes(request))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil, "nothing but the head")

        try channel.writeInbound(Self.bytes("HTTP/1.1 304 Not Modified\r\nETag: \"e1\"\r"))
        #expect(box.heads.isEmpty)
        try channel.writeInbound(Self.bytes("\nCache-Control: max-age=60\r\n\r\n"))
        #expect(box.heads.count == 1)
        #expect(box.heads.first?.fields[.cacheControl] == "max-age=60")
        #expect(parts.read.isEmpty, "NIO's decoder read nothing")

        // The connection carries the next exchange: NIO's decoder reads a plain GET's answer.
        exchange.write(Self.bytes("GET /b HTTP/1.1\r\nHost: origin\r\n\r\n"), isHead: false, conditional: false, promise: nil)
        try channel.writeInbound(Self.bytes("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"))
        #expect(parts.read == ["head 200", "body hi", "end"])
        #expect(channel.isActive)
        _ = try? channel.finish()
    }

    @Test("A conditional GET's answer that is not a 304 — or one read only by NIO's rules — is NIO's decoder's, told of the GET")
    func otherAnswersGoToTheDecoder() throws {
        let (channel, exchange, parts, box) = try Self.pipeline()
        exchange.write(Self.bytes("GET /a HTTP/1.1\r\n\r\n"), isHead: false, conditional: true, promise: nil)
        try channel.writeInbound(Self.bytes("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"))
        #expect(parts.read == ["head 200", "body hi", "end"])

        exchange.write(Self.bytes("GET /a HTTP/1.1\r\n\r\n"), isHead: false, conditional: true, promise: nil)
        try channel.writeInbound(Self.bytes("HTTP/1.1 304 Not Modified\r\nETag: \"e1\" \r\n\r\n"))
        #expect(parts.read == ["head 200", "body hi", "end", "head 304", "end"])
        #expect(box.heads.isEmpty)
        #expect(channel.isActive)
        _ = try? channel.finish()
    }

    @Test("A HEAD's answer has no body: NIO's decoder is told of the HEAD")
    func headHasNoBody() throws {
        let (channel, exchange, parts, _) = try Self.pipeline()
        exchange.write(Self.bytes("HEAD /a HTTP/1.1\r\n\r\n"), isHead: true, conditional: false, promise: nil)
        try channel.writeInbound(Self.bytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"))
        #expect(parts.read == ["head 200", "end"])
        _ = try? channel.finish()
    }

    @Test("Anything the origin sends after a 304 read here, between exchanges, closes the connection")
    func nothingBetweenExchanges() throws {
        let (channel, exchange, _, box) = try Self.pipeline()
        exchange.write(Self.bytes("GET /a HTTP/1.1\r\n\r\n"), isHead: false, conditional: true, promise: nil)
        try channel.writeInbound(Self.bytes("HTTP/1.1 304 Not Modified\r\n\r\n"))
        #expect(box.heads.count == 1 && channel.isActive)
        _ = try? channel.writeInbound(Self.bytes("HTTP/1.1 408 Request Timeout\r\n\r\n"))
        #expect(!channel.isActive)
    }
}
