// CompressNIO comes with FreshetSimulator (the package does not list it for this test target).
import CompressNIO
import Foundation
@testable import FreshetSimulator
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// gzip when asked, as GitHub, Hacker News and Kakao answer it: encoded answers decode (with
/// zlib, through CompressNIO) to exactly the identity body; what is not an API answer is never
/// encoded; the `corrupt-gzip` fault mode.
@Suite("FreshetSimulator: gzip")
struct CompressionTests {
    static let kakao: HTTPFields = [.authorization: "KakaoAK sim-kakao-key"]

    /// The API answers (GitHub, Hacker News, Kakao; successes and errors) and the fields each needs.
    static let apiPaths: [(String, HTTPFields)] = [
        ("/repos/ReactiveX/RxSwift/events", [:]), ("/repos/kean/Get", [:]), ("/users/octocat", [:]),
        ("/repos/kean/Get", [.authorization: "Bearer tokenA"]), ("/search/repositories?q=swift&per_page=5", [:]),
        ("/repos/nobody/nothing", [:]), ("/search/repositories", [:]), ("/v0/topstories.json", [:]),
        ("/v0/item/0.json", [:]), ("/v0/user/nobody.json", [:]), ("/v0/nothing", [:]),
        ("/v2/search/blog?query=swift&size=3", kakao), ("/v2/search/blog?query=swift", [:]),
    ]

    /// Runs `body` against a fresh simulator's responder, in process.
    func withRouter<T: Sendable>(
        _ configuration: SimulatorConfiguration = SimulatorConfiguration(hnStoryCount: 50),
        _ body: @escaping @Sendable (Simulator, any TestClientProtocol) async throws -> T
    ) async throws -> T {
        let simulator = Simulator(configuration: configuration)
        let app = Application(responder: simulator.makeResponder())
        return try await app.test(.router) { client in try await body(simulator, client) }
    }

    static func gunzip(_ body: ByteBuffer) throws -> ByteBuffer {
        var encoded = body
        return try encoded.decompress(with: .gzip())
    }

    static func fields(_ base: HTTPFields, acceptEncoding: String?) -> HTTPFields {
        var fields = base
        if let acceptEncoding { fields[.acceptEncoding] = acceptEncoding }
        return fields
    }

    @Test("Asked for gzip, every API answer is gzip with its encoded length, and decodes to exactly the identity body")
    func gzipDecodesToTheIdentityBody() async throws {
        try await withRouter { _, client in
            for (path, headers) in Self.apiPaths {
                let identity = try await client.execute(uri: path, method: .get, headers: headers)
                let gzip = try await client.execute(uri: path, method: .get, headers: Self.fields(headers, acceptEncoding: "gzip"))
                #expect(identity.headers[.contentEncoding] == nil, "\(path)")
                #expect(gzip.status == identity.status, "\(path)")
                #expect(gzip.headers[.contentEncoding] == "gzip", "\(path)")
                #expect(gzip.headers[.contentLength] == String(gzip.body.readableBytes), "\(path)")
                #expect(gzip.body.readableBytesView.prefix(2).elementsEqual([0x1f, 0x8b]), "\(path)")
                #expect(try Self.gunzip(gzip.body) == identity.body, "\(path)")
                #expect(gzip.headers[.contentType] == identity.headers[.contentType], "\(path)")
                // The same (weak) validator for both encodings.
                #expect(gzip.headers[.eTag] == identity.headers[.eTag], "\(path)")
            }
        }
    }

    @Test("Accept-Encoding is parsed: gzip, x-gzip, * and q-values accept; gzip;q=0, no field and others give identity")
    func acceptEncodingIsParsed() async throws {
        try await withRouter { _, client in
            let path = "/users/octocat"
            let identity = try await client.execute(uri: path, method: .get)
            let accepting = [
                "gzip", "x-gzip", "*", "GZIP", "gzip;q=0.5", "br;q=1.0, gzip;q=0.1", "deflate, *;q=0.1",
                "identity, gzip ; q=1", "gzip;q=0, x-gzip",
            ]
            for value in accepting {
                let response = try await client.execute(uri: path, method: .get, headers: [.acceptEncoding: value])
                #expect(response.headers[.contentEncoding] == "gzip", "\(value)")
                #expect(try Self.gunzip(response.body) == identity.body, "\(value)")
            }
            // Two lines are one list.
            var twoLines = HTTPFields()
            twoLines.append(HTTPField(name: .acceptEncoding, value: "br"))
            twoLines.append(HTTPField(name: .acceptEncoding, value: "gzip"))
            #expect(try await client.execute(uri: path, method: .get, headers: twoLines).headers[.contentEncoding] == "gzip")

            let refusing = ["gzip;q=0", "gzip; q=0.000", "identity", "br, deflate", "*;q=0", "gzip;q=0, *", "", "gzip;q=abc", "gzipped"]
            for value in refusing {
                let response = try await client.execute(uri: path, method: .get, headers: [.acceptEncoding: value])
                #expect(response.headers[.contentEncoding] == nil, "\(value)")
                #expect(response.body == identity.body, "\(value)")
                #expect(response.headers[.contentLength] == String(identity.body.readableBytes), "\(value)")
            }
        }
    }

    @Test("Every API answer varies on Accept-Encoding; a token's GitHub answer has GitHub's two Vary lines")
    func varyLines() async throws {
        try await withRouter { _, client in
            for acceptEncoding in [nil, "gzip"] {
                let anonymous = try await client.execute(
                    uri: "/repos/kean/Get", method: .get, headers: Self.fields([:], acceptEncoding: acceptEncoding))
                #expect(anonymous.headers[values: .vary] == ["Accept, Accept-Encoding, Accept, X-Requested-With"])

                for path in ["/repos/kean/Get", "/search/repositories?q=swift", "/users/octocat/repos"] {
                    let token = try await client.execute(
                        uri: path, method: .get, headers: Self.fields([.authorization: "token tokenA"], acceptEncoding: acceptEncoding))
                    #expect(
                        token.headers[values: .vary] == [
                            "Accept, Authorization, Cookie, X-GitHub-OTP", "Accept-Encoding, Accept, X-Requested-With",
                        ], "\(path)")
                }
                for (path, headers) in [
                    ("/v0/item/1.json", HTTPFields()), ("/v0/nothing", [:]), ("/v2/search/blog?query=swift", Self.kakao),
                    ("/v2/search/blog?query=swift", [:]),
                ] {
                    let response = try await client.execute(uri: path, method: .get, headers: Self.fields(headers, acceptEncoding: acceptEncoding))
                    #expect(response.headers[values: .vary] == ["Accept-Encoding"], "\(path)")
                }
            }
        }
    }

    @Test("HEAD asked for gzip announces the encoded length and sends no body")
    func headAnnouncesTheEncodedLength() async throws {
        try await withRouter { _, client in
            for path in ["/users/octocat", "/v0/topstories.json"] {
                let gzip = try await client.execute(uri: path, method: .get, headers: [.acceptEncoding: "gzip"])
                let head = try await client.execute(uri: path, method: .head, headers: [.acceptEncoding: "gzip"])
                #expect(head.status == .ok)
                #expect(head.body.readableBytes == 0)
                #expect(head.headers[.contentEncoding] == "gzip")
                #expect(head.headers[.contentLength] == String(gzip.body.readableBytes), "\(path)")
                let identity = try await client.execute(uri: path, method: .get)
                let plainHead = try await client.execute(uri: path, method: .head)
                #expect(plainHead.headers[.contentEncoding] == nil)
                #expect(plainHead.headers[.contentLength] == String(identity.body.readableBytes), "\(path)")
                #expect(identity.body.readableBytes > gzip.body.readableBytes, "\(path): gzip is smaller")
            }
        }
    }

    @Test("A 304 to a gzip request has no body and no Content-Encoding; the tag of the gzip answer matches")
    func notModifiedHasNoBody() async throws {
        try await withRouter { _, client in
            for token in [nil, "Bearer tokenA"] {
                var headers: HTTPFields = [.acceptEncoding: "gzip"]
                if let token { headers[.authorization] = token }
                let first = try await client.execute(uri: "/repos/ReactiveX/RxSwift/events", method: .get, headers: headers)
                #expect(first.headers[.contentEncoding] == "gzip")
                let etag = try #require(first.headers[.eTag])
                headers[.ifNoneMatch] = etag
                let again = try await client.execute(uri: "/repos/ReactiveX/RxSwift/events", method: .get, headers: headers)
                #expect(again.status == .notModified)
                #expect(again.body.readableBytes == 0)
                #expect(again.headers[.contentEncoding] == nil)
                #expect(again.headers[.contentLength] == nil)
                #expect(again.headers[values: .vary].joined(separator: ", ").contains("Accept-Encoding"))
                // The identity request revalidates with the same tag.
                headers[.acceptEncoding] = nil
                #expect(try await client.execute(uri: "/repos/ReactiveX/RxSwift/events", method: .get, headers: headers).status == .notModified)
            }
        }
    }

    @Test("Images, files, uploads, scripted answers, /_sim/bytes, /_sim/drip and control endpoints are never encoded")
    func othersAreNotEncoded() async throws {
        try await withRouter { simulator, client in
            await simulator.setScript(
                path: "/scripted/json", Script(headers: [["Content-Type", "application/json"]], body: #"{"a":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}"#))
            let requests: [(HTTPRequest.Method, String, ByteBuffer?)] = [
                (.get, "/avatars/u/583231?s=16", nil), (.get, "/thumbnails/search1.kakaocdn.net/argon/130x130/abc", nil),
                (.get, "/files/big.bin?size=4096", nil), (.post, "/upload", ByteBuffer(string: #"{"x":"yyyyyyyyyyyyyyyyyyyy"}"#)),
                (.get, "/scripted/json", nil), (.get, "/_sim/bytes?size=2048", nil),
                (.get, "/_sim/drip?bytes=300&chunk=300&intervalMs=0", nil), (.get, "/_sim/routes", nil), (.get, "/_sim/stats", nil),
                (.get, "/nope", nil),
            ]
            for (method, path, body) in requests {
                let plain = try await client.execute(uri: path, method: method, headers: [:], body: body)
                let asked = try await client.execute(uri: path, method: method, headers: [.acceptEncoding: "gzip"], body: body)
                #expect(plain.status.code < 400 || path == "/nope", "\(path): \(plain.status)")
                #expect(asked.headers[.contentEncoding] == nil, "\(path)")
                #expect(asked.body.readableBytes > 0, "\(path)")
                if !path.hasPrefix("/_sim/stats") && !path.hasPrefix("/upload") {
                    #expect(asked.body == plain.body, "\(path)")
                }
                #expect(asked.headers[values: .vary].joined().contains("Accept-Encoding") == false, "\(path)")
            }
        }
    }

    @Test("The corrupt-gzip fault mode: Content-Encoding gzip with a body no inflater accepts, then the real answers again")
    func corruptGzipFaultMode() async throws {
        try await withRouter { simulator, client in
            let path = "/repos/kean/Get"
            let identity = try await client.execute(uri: path, method: .get)
            let etag = try #require(identity.headers[.eTag])
            await simulator.injectFaultMode(FaultMode(route: path, mode: .corruptGzip, times: 2))
            // Whether or not the request asked for gzip, and whatever its validators.
            for headers: HTTPFields in [[.acceptEncoding: "gzip"], [.ifNoneMatch: etag]] {
                let corrupt = try await client.execute(uri: path, method: .get, headers: headers)
                #expect(corrupt.status == .ok)
                #expect(corrupt.headers[.contentEncoding] == "gzip")
                #expect(corrupt.headers[.contentLength] == String(corrupt.body.readableBytes))
                #expect(corrupt.headers[.eTag] == etag)
                #expect(corrupt.body.readableBytesView.prefix(2).elementsEqual([0x1f, 0x8b]), "a gzip header")
                #expect(throws: (any Error).self) { try Self.gunzip(corrupt.body) }
            }
            let healed = try await client.execute(uri: path, method: .get, headers: [.acceptEncoding: "gzip"])
            #expect(try Self.gunzip(healed.body) == identity.body)
            #expect(await simulator.requestLog().map(\.status) == [200, 200, 200, 200])

            // Posted as a control request, listed with the other modes.
            let routes = try await client.execute(uri: "/_sim/routes", method: .get)
            #expect(String(buffer: routes.body).contains("corrupt-gzip"))
            let posted = try await client.execute(
                uri: "/_sim/fault-mode", method: .post, body: ByteBuffer(string: #"{"route":"/v0/item","mode":"corrupt-gzip"}"#))
            #expect(posted.status == .ok)
            let item = try await client.execute(uri: "/v0/item/1.json", method: .get)
            #expect(item.headers[.contentEncoding] == "gzip")
            #expect(throws: (any Error).self) { try Self.gunzip(item.body) }
        }
    }

    @Test("Over a socket: the gzip bytes arrive as encoded, with their length")
    func gzipOverLoopback() async throws {
        let simulator = Simulator(configuration: SimulatorConfiguration(hnStoryCount: 50))
        let app = Application(
            responder: simulator.makeResponder(), configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)))
        let sent = try await app.test(.live) { client in
            let identity = try await client.execute(uri: "/repos/ReactiveX/RxSwift/events?per_page=100", method: .get)
            let gzip = try await client.execute(
                uri: "/repos/ReactiveX/RxSwift/events?per_page=100", method: .get, headers: [.acceptEncoding: "gzip, deflate, br"])
            #expect(gzip.headers[.contentEncoding] == "gzip")
            #expect(gzip.headers[.contentLength] == String(gzip.body.readableBytes))
            #expect(try Self.gunzip(gzip.body) == identity.body)
            #expect(gzip.body.readableBytes * 3 < identity.body.readableBytes, "JSON compresses well")
            return gzip.body.readableBytes
        }
        // The request log counts the bytes on the wire: the encoded ones.
        let id = try #require(await simulator.requestLog().last?.id)
        #expect(await simulator.waitForCompletion(ofRequest: id)?.bytesSent == sent)
    }
}
