import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A byte-level HTTP/1.1 origin on 127.0.0.1 for checking what a proxy puts on the wire: it
/// records each request exactly as received (request line, header lines in order and spelling,
/// body) and answers with the raw bytes the test scripted, then closes the connection (or, with
/// `keepAlive`, waits for the next request on it).
///
/// Connections are served on dedicated threads (never the cooperative pool): one after the other
/// on the listener's thread, or each on its own with `keepAlive`. The listener stops after
/// ``stop()`` or its idle timeout, and every wait is bounded, so a test cannot hang on it.
///
/// A scripted answer may contain ``gate``: the bytes before it are sent, then the rest once the
/// test calls ``openGate()``. An answer that is exactly ``silence`` is never sent.
public final class RawOrigin: Sendable {
    /// One request as it arrived.
    public struct Received: Sendable {
        /// `GET /path HTTP/1.1`, as sent.
        public var requestLine: String
        /// The header lines, in order, as sent (`Name: value`).
        public var headerLines: [String]
        /// The body bytes (by `Content-Length`, or decoded from chunked framing).
        public var body: Data
        /// Which connection it came on: 0 for the first the origin accepted, 1 for the next, ….
        public var connection = 0

        /// The method of the request line.
        public var method: String { String(requestLine.split(separator: " ").first ?? "") }
        /// The values of the header `name`, case-insensitively, in order.
        public func values(_ name: String) -> [String] {
            headerLines.compactMap { line in
                guard let colon = line.firstIndex(of: ":"),
                      line[..<colon].lowercased() == name.lowercased() else { return nil }
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
    }

    /// `http://127.0.0.1:PORT`.
    public let url: URL
    private let listener: Int32
    private let state = Mutex<(received: [Received], responses: [String], stopped: Bool, connections: Int, closed: Bool)>(
        ([], [], false, 0, false))
    private let keepAlive: Bool
    private let answersBeforeBody: Bool
    private let gateSemaphore = DispatchSemaphore(value: 0)

    /// In a scripted answer: send what comes before, then wait (at most 10 s) for ``openGate()``.
    public static let gate = "\u{1}GATE\u{1}"
    /// A scripted answer that is never sent: the origin reads the request and stays silent until
    /// ``stop()`` (at most 10 s), then closes the connection.
    public static let silence = "\u{1}SILENT\u{1}"

    /// Listens on an ephemeral loopback port. `responses` are the raw answers (status line,
    /// headers, blank line, body), used in order; the last one repeats. With `keepAlive`, a
    /// connection stays open after an answer for the next request (until the client closes it,
    /// 60 s pass without one, or ``stop()``). With `answersBeforeBody`, each request is answered
    /// as soon as its head has arrived, without waiting for its body (recorded empty), and the
    /// connection is closed after the answer.
    public init(responses: [String], keepAlive: Bool = false, answersBeforeBody: Bool = false) throws {
        self.keepAlive = keepAlive
        self.answersBeforeBody = answersBeforeBody
        struct SocketError: Error, CustomStringConvertible { var description: String }
        // Shared, so that ``stopRefusing()`` can keep the port once the listener is gone.
        let (fd, port) = try loopbackSocket(sharedPort: true)
        guard listen(fd, 16) == 0 else {
            close(fd)
            throw SocketError(description: "listen failed: errno \(errno)")
        }
        listener = fd
        url = URL(string: "http://127.0.0.1:\(port)")!
        state.withLock { $0.responses = responses }
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// The requests received so far, in order.
    public var received: [Received] { state.withLock { $0.received } }

    /// How many connections the origin has accepted.
    public var connections: Int { state.withLock { $0.connections } }

    /// Stops accepting (within about 100 ms) and closes the listener.
    public func stop() {
        state.withLock { $0.stopped = true }
        gateSemaphore.signal()
    }

    /// Stops as ``stop()`` does and returns once the listener is closed (within 10 s), with the
    /// port kept bound by a socket of this process that never listens, until the test process
    /// exits: a connection to ``url`` is refused from then on, and no other server can take the port.
    public func stopRefusing() async throws {
        let port = url.port ?? 0
        let (fd, _) = try loopbackSocket(sharedPort: true, port: port)
        heldSockets.withLock { $0.append(fd) }
        stop()
        _ = await eventually { self.state.withLock { $0.closed } }
    }

    /// Lets an answer waiting at ``gate`` go on.
    public func openGate() {
        gateSemaphore.signal()
    }

    private func acceptLoop() {
        let deadline = Date().addingTimeInterval(120)
        defer {
            close(listener)
            state.withLock { $0.closed = true }
        }
        while !state.withLock({ $0.stopped }), Date() < deadline {
            var pollFD = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&pollFD, 1, 100) > 0 else { continue }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            let number = state.withLock { state in
                state.connections += 1
                return state.connections - 1
            }
            if keepAlive {
                Thread { [self] in serve(connection, number: number) }.start()
            } else {
                serve(connection, number: number)
            }
        }
    }

    private func serve(_ connection: Int32, number: Int) {
        defer { close(connection) }
        var buffer = Data()
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let separator = Data("\r\n\r\n".utf8)
        let stopped = { self.state.withLock { $0.stopped } }
        // Waits for bytes in 100 ms steps, 60 s at most (a loaded machine can hold a client back
        // that long between connecting and sending), giving up once the origin is stopped.
        func readMore() -> Bool {
            for _ in 0..<600 {
                var pollFD = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
                if poll(&pollFD, 1, 100) > 0 {
                    let count = recv(connection, &chunk, chunk.count, 0)
                    guard count > 0 else { return false }
                    buffer.append(contentsOf: chunk[0..<count])
                    return true
                }
                if stopped() { return false }
            }
            return false
        }
        func write(_ text: Substring) -> Bool {
            let bytes = Array(text.utf8)
            var sent = 0
            while sent < bytes.count {
                let count = bytes[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard count > 0 else { return false }
                sent += count
            }
            return true
        }
        repeat {
            while buffer.range(of: separator) == nil { guard readMore(), buffer.count < 1_000_000 else { return } }
            let headEnd = buffer.range(of: separator)!
            let head = String(decoding: buffer[..<headEnd.lowerBound], as: UTF8.self)
            var lines = head.components(separatedBy: "\r\n")
            let requestLine = lines.removeFirst()
            var request = Received(requestLine: requestLine, headerLines: lines, body: Data(), connection: number)
            buffer = Data(buffer[headEnd.upperBound...])
            if answersBeforeBody {
                // The body (if any) is neither awaited nor read.
            } else if request.values("Transfer-Encoding").contains(where: { $0.lowercased().contains("chunked") }) {
                // size CRLF data CRLF … 0 CRLF CRLF (no trailers)
                while true {
                    while buffer.range(of: Data("\r\n".utf8)) == nil { guard readMore() else { return } }
                    let line = buffer.range(of: Data("\r\n".utf8))!
                    let sizeText = String(decoding: buffer[..<line.lowerBound], as: UTF8.self)
                    guard let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16) else { return }
                    while buffer.count < line.upperBound - buffer.startIndex + size + 2 { guard readMore() else { return } }
                    let start = line.upperBound
                    request.body.append(buffer[start..<(start + size)])
                    buffer = Data(buffer[(start + size + 2)...])
                    if size == 0 { break }
                }
            } else {
                let length = request.values("Content-Length").first.flatMap(Int.init) ?? 0
                while buffer.count < length { guard readMore() else { break } }
                request.body = Data(buffer.prefix(length))
                buffer = Data(buffer.dropFirst(length))
            }
            let response = state.withLock { state -> String in
                state.received.append(request)
                return state.responses.count > 1 ? state.responses.removeFirst() : state.responses.first ?? ""
            }
            if response.isEmpty { return }
            if response == Self.silence {
                for _ in 0..<100 where !stopped() {
                    var pollFD = pollfd(fd: connection, events: 0, revents: 0)
                    _ = poll(&pollFD, 1, 100)
                }
                return
            }
            if let gate = response.range(of: Self.gate) {
                guard write(response[..<gate.lowerBound]) else { return }
                _ = gateSemaphore.wait(timeout: .now() + 10)
                guard write(response[gate.upperBound...]) else { return }
            } else {
                guard write(response[...]) else { return }
            }
        } while keepAlive && !answersBeforeBody && !stopped()
    }
}
