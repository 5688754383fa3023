import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A byte-level HTTP/1.1 origin on 127.0.0.1 for checking what a proxy puts on the wire: it
/// records each request exactly as received (request line, header lines in order and spelling,
/// body) and answers with the raw bytes the test scripted, then closes the connection.
///
/// Every connection is served on a dedicated thread (never the cooperative pool), and the
/// listener stops after ``stop()`` or its idle timeout, so a test cannot hang on it.
public final class RawOrigin: Sendable {
    /// One request as it arrived.
    public struct Received: Sendable {
        /// `GET /path HTTP/1.1`, as sent.
        public var requestLine: String
        /// The header lines, in order, as sent (`Name: value`).
        public var headerLines: [String]
        /// The body bytes (by `Content-Length`; chunked bodies are not decoded).
        public var body: Data

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
    private let state = Mutex<(received: [Received], responses: [String], stopped: Bool)>(([], [], false))

    /// Listens on an ephemeral loopback port. `responses` are the raw answers (status line,
    /// headers, blank line, body), used in order; the last one repeats.
    public init(responses: [String]) throws {
        struct SocketError: Error, CustomStringConvertible { var description: String }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketError(description: "socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw SocketError(description: "bind/listen failed: errno \(errno)")
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        url = URL(string: "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))")!
        state.withLock { $0.responses = responses }
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// The requests received so far, in order.
    public var received: [Received] { state.withLock { $0.received } }

    /// Stops accepting (within about 100 ms) and closes the listener.
    public func stop() {
        state.withLock { $0.stopped = true }
    }

    private func acceptLoop() {
        let deadline = Date().addingTimeInterval(120)
        defer { close(listener) }
        while !state.withLock({ $0.stopped }), Date() < deadline {
            var pollFD = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&pollFD, 1, 100) > 0 else { continue }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            serve(connection)
        }
    }

    private func serve(_ connection: Int32) {
        defer { close(connection) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = Data()
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let separator = Data("\r\n\r\n".utf8)
        func readMore() -> Bool {
            let count = recv(connection, &chunk, chunk.count, 0)
            guard count > 0 else { return false }
            buffer.append(contentsOf: chunk[0..<count])
            return true
        }
        while buffer.range(of: separator) == nil { guard readMore(), buffer.count < 1_000_000 else { return } }
        let headEnd = buffer.range(of: separator)!
        let head = String(decoding: buffer[..<headEnd.lowerBound], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst()
        var request = Received(requestLine: requestLine, headerLines: lines, body: Data())
        let length = request.values("Content-Length").first.flatMap(Int.init) ?? 0
        while buffer.count - headEnd.upperBound < length { guard readMore() else { break } }
        request.body = Data(buffer[headEnd.upperBound...].prefix(length))
        let response = state.withLock { state -> String in
            state.received.append(request)
            return state.responses.count > 1 ? state.responses.removeFirst() : state.responses.first ?? ""
        }
        let bytes = Array(response.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return }
            sent += count
        }
    }
}
