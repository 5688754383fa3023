import Freshet
import HTTPTypes
import NIOCore
import NIOHTTP1
import OpenAPIRuntime
import Synchronization

/// What one exchange sends and how it waits.
struct ExchangePlan: Sendable {
    var head: HTTPRequestHead
    var body: HTTPBody?
    var isHead: Bool
    var closeAfter: Bool
    var deadline: NIODeadline
    var readTimeout: TimeAmount
    var interim: InterimResponses.Handler?
}

/// One request/response on a connection: decides, once both directions are done, whether the
/// connection goes back to the pool or is closed. Its response body closes the connection when
/// dropped unfinished.
final class HTTP1Exchange: Sendable {
    let connection: HTTP1Connection
    private let readTimeout: TimeAmount
    private struct State: Sendable {
        var uploadDone = false
        var uploadFailed = false
        var bodyFailed = false
        var responseDone = false
        var reusable: Bool
        var settled = false
        var upload: Task<Void, Never>?
        /// Some of the response (an interim head at least) has arrived.
        var receivedAny = false
    }
    private let state: Mutex<State>
    /// Where the time to the response's first byte goes, and when the exchange began.
    private let firstByte: (report: ExchangeReport, since: ContinuousClock.Instant)?

    init(connection: HTTP1Connection, closeAfter: Bool, readTimeout: TimeAmount, report: ExchangeReport? = nil) {
        self.connection = connection
        self.readTimeout = readTimeout
        state = Mutex(State(reusable: !closeAfter))
        firstByte = report.map { ($0, ContinuousClock.now) }
    }

    deinit {
        // A response body dropped before its end: the connection cannot be reused.
        let settled = state.withLock { $0.settled }
        if !settled { abort() }
    }

    /// Some of the response has arrived.
    var receivedAny: Bool { state.withLock { $0.receivedAny } }

    /// Whether the request's own body failed (it threw, or its length was not the announced
    /// one), as opposed to the connection: such an exchange is never sent again.
    var bodyFailed: Bool { state.withLock { $0.bodyFailed } }

    func startUpload(_ body: HTTPBody, length: HTTPBody.Length) {
        /// A write to the connection failed (the connection's fault, not the body's).
        struct WriteFailed: Error {}
        let task = Task { [self] in
            func write(_ parts: [HTTPClientRequestPart]) async throws {
                do { try await connection.write(parts) } catch { throw WriteFailed() }
            }
            var sent: Int64 = 0
            do {
                for try await chunk in body {
                    sent += Int64(chunk.count)
                    let part = HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: chunk)))
                    if case .known(let expected) = length {
                        if sent > expected { throw BodyLengthMismatch() }
                        if sent == expected {
                            // The last bytes and the end in one flush: the origin cannot answer
                            // before the end is written, which lets the connection be reused.
                            try await write([part, .end(nil)])
                            uploadFinished(ok: true)
                            return
                        }
                    }
                    try await write([part])
                }
                if case .known(let expected) = length, sent != expected { throw BodyLengthMismatch() }
                try await write([.end(nil)])
                uploadFinished(ok: true)
            } catch is WriteFailed {
                uploadFinished(ok: false)
            } catch {
                uploadFinished(ok: false, bodyFailed: true)
            }
        }
        state.withLock { $0.upload = task }
    }

    func uploadFinished(ok: Bool, bodyFailed: Bool = false) {
        let settle = state.withLock { state -> Bool? in
            state.uploadDone = true
            if !ok {
                state.uploadFailed = true
                state.bodyFailed = bodyFailed
                state.reusable = false
            }
            return Self.settle(&state, force: !ok)
        }
        apply(settle)
    }

    /// `nil`: not yet; `true`: back to the pool; `false`: close.
    private static func settle(_ state: inout State, force: Bool) -> Bool? {
        guard !state.settled else { return nil }
        if force {
            state.settled = true
            return false
        }
        guard state.responseDone else { return nil }
        state.settled = true
        return state.uploadDone && state.reusable
    }

    private func apply(_ settle: Bool?) {
        guard let settle else { return }
        if settle, let pool = connection.pool {
            pool.release(connection)
        } else {
            connection.close()
            state.withLock { $0.upload }?.cancel()
        }
    }

    /// Closes the connection unless the exchange is already settled.
    func abort() {
        let settle = state.withLock { Self.settle(&$0, force: true) }
        apply(settle)
    }

    private func responseFinished() {
        let requestWritten = connection.requestWritten
        let settle = state.withLock { state -> Bool? in
            state.responseDone = true
            // The upload task may not have noted its end yet; it is written if the connection says so.
            if requestWritten { state.uploadDone = true }
            // An origin that answered before reading the whole request body gets the connection closed.
            if !state.uploadDone { return Self.settle(&state, force: true) }
            return Self.settle(&state, force: false)
        }
        apply(settle)
    }

    /// The next response part, read from the connection.
    private func nextPart(readTimeout: TimeAmount?) async throws -> HTTPClientResponsePart {
        let part = try await connection.nextPart(readTimeout: readTimeout)
        state.withLock { $0.receivedAny = true }
        return part
    }

    /// Reads up to the final head, handing interim heads to `interim`.
    func readHead(isHead: Bool, interim: InterimResponses.Handler?) async throws -> (HTTPResponse, HTTPBody?) {
        var relayed = 0
        var firstByte = self.firstByte
        while true {
            let part = try await nextPart(readTimeout: nil)
            if let mark = firstByte {
                mark.report.recordTimeToFirstByte(ContinuousClock.now - mark.since)
                firstByte = nil
            }
            guard case .head(let head) = part else {
                throw HTTPParserError.invalidInternalState
            }
            let code = Int(head.status.code)
            if code >= 100, code < 200, code != 101 {
                // 100 Continue concerns this hop only; a flood of interim heads is not relayed past 32.
                if code != 100, let interim, relayed < 32 {
                    relayed += 1
                    await interim.receive(HTTPResponse(head))
                }
                continue
            }
            connection.headReceived()
            let response = HTTPResponse(head)
            if !head.isKeepAlive || code == 101 {
                state.withLock { $0.reusable = false }
            }
            if code == 101 {
                responseFinished()
                abort()
                return (response, nil)
            }
            let length = response.announcedBodyLength
            if isHead || code == 204 || code == 304 {
                // No body: its end follows the head at once.
                while case .body = try await nextPart(readTimeout: readTimeout) {}
                responseFinished()
                return (response, isHead ? nil : HTTPBody(EmptyChunks(), length: length, iterationBehavior: .single))
            }
            return (response, HTTPBody(ResponseChunks(exchange: self), length: length, iterationBehavior: .single))
        }
    }

    /// The next body chunk, `nil` at the end of the body.
    func nextChunk() async throws -> HTTPBody.ByteChunk? {
        do {
            switch try await nextPart(readTimeout: readTimeout) {
            case .body(let buffer):
                return HTTPBody.ByteChunk(buffer.readableBytesView)
            case .end:
                responseFinished()
                return nil
            case .head:
                throw HTTPParserError.invalidInternalState
            }
        } catch {
            abort()
            throw HTTP1Transport.failure(error, sent: true, timedOut: connection.timedOut)
        }
    }
}

/// The body of a response, read from its exchange's connection as it is asked for.
struct ResponseChunks: AsyncSequence, Sendable {
    typealias Element = HTTPBody.ByteChunk
    let exchange: HTTP1Exchange

    struct AsyncIterator: AsyncIteratorProtocol {
        let exchange: HTTP1Exchange
        var done = false

        mutating func next() async throws -> HTTPBody.ByteChunk? {
            guard !done else { return nil }
            if let chunk = try await exchange.nextChunk() { return chunk }
            done = true
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(exchange: exchange) }
}

/// The body of a response that has none (`204`, `304`).
struct EmptyChunks: AsyncSequence, Sendable {
    typealias Element = HTTPBody.ByteChunk
    struct AsyncIterator: AsyncIteratorProtocol {
        mutating func next() async throws -> HTTPBody.ByteChunk? { nil }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator() }
}
