import Foundation
import Freshet
import FreshetCache
@testable import FreshetProxy
import FreshetSimulator
import FreshetTestSupport
import FreshetTransports
import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import Testing

/// The raw hit path: request heads recognised in the bytes read and answered with prepared bytes,
/// below NIO's HTTP/1 decoder and encoder — checked against that codec, and over loopback.
@Suite("freshet proxy: hits answered from the bytes read, below NIO's HTTP/1 codec")
struct RawHitPathTests {
    /// The request heads NIO's decoder and the HTTPTypes codec make of `text`, as the proxy's
    /// pipeline sets them up.
    static func decoded(_ text: String) throws -> [HTTPRequest] {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder()))
        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
        try channel.writeInbound(ByteBuffer(string: text))
        var heads: [HTTPRequest] = []
        while let part = try channel.readInbound(as: HTTPRequestPart.self) {
            if case .head(let head) = part { heads.append(head) }
        }
        return heads
    }

    /// The parts NIO's decoder reads of the first request in `bytes` ("head", "body", "end"), as
    /// far as it reads before the bytes end or it refuses what follows.
    static func firstRequestParts(_ bytes: [UInt8]) -> [String] {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        guard (try? channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder()))) != nil else { return [] }
        _ = try? channel.writeInbound(ByteBuffer(bytes: bytes))
        var parts: [String] = []
        while let part = try? channel.readInbound(as: HTTPServerRequestPart.self) {
            switch part {
            case .head: parts.append("head")
            case .body: parts.append("body")
            case .end: parts.append("end")
            }
            if parts.last == "end" { break }
        }
        return parts
    }

    static func recognised(_ text: String) -> RawRequestHead? {
        ByteBuffer(string: text).withUnsafeReadableBytes(RawRequestHead.recognise)
    }

    /// Heads the raw hit path takes: plain, with every kind of field it keeps, `Connection: keep-alive`.
    static let takenHeads = [
        "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
        "HEAD /repos/a/b/events?per_page=30&page=2 HTTP/1.1\r\nhost: example.com\r\nAccept: application/json\r\n"
            + "Authorization: Bearer ghp_x\r\nUser-Agent: curl/8.5.0\r\n\r\n",
        "GET /x HTTP/1.1\r\nUser-Agent: t\r\nHost:a\r\nAccept-Encoding:\tgzip, br\r\nX-Empty:\r\nCookie: a=1; b=2\r\n"
            + "Cookie: c=3\r\nConnection: Keep-Alive\r\n\r\n",
        "GET /%7Euser/a;b?q=%20&r=[x]&s=!$'()*+,:@~ HTTP/1.1\r\nHost: h\r\nX-Tab: a\tb  c\r\nx-lower: v\r\n\r\n",
    ]

    @Test("A head taken is the request NIO's decoder and the HTTPTypes codec make of the same bytes, and ends where it ends",
          arguments: takenHeads)
    func takenAsTheCodecReadsIt(text: String) throws {
        let head = try #require(Self.recognised(text))
        let decoded = try Self.decoded(text)
        try #require(decoded.count == 1)
        var expected = decoded[0]
        // `Connection: keep-alive`, HTTP/1.1's default, is the one field taken and dropped.
        expected.headerFields[.connection] = nil
        #expect(head.request == expected)
        #expect(head.request.headerFields.map(\.name.rawName) == expected.headerFields.map(\.name.rawName), "names as sent")
        #expect(head.length == text.utf8.count)
        #expect(Self.recognised(text + "GET /next HTTP/1.1\r\nHo")?.length == text.utf8.count, "the next request's bytes are not read")
    }

    @Test("Anything but the plainest GET or HEAD is left to the decoder",
          arguments: [
              "POST / HTTP/1.1\r\nHost: a\r\n\r\n",
              "get / HTTP/1.1\r\nHost: a\r\n\r\n",
              "GET / HTTP/1.0\r\nHost: a\r\n\r\n",
              "GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
              "GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n",
              "GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n",
              "GET /caf\u{e9} HTTP/1.1\r\nHost: a\r\n\r\n",
              "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
              "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
              "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
              "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, x-secret\r\n\r\n",
              "GET / HTTP/1.1\r\nHost: a\r\nKeep-Alive: timeout=5\r\n\r\n",
              "GET / HTTP/1.1\r\nHost: a\r\nProxy-Connection: close\r\n\r\n",
              "GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n",
              "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n",
              "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n",
              "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
              "GET / HTTP/1.1\r\nHost : a\r\n\r\n",
              "GET / HTTP/1.1\r\n Host: a\r\n\r\n",
              "GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n folded\r\n\r\n",
              "GET / HTTP/1.1\nHost: a\n\n",
              "GET / HTTP/1.1\r\nHost: a\nX: 1\r\n\r\n",
              "GET / HTTP/1.1\r\nHost: a\r\nX: a \r\n\r\n",
              "GET / HTTP/1.1\r\nHost: a\r\nX: caf\u{e9}\r\n\r\n",
              "GET / HTTP/1.1\r\nHost: a\r\nX: a\u{0}b\r\n\r\n",
              "GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n",
              "GET / HTTP/1.1\r\nHost: a\r\n:\r\n\r\n",
              "GET / HTTP/1.1\r\nHost: a\r\n",
              "GET / HTTP/1.1\r\nHost: a\r\n\r",
              "GET / HTTP/1.1\r\nHost: a\r\nX: \(String(repeating: "y", count: RawRequestHead.maxLength))\r\n\r\n",
          ])
    func leftToTheDecoder(text: String) {
        #expect(Self.recognised(text) == nil)
    }

    @Test("Mutated request heads: every one taken is what NIO's decoder and the HTTPTypes codec make of its bytes")
    func mutatedHeadsTakenAsTheCodecReadsThem() throws {
        let corpus = (Self.takenHeads + ["POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi"]).map { Array($0.utf8) }
        let fragments = ["GET ", "HEAD ", " HTTP/1.1", "\r\n", "\r\n\r\n", "\r", "\n", ": ", "\t", "Host: b", "Connection: close",
                         "Connection: keep-alive", "Content-Length: 1", "Transfer-Encoding: chunked", "Proxy-Connection: close",
                         "Expect: 100-continue", "Upgrade: h2c", "Keep-Alive: 5", "#", "?", "/", "%", "\u{7F}", "\u{1}"]
            .map { Array($0.utf8) }
        let iterations = Mutator.iterations(4000)
        var random = SplitMix64(seed: 0x6e7)
        var (taken, differences) = (0, [String]())
        for round in 0..<iterations {
            let bytes = round < corpus.count ? corpus[round]
                : Mutator.mutate(random.pick(corpus), corpus: corpus, fragments: fragments, random: &random)
            guard let head = bytes.withUnsafeBytes(RawRequestHead.recognise) else { continue }
            taken += 1
            // Only visible ASCII, spaces, tabs, CR and LF are taken: the text is the bytes.
            let text = String(decoding: bytes.prefix(head.length), as: UTF8.self)
            let decoded = (try? Self.decoded(text)) ?? []
            var expected = decoded.first
            expected?.headerFields[.connection] = nil
            // And it ends where NIO's decoder ends it, whatever follows: no body is framed there.
            let framed = Self.firstRequestParts(bytes)
            if decoded.count != 1 || head.request != expected
                || head.request.headerFields.map(\.name.rawName) != expected?.headerFields.map(\.name.rawName)
                || framed != ["head", "end"],
                differences.count < 5 {
                differences.append("\(String(decoding: bytes, as: UTF8.self).debugDescription): \(head.request) != NIO's "
                                   + "\(decoded), which frames it as \(framed)")
            }
        }
        #expect(taken > iterations / 20, "the mutations reach the path that takes heads (\(taken) taken)")
        #expect(differences.isEmpty, "\(differences.joined(separator: "\n"))")
    }

    @Test("Bytes are whole heads only when they end at a taken head's end")
    func wholeHeads() {
        let one = "GET /a HTTP/1.1\r\nHost: a\r\n\r\n"
        let whole = { (text: String) in ByteBuffer(string: text).withUnsafeReadableBytes(RawRequestHead.areWholeHeads) }
        #expect(whole(one))
        #expect(whole(one + one))
        #expect(!whole(one + "GET /b HTTP/1.1\r\nHost"))
        #expect(!whole(one + "POST /b HTTP/1.1\r\nHost: a\r\n\r\n"))
        #expect(!whole("GET /a HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"))
    }

    @Test("A prepared head's bytes are the bytes NIO's encoder writes for the same head")
    func headBytesAsTheEncoderWrites() throws {
        let fields: HTTPHeaders = ["Content-Length": "7", "ETag": "\"v1\"", "cache-control": "public, max-age=60",
                                   "X-Cache": "HIT", "Age": "0"]
        for status in [HTTPResponseStatus.ok, .nonAuthoritativeInformation, .notFound, .custom(code: 299, reasonPhrase: "Fine")] {
            let head = HTTPResponseHead(version: .http1_1, status: status, headers: fields)
            let channel = EmbeddedChannel(handler: HTTPResponseEncoder())
            defer { _ = try? channel.finish() }
            try channel.writeOutbound(HTTPServerResponsePart.head(head))
            guard case .byteBuffer(let written)? = try channel.readOutbound(as: IOData.self) else {
                Issue.record("the encoder wrote no buffer for \(status)")
                continue
            }
            #expect(String(buffer: PreparedAnswers.bytes(of: head)) == String(buffer: written))
        }
    }

    @Test("A new version of a stored response keeps the body's copy when its bytes are the same, and only then")
    func revalidatedVersionsKeepTheirBody() {
        let prepared = PreparedAnswers()
        func version(_ second: Double, body: String, date: String) -> CachedResponse {
            let at = Date(timeIntervalSince1970: 1_800_000_000 + second)
            return CachedResponse(key: "k", variant: "", url: "https://api.example.com/k", status: 200,
                                  headers: [.date: date, .eTag: "\"v1\""], body: Data(body.utf8), requestTime: at, responseTime: at)
        }
        func address(_ buffer: ByteBuffer) -> UnsafeRawPointer? { buffer.withUnsafeReadableBytes { $0.baseAddress } }
        let body = String(repeating: "x", count: 4096)
        let first = prepared.answer(for: version(0, body: body, date: "one"), age: 0, outcome: .hit)
        // Revalidated: new fields and times, the same bytes (another Data holding them).
        let second = prepared.answer(for: version(1, body: String(body), date: "two"), age: 0, outcome: .revalidated)
        #expect(address(second.body) == address(first.body))
        #expect(second.head.headers["Date"] == ["two"])
        // The same length, other bytes: a copy of those.
        let changed = String(repeating: "y", count: 4096)
        let third = prepared.answer(for: version(2, body: changed, date: "three"), age: 0, outcome: .revalidated)
        #expect(address(third.body) != address(first.body))
        #expect(String(buffer: third.body) == changed)
        #expect(String(buffer: second.body) == body)
    }

    @Test("A stored response's head for clients: no hop-by-hop or listed fields, no Age or X-Cache, its own length, Via")
    func storedHeadForClients() {
        var fields = HTTPFields()
        for (name, value) in [("Connection", "X-Listed"), ("Keep-Alive", "timeout=5"), ("Content-Length", "99"),
                              ("X-Listed", "gone"), ("ETag", "\"v1\""), ("Age", "30"), ("X-Cache", "HIT"),
                              ("Proxy-Authenticate", "Basic"), ("Content-Length", "98"), ("Cache-Control", "max-age=60")] {
            fields.append(HTTPField(name: HTTPField.Name(name)!, value: value))
        }
        let stored = CachedResponse(key: "k", variant: "", url: "https://api.example.com/k", status: 299, headers: fields,
                                    body: Data("{}".utf8), requestTime: Date(), responseTime: Date())
        let head = PreparedAnswers.storedHead(stored)
        #expect(head.status == .custom(code: 299, reasonPhrase: ""))
        #expect(head.headers.map { "\($0.name): \($0.value)" }
            == ["Content-Length: 2", "ETag: \"v1\"", "Cache-Control: max-age=60", "Via: \(ProxyHeaders.via)"])
        for name in HTTPField.Name.hopByHop.union(["host", "proxy-authorization", "proxy-", "proxy-x"]) {
            #expect(ProxyHeaders.isHopByHop(name), "\(name)")
        }
        // Names as long as a hop-by-hop one (they are told apart by length first), and none at all.
        for name in ["etag", "proxy", "x-proxy-id", "tea", "hosts", "connections", "ta", "hast", "trailex", "upgradE",
                     "connectiom", "keep-alivE", "transfer-encodinh", "content-length", ""] {
            #expect(!ProxyHeaders.isHopByHop(name), "\(name)")
        }
        // The names whose URLs are rewritten, compared as the list has them.
        for name in ProxyDelivery.linkFields { #expect(ProxyDelivery.isLinkField(name.canonicalName), "\(name)") }
        for name in ["links", "content-type", "locations", "lint", "locatiom", "content-locatiom", ""] {
            #expect(!ProxyDelivery.isLinkField(name), "\(name)")
        }
        for outcome in CacheOutcome.allCases {
            #expect(ProxyHeaders.xCache(outcome) == outcome.rawValue.uppercased())
        }
    }

    @Test("Once a request that ends the connection is read whole, the raw path answers nothing more and the decoder's refusal of what follows fails nothing")
    func endingConnection() throws {
        let forwarder = ProxyForwarder(origin: URL(string: "http://127.0.0.1:9")!, store: MemoryCacheStore(),
                                       transport: HTTP1Transport())
        let hits = ProxyHitHandler(answering: HitAnswering(forwarder: forwarder, prepared: PreparedAnswers(), log: nil))
        let channel = EmbeddedChannel(handler: HTTP1Persistence(hits: hits))
        defer { _ = try? channel.finish() }
        let request = { (version: HTTPVersion, headers: HTTPHeaders) throws in
            try channel.writeInbound(HTTPServerRequestPart.head(HTTPRequestHead(version: version, method: .GET, uri: "/a",
                                                                                headers: headers)))
            try channel.writeInbound(HTTPServerRequestPart.end(nil))
        }
        try request(.http1_1, ["Host": "a"])
        try request(.http1_0, ["Host": "a", "Connection": "keep-alive"])
        #expect(!hits.ending && !hits.busy)
        try channel.writeInbound(HTTPServerRequestPart.head(HTTPRequestHead(version: .http1_0, method: .GET, uri: "/a",
                                                                            headers: ["Host": "a"])))
        #expect(!hits.ending, "not before the request's end")
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        #expect(hits.ending && hits.busy)
        channel.pipeline.fireErrorCaught(HTTPParserError.closedConnection)
        #expect(throws: Never.self) { try channel.throwIfErrorCaught() }
        channel.pipeline.fireErrorCaught(ChannelError.ioOnClosedChannel)
        #expect(throws: ChannelError.self) { try channel.throwIfErrorCaught() }
    }

    /// A stored answer for `/hit`, then whatever the test sends over one raw connection.
    static func withStoredHit(idleTimeout: Duration? = nil, _ body: (RawOrigin, URL) async throws -> Void) async throws {
        let answer = "HTTP/1.1 200 OK\r\nContent-Length: 7\r\nCache-Control: public, max-age=600\r\nETag: \"v1\"\r\n"
            + "Date: \(HTTPDate.format(Date()))\r\nConnection: close\r\n\r\n{\"v\":1}"
        let origin = try RawOrigin(responses: Array(repeating: answer, count: 4))
        defer { origin.stop() }
        // The SQLite store, as `freshet proxy` runs it: its memory tier is what hits are answered from.
        try await withSQLiteStore { store, _ in try await withInProcessProxy(origin: origin.url, store: store, idleTimeout: idleTimeout) { proxy in
            // Each on a connection of its own, closed after the answer (a pooled one could meet a
            // short idle timeout between two requests): the miss, then one hit, which says the
            // answer is stored (the miss's client may have it before the store does).
            let port = try #require(proxy.base.port)
            let ask = { () async throws -> String in
                let client = try RawClient(port: port)
                defer { client.close() }
                client.send("GET /hit HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                return await client.read()
            }
            let miss = try await ask()
            try #require(miss.hasPrefix("HTTP/1.1 200 OK") && miss.contains("X-Cache: MISS"), "\(miss.prefix(500))")
            var stored = false
            for _ in 0..<100 where !stored {
                stored = try await ask().contains("X-Cache: HIT")
            }
            try #require(stored, "a hit within 100 requests")
            try await body(origin, proxy.base)
        } }
    }

    /// The status lines in `text`, answers written back to back (a body is not followed by CRLF).
    static func statusLines(_ text: String) -> [String] {
        text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { "HTTP/1.1 " + ($0.components(separatedBy: "\r\n").first ?? "") }
    }

    @Test("A GET with a body is one request: the request in its body is never answered as a second one")
    func aBodyIsNeverARequest() async throws {
        try await Self.withStoredHit { origin, base in
            let client = try RawClient(port: try #require(base.port))
            defer { client.close() }
            let smuggled = "GET /hit HTTP/1.1\r\nHost: a\r\n\r\n"
            let closing = "HEAD /hit HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
            client.send("GET /hit HTTP/1.1\r\nHost: a\r\nContent-Length: \(smuggled.utf8.count)\r\n\r\n" + smuggled + closing)
            let text = await client.read()
            #expect(Self.statusLines(text).count == 2, "the GET with its body and the HEAD, nothing for the body: \(text.prefix(2000).debugDescription)")
        }
    }

    @Test("A head split over two writes, and hits pipelined after it, are each answered once, in order")
    func splitHeadThenHits() async throws {
        try await Self.withStoredHit { origin, base in
            let client = try RawClient(port: try #require(base.port))
            defer { client.close() }
            client.send("GET /hit HTTP/1.1\r\nHo")
            client.send("st: a\r\n\r\nGET /hit HTTP/1.1\r\nHost: a\r\n\r\nHEAD /hit HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            let text = await client.read()
            #expect(Self.statusLines(text) == ["HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.1 200 OK"], "\(text.prefix(2000))")
            #expect(text.components(separatedBy: "{\"v\":1}").count == 3, "two bodies, none for the HEAD")
            #expect(text.components(separatedBy: "X-Cache: HIT").count == 4)
            #expect(origin.received.count == 1, "hits only after the first miss")
        }
    }

    @Test("A connection answered from the bytes read is closed once idle for the idle timeout")
    func idleConnectionsAreClosed() async throws {
        try await Self.withStoredHit(idleTimeout: .milliseconds(300)) { origin, base in
            let client = try RawClient(port: try #require(base.port))
            defer { client.close() }
            client.send("GET /hit HTTP/1.1\r\nHost: a\r\n\r\n")
            // Reads to the end: the server's close ends it, or 10 s without bytes do.
            let first = await client.read()
            #expect(first.hasPrefix("HTTP/1.1 200 OK") && first.contains("X-Cache: HIT"), "\(first.prefix(500))")
            // On a connection the server closed, a second request gets nothing back.
            client.send("GET /hit HTTP/1.1\r\nHost: a\r\n\r\n")
            let second = await client.read()
            #expect(second == first, "nothing after the close: \(second.dropFirst(first.count).prefix(500))")
        }
    }
}
