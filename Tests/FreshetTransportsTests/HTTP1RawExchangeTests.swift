import Freshet
import FreshetSimulator
import FreshetTestSupport
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
            "HTTP/1.1 304 Not Modified\r\nContent-Length: 0\r\n\r\n",         // framing: llhttp judges it
            "HTTP/1.1 304 Not Modified\r\ntransfer-encoding: chunked\r\n\r\n",
            // Not whole yet, but no longer the plainest form: NIO's at once, which may refuse it at
            // once (the origin may send nothing more).
            "HTTP/1.1 304 Not Modified\nETag: \"e1\"\n\n",                    // bare LFs only
            "HTTP/1.1 304 Not Modified\r\nX-A: one\n",
            "HTTP/1.1 304 Not Modified\r\nContent-Length: 1x",
            "HTTP/1.1 304 Not Modified\u{FF}",
        ] {
            #expect(Self.isOther(text), "\(text.debugDescription)")
        }
    }

    /// A loop route's pipeline in memory, the last handler keeping what NIO's decoder reads.
    final class Parts: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPClientResponsePart
        var read: [String] = []
        var describe: (HTTPClientResponsePart) -> String = { part in
            switch part {
            case .head(let head): "head \(head.status.code)"
            case .body(let body): "body \(String(buffer: body))"
            case .end: "end"
            }
        }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            read.append(describe(unwrapInboundIn(data)))
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

    /// How a loop route's connection ends a conditional `GET`'s exchange on `bytes`, as lines: the
    /// `304` read whole by the raw exchange, or the parts NIO's decoder read, and whether it failed.
    /// Through the raw exchange the bytes arrive cut at `cuts`; through NIO's codec alone (the pool's
    /// own connections: its encoder tells the decoder of the `GET`) in one read.
    static func exchange(_ bytes: [UInt8], raw: Bool, cuts: [Int] = []) throws -> [String] {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        let exchange = try HTTP1Connection.addCodec(channel.pipeline.syncOperations, validating: false, rawExchange: raw)
        let parts = Parts()
        var lines: [String] = []
        parts.describe = { part in
            switch part {
            case .head(let head):
                "head \(head.status.code) \(head.headers.map { "\($0.name): \($0.value)" }) keep-alive \(head.isKeepAlive)"
            case .body(let body): "body \(body.readableBytes)"
            case .end: "end"
            }
        }
        try channel.pipeline.syncOperations.addHandler(parts)
        exchange?.notModified = { head in
            lines.append("head 304 \(head.fields.map { "\($0.name.rawName): \($0.value)" }) keep-alive \(head.keepAlive)")
            lines.append("end")
        }
        try channel.connect(to: .init(ipAddress: "127.0.0.1", port: 80)).wait()
        let request = "GET /a HTTP/1.1\r\nHost: origin\r\nIf-None-Match: \"e1\"\r\n\r\n"
        if let exchange {
            exchange.write(ByteBuffer(string: request), isHead: false, conditional: true, promise: nil)
        } else {
            let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a", headers: ["Host": "origin", "If-None-Match": "\"e1\""])
            try channel.writeOutbound(HTTPClientRequestPart.head(head))
            try channel.writeOutbound(HTTPClientRequestPart.end(nil))
        }
        var start = 0
        var failed = false
        for end in cuts + [bytes.count] where end >= start && !failed {
            do {
                try channel.writeInbound(ByteBuffer(bytes: bytes[start..<end]))
            } catch {
                failed = true
            }
            start = end
        }
        // A body's bytes in one line, however many reads brought them.
        for line in parts.read {
            if line.hasPrefix("body "), let last = lines.last, last.hasPrefix("body ") {
                lines[lines.count - 1] = "body \(Int(last.dropFirst(5))! + Int(line.dropFirst(5))!)"
            } else {
                lines.append(line)
            }
        }
        return failed ? lines + ["failed"] : lines
    }

    @Test("Mutated answers to a conditional GET end the exchange as NIO's codec alone ends it, however the bytes are cut")
    func mutatedAnswersEndAsNIOEndsThem() throws {
        let corpus = [
            "HTTP/1.1 304 Not Modified\r\nETag: \"e1\"\r\nCache-Control: max-age=60\r\n\r\n",
            "HTTP/1.1 304 Not Modified\r\nDate: Mon, 07 Dec 2026 14:00:00 GMT\r\nETag: W/\"e1\"\r\nCache-Control: private, max-age=60, s-maxage=60\r\n"
                + "Vary: Accept, Authorization, Cookie, X-GitHub-OTP\r\nVary: Accept-Encoding, Accept, X-Requested-With\r\n"
                + "X-RateLimit-Limit: 5000\r\nX-RateLimit-Remaining: 4999\r\nX-RateLimit-Reset: 1800000000\r\n"
                + "Link: <https://api.github.com/repositories/1/events?page=2>; rel=\"next\"\r\nConnection: keep-alive\r\n\r\n",
            "HTTP/1.1 304 \r\nConnection: close\r\n\r\n",
            "HTTP/1.1 304 Not Modified\nETag: \"e1\"\n\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nETag: \"e2\"\r\n\r\nhi",
            "HTTP/1.1 304 Not Modified\r\nX-A: one\r\n two\r\n\r\n",
        ].map { Array($0.utf8) }
        let fragments = ["\r", "\n", "\r\n", "\r\n\r\n", ": ", "\t", "HTTP/1.1 304 ", "HTTP/1.0 ", "304", "200 OK", "Connection: close",
                         "Connection: keep-alive", "Content-Length: 3", "Transfer-Encoding: chunked", "\r\n ", "X-A: b\r\n",
                         "\u{7F}", "\u{1}", "\u{e9}"].map { Array($0.utf8) }
        var random = SplitMix64(seed: 0x304)
        var differences: [String] = []
        for round in 0..<Mutator.iterations(4000) {
            let bytes = round < corpus.count ? corpus[round]
                : Mutator.mutate(random.pick(corpus), corpus: corpus, fragments: fragments, random: &random)
            let cuts = (0..<random.below(3)).map { _ in random.below(bytes.count + 1) }.sorted()
            let expected = try Self.exchange(bytes, raw: false)
            let got = try Self.exchange(bytes, raw: true, cuts: cuts)
            if got != expected, differences.count < 5 {
                differences.append("\(String(decoding: bytes, as: UTF8.self).debugDescription) cut at \(cuts): \(got) != NIO's \(expected)")
            }
        }
        #expect(differences.isEmpty, "\(differences.joined(separator: "\n"))")
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
