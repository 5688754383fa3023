import Foundation
import Freshet
import FreshetTestSupport
import FreshetTransports
import HTTPTypes
import OpenAPIRuntime
import Synchronization
import Testing

/// `HTTP1Transport` (the proxy's transport) against a byte-level origin: what goes on the wire,
/// what comes back, keep-alive, interim responses and failures.
@Suite("HTTP1Transport", .timeLimit(.minutes(1)))
struct HTTP1TransportTests {
    /// A raw answer: status line, header lines, `Content-Length` and the body.
    static func answer(status: String = "200 OK", _ headers: [String] = [], body: String = "ok", close: Bool = false) -> String {
        (["HTTP/1.1 \(status)", "Content-Length: \(body.utf8.count)"] + (close ? ["Connection: close"] : []) + headers)
            .joined(separator: "\r\n") + "\r\n\r\n" + body
    }

    /// Sends one request and reads the whole response body as text.
    static func exchange(
        _ transport: HTTP1Transport, _ origin: RawOrigin, _ method: HTTPRequest.Method = .get, path: String = "/",
        headers: HTTPFields = [:], body: HTTPBody? = nil
    ) async throws -> (HTTPResponse, String) {
        let request = HTTPRequest(method: method, scheme: nil, authority: nil, path: path, headerFields: headers)
        let (response, responseBody) = try await transport.send(request, body: body, baseURL: origin.url, operationID: "test")
        guard let responseBody else { return (response, "") }
        return (response, try await String(collecting: responseBody, upTo: 1 << 20))
    }

    static func lines(_ fields: HTTPFields) -> [String] {
        fields.map { "\($0.name.rawName): \($0.value)" }
    }

    @Test("Header lines go out as given, Host first, the method as spelled; response lines come back in order, repeats kept")
    func headersVerbatim() async throws {
        let origin = try RawOrigin(responses: [Self.answer(
            ["Set-Cookie: a=1", "Cache-Control: max-age=1", "Set-Cookie: b=2", "x-Mixed-Case: Value, Two"], close: true)])
        defer { origin.stop() }
        let pool = HTTP1ConnectionPool()
        defer { pool.closeIdleConnections() }
        var headers = HTTPFields()
        headers.append(HTTPField(name: .accept, value: "*/*;q=0.9"))
        headers.append(HTTPField(name: .init("X-Rep")!, value: "1"))
        headers.append(HTTPField(name: .init("x-rep")!, value: "2"))
        headers.append(HTTPField(name: .contentLength, value: "999"))
        let (response, body) = try await Self.exchange(
            HTTP1Transport(pool: pool), origin, .init("M-SEARCH")!, path: "/a/b?q=%2F%20x&q=2", headers: headers)
        let request = try #require(origin.received.first)
        #expect(request.requestLine == "M-SEARCH /a/b?q=%2F%20x&q=2 HTTP/1.1")
        #expect(request.headerLines == ["Host: 127.0.0.1:\(origin.url.port!)", "Accept: */*;q=0.9", "X-Rep: 1", "x-rep: 2"],
                "the caller's Content-Length gives way to the body's framing: none for a bodiless extension method")
        #expect(response.status.code == 200)
        #expect(body == "ok")
        #expect(Self.lines(response.headerFields) == [
            "Content-Length: 2", "Connection: close", "Set-Cookie: a=1", "Cache-Control: max-age=1", "Set-Cookie: b=2",
            "x-Mixed-Case: Value, Two",
        ])
    }

    @Test("Response bodies framed by Content-Length, chunked, or the end of the connection; HEAD, 204 and 304 have none")
    func responseFraming() async throws {
        let origin = try RawOrigin(responses: [
            Self.answer(body: "by-length", close: true),
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil-the-end",
            Self.answer(body: "not-sent-for-head", close: true),
            "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n",
            "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nConnection: close\r\n\r\n",
        ])
        defer { origin.stop() }
        let transport = HTTP1Transport(pool: HTTP1ConnectionPool())
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/")
        let (first, firstBody) = try await transport.send(request, body: nil, baseURL: origin.url, operationID: "t")
        #expect(first.status.code == 200)
        #expect(firstBody?.length == .known(9))
        #expect(try await String(collecting: try #require(firstBody), upTo: 100) == "by-length")
        #expect(try await Self.exchange(transport, origin).1 == "abcde")
        #expect(try await Self.exchange(transport, origin).1 == "until-the-end")
        let head = HTTPRequest(method: .head, scheme: nil, authority: nil, path: "/")
        let (headResponse, headBody) = try await transport.send(head, body: nil, baseURL: origin.url, operationID: "t")
        #expect(headResponse.status.code == 200)
        #expect(headBody == nil)
        #expect(try await Self.exchange(transport, origin).0.status.code == 204)
        let (notModified, empty) = try await Self.exchange(transport, origin)
        #expect(notModified.status.code == 304)
        #expect(empty.isEmpty)
    }

    @Test("Request bodies: a known length goes with Content-Length, an unknown one chunked")
    func requestFraming() async throws {
        let origin = try RawOrigin(responses: [Self.answer(close: true)])
        defer { origin.stop() }
        let transport = HTTP1Transport(pool: HTTP1ConnectionPool())
        _ = try await Self.exchange(transport, origin, .post, body: HTTPBody("hello"))
        let chunks = AsyncStream<HTTPBody.ByteChunk> { continuation in
            continuation.yield(ArraySlice("abc".utf8))
            continuation.yield(ArraySlice("def".utf8))
            continuation.finish()
        }
        _ = try await Self.exchange(transport, origin, .put, body: HTTPBody(chunks, length: .unknown, iterationBehavior: .single))
        let received = origin.received
        try #require(received.count == 2)
        #expect(received[0].values("Content-Length") == ["5"])
        #expect(received[0].values("Transfer-Encoding").isEmpty)
        #expect(received[0].body == Data("hello".utf8))
        #expect(received[1].values("Transfer-Encoding") == ["chunked"])
        #expect(received[1].values("Content-Length").isEmpty)
        #expect(received[1].body == Data("abcdef".utf8))
    }

    @Test("Keep-alive: sequential requests share one connection; an origin's Connection: close is honoured")
    func keepAlive() async throws {
        let origin = try RawOrigin(responses: [
            Self.answer(body: "one"), Self.answer(status: "404 Not Found", body: "two"), Self.answer(body: "three", close: true),
            Self.answer(body: "four"),
        ], keepAlive: true)
        defer { origin.stop() }
        let pool = HTTP1ConnectionPool()
        defer { pool.closeIdleConnections() }
        let transport = HTTP1Transport(pool: pool)
        #expect(try await Self.exchange(transport, origin).1 == "one")
        #expect(try await Self.exchange(transport, origin, .post, body: HTTPBody("x")).1 == "two")
        #expect(try await Self.exchange(transport, origin).1 == "three")
        #expect(try await Self.exchange(transport, origin).1 == "four")
        #expect(origin.received.map(\.connection) == [0, 0, 0, 1], "a new connection only after Connection: close")
        #expect(origin.connections == 2)
        let left = await eventually { pool.openConnections == 1 }
        #expect(left, "the closed connection left the pool")
    }

    @Test("An idle keep-alive connection the origin closed is not reused: the next request, a POST, goes on a new connection")
    func idleCloseNotReused() async throws {
        // After its answer the origin waits, then closes the connection without having said so.
        let origin = try RawOrigin(responses: [Self.answer(body: "one") + RawOrigin.gate, Self.answer(body: "two")])
        defer { origin.stop() }
        let pool = HTTP1ConnectionPool()
        defer { pool.closeIdleConnections() }
        let transport = HTTP1Transport(pool: pool)
        #expect(try await Self.exchange(transport, origin).1 == "one")
        #expect(pool.openConnections == 1, "parked")
        origin.openGate()
        // The close is noticed while the connection is parked: it leaves the pool.
        let dropped = await eventually { pool.openConnections == 0 }
        #expect(dropped, "the closed connection left the pool")
        // A POST is never sent twice: it succeeds only if the closed connection is not handed out.
        #expect(try await Self.exchange(transport, origin, .post, body: HTTPBody("x")).1 == "two")
        #expect(origin.received.map(\.method) == ["GET", "POST"])
        #expect(origin.connections == 2)
    }

    @Test("An origin closing a kept-alive connection right after its answer: the next GET succeeds at once, on a second connection")
    func closeRightAfterAnswer() async throws {
        let origin = try RawOrigin(responses: [Self.answer(body: "one"), Self.answer(body: "two")])
        defer { origin.stop() }
        let pool = HTTP1ConnectionPool()
        defer { pool.closeIdleConnections() }
        let transport = HTTP1Transport(pool: pool)
        #expect(try await Self.exchange(transport, origin).1 == "one")
        // No wait: either the close was noticed first (a new connection), or the GET went on the
        // closed connection and is sent again on a new one. Both end the same way.
        #expect(try await Self.exchange(transport, origin).1 == "two")
        #expect(origin.received.map(\.connection) == [0, 1])
        #expect(origin.connections == 2)
    }

    @Test("A 408 on an idle keep-alive connection closes it; the next request is not answered by it")
    func requestTimeoutOnIdle() async throws {
        // After its answer the origin waits, then sends a 408 on the idle connection and keeps it
        // open, as a server announcing its idle timeout might.
        let timeout = "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n"
        let origin = try RawOrigin(responses: [Self.answer(body: "one") + RawOrigin.gate + timeout, Self.answer(body: "two")],
                                   keepAlive: true)
        defer { origin.stop() }
        let pool = HTTP1ConnectionPool()
        defer { pool.closeIdleConnections() }
        let transport = HTTP1Transport(pool: pool)
        #expect(try await Self.exchange(transport, origin).1 == "one")
        #expect(pool.openConnections == 1)
        origin.openGate()
        // The 408 arrives on the parked connection, which is closed for it.
        let closed = await eventually(within: 5) { pool.openConnections == 0 }
        #expect(closed, "the connection that got a 408 while idle was closed")
        let (response, body) = try await Self.exchange(transport, origin)
        #expect(response.status.code == 200, "not the 408 left on the idle connection")
        #expect(body == "two")
        #expect(origin.received.map(\.connection) == [0, 1])
        #expect(origin.connections == 2)
    }

    @Test("A reused connection the origin closed before answering: a bodiless GET goes again on a new one, a POST fails")
    func staleConnection() async throws {
        let origin = try RawOrigin(responses: [Self.answer(body: "one"), "", Self.answer(body: "again"), "", ""], keepAlive: true)
        defer { origin.stop() }
        let pool = HTTP1ConnectionPool()
        defer { pool.closeIdleConnections() }
        let transport = HTTP1Transport(pool: pool)
        #expect(try await Self.exchange(transport, origin).1 == "one")
        #expect(try await Self.exchange(transport, origin).1 == "again")
        #expect(origin.received.map(\.connection) == [0, 0, 1])
        let connectionLostFailure = await #expect(throws: TransportFailure.self) {
            _ = try await Self.exchange(transport, origin, .post, body: HTTPBody("x"))
        }
        #expect(connectionLostFailure?.kind == .connectionLost, "\(String(describing: connectionLostFailure))")
        #expect(origin.received.count == 4, "a POST is not sent twice")
    }

    @Test("A reused connection the origin closed before answering: a PUT whose body can be sent again goes again on a new one; a streamed PUT body does not")
    func staleConnectionWithBody() async throws {
        let origin = try RawOrigin(responses: [Self.answer(body: "one"), "", Self.answer(body: "put again"), ""], keepAlive: true)
        defer { origin.stop() }
        let pool = HTTP1ConnectionPool()
        defer { pool.closeIdleConnections() }
        let transport = HTTP1Transport(pool: pool)
        #expect(try await Self.exchange(transport, origin).1 == "one")
        let bytes = HTTPBody(Array("x=1".utf8))
        #expect(bytes.iterationBehavior == .multiple)
        #expect(try await Self.exchange(transport, origin, .put, body: bytes).1 == "put again")
        #expect(origin.received.map(\.connection) == [0, 0, 1])
        #expect(origin.received.dropFirst().map { String(decoding: $0.body, as: UTF8.self) } == ["x=1", "x=1"])

        let (chunks, continuation) = AsyncStream.makeStream(of: ArraySlice<UInt8>.self)
        continuation.yield(ArraySlice("y=2".utf8))
        continuation.finish()
        let streamed = HTTPBody(chunks, length: .known(3), iterationBehavior: .single)
        let failure = await #expect(throws: TransportFailure.self) {
            _ = try await Self.exchange(transport, origin, .put, body: streamed)
        }
        #expect(failure?.kind == .connectionLost, "\(String(describing: failure))")
        #expect(origin.received.count == 4, "a body that can be read once is not sent twice")
    }

    @Test("A body that fails on our side is never sent again, even one that could be iterated twice")
    func failingBodyIsNotReplayed() async throws {
        struct BodyBroke: Error {}
        struct Failing: AsyncSequence, Sendable {
            struct AsyncIterator: AsyncIteratorProtocol {
                mutating func next() async throws -> ArraySlice<UInt8>? { throw BodyBroke() }
            }
            func makeAsyncIterator() -> AsyncIterator { AsyncIterator() }
        }
        let origin = try RawOrigin(responses: [Self.answer(body: "one"), Self.answer(body: "two")], keepAlive: true)
        defer { origin.stop() }
        let pool = HTTP1ConnectionPool()
        defer { pool.closeIdleConnections() }
        let transport = HTTP1Transport(pool: pool)
        #expect(try await Self.exchange(transport, origin).1 == "one")
        await #expect(throws: (any Error).self) {
            _ = try await Self.exchange(transport, origin, .put, body: HTTPBody(Failing(), length: .known(5), iterationBehavior: .multiple))
        }
        #expect(origin.connections == 1, "no second connection for a body that failed by itself")
    }

    @Test("Interim responses reach the task-local handler in order before the final head; 100 does not; none leak into it")
    func interimResponses() async throws {
        let interim = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n"
            + "HTTP/1.1 103 Early Hints\r\nLink: </styles.css>; rel=preload; as=style\r\nx-my-header: test\r\n\r\n"
        let origin = try RawOrigin(responses: [interim + Self.answer(["Cache-Control: max-age=60"], body: "final")], keepAlive: true)
        defer { origin.stop() }
        let pool = HTTP1ConnectionPool()
        defer { pool.closeIdleConnections() }
        let transport = HTTP1Transport(pool: pool)
        let seen = Mutex<[HTTPResponse]>([])
        let (response, body) = try await InterimResponses.$handler.withValue(.init { head in seen.withLock { $0.append(head) } }) {
            try await Self.exchange(transport, origin)
        }
        let heads = seen.withLock { $0 }
        #expect(heads.map(\.status.code) == [102, 103])
        #expect(heads.last.map { Self.lines($0.headerFields) } == [
            "Link: </styles.css>; rel=preload; as=style", "x-my-header: test",
        ])
        #expect(response.status.code == 200)
        #expect(response.headerFields[.init("x-my-header")!] == nil)
        #expect(response.headerFields[values: .init("Link")!].isEmpty)
        #expect(body == "final")
        // Without a handler they are dropped, and the connection is still reusable.
        #expect(try await Self.exchange(transport, origin).1 == "final")
        #expect(origin.connections == 1)
    }

    @Test("No connection could be made: unreachable")
    func refused() async throws {
        let closed = try await closedLoopbackURL()
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/")
        let unreachableFailure = await #expect(throws: TransportFailure.self) {
            _ = try await HTTP1Transport(pool: HTTP1ConnectionPool()).send(request, body: nil, baseURL: closed, operationID: "t")
        }
        #expect(unreachableFailure?.kind == .unreachable, "\(String(describing: unreachableFailure))")
    }

    @Test("The origin closes mid-body, or answers with something that is not HTTP: connectionLost")
    func connectionLost() async throws {
        let origin = try RawOrigin(responses: [
            "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
            "this is not HTTP\r\n\r\n",
            "",
        ])
        defer { origin.stop() }
        let transport = HTTP1Transport(pool: HTTP1ConnectionPool())
        for _ in 0..<2 {
            let connectionLostFailure = await #expect(throws: TransportFailure.self) {
                _ = try await Self.exchange(transport, origin)
            }
            #expect(connectionLostFailure?.kind == .connectionLost, "\(String(describing: connectionLostFailure))")
        }
        for _ in 0..<2 {
            let connectionLostFailure = await #expect(throws: TransportFailure.self) {
                _ = try await Self.exchange(transport, origin)
            }
            #expect(connectionLostFailure?.kind == .connectionLost, "\(String(describing: connectionLostFailure))")
        }
        #expect(origin.received.count == 4, "no replay on a new connection")
    }

    @Test("No final head within the head timeout: timedOut; a cancelled request: cancelled; neither connection is kept")
    func timeoutAndCancellation() async throws {
        let origin = try RawOrigin(responses: [RawOrigin.silence], keepAlive: true)
        defer { origin.stop() }
        let pool = HTTP1ConnectionPool()
        let timedOutFailure = await #expect(throws: TransportFailure.self) {
            _ = try await Self.exchange(HTTP1Transport(headTimeout: .milliseconds(200), pool: pool), origin)
        }
        #expect(timedOutFailure?.kind == .timedOut, "\(String(describing: timedOutFailure))")

        let transport = HTTP1Transport(headTimeout: .seconds(30), pool: pool)
        let task = Task { try await Self.exchange(transport, origin, path: "/second") }
        // Waits for this request by its path: the first one may never have left (under load its
        // 200 ms can pass while connecting, and then the deadline closes the connection first).
        let arrived = await eventually { origin.received.contains { $0.requestLine == "GET /second HTTP/1.1" } }
        #expect(arrived, "the request reached the origin")
        task.cancel()
        let cancelledFailure = await #expect(throws: TransportFailure.self) {
            _ = try await task.value
        }
        #expect(cancelledFailure?.kind == .cancelled, "\(String(describing: cancelledFailure))")
        let bothClosed = await eventually { pool.openConnections == 0 }
        #expect(bothClosed, "both connections closed")
    }
}
