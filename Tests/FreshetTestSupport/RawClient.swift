import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A byte-level HTTP client on 127.0.0.1 for checking what a server puts on the wire, interim
/// (`1xx`) responses included: it sends the bytes a test gives and hands back what arrived.
///
/// Reads run on a dedicated thread (never the cooperative pool) and are bounded: a read gives up
/// after 10 s without bytes.
public final class RawClient: Sendable {
    private let fd: Int32
    private let buffer = Mutex(Data())
    private let closed = Mutex(false)
    private let ended = Mutex(false)

    /// Connects to `127.0.0.1:port`.
    public init(port: Int) throws {
        struct SocketError: Error, CustomStringConvertible { var description: String }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketError(description: "socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            socketClose(fd)
            throw SocketError(description: "connect to port \(port) failed: errno \(errno)")
        }
        self.fd = fd
    }

    deinit {
        if !closed.withLock({ $0 }) { socketClose(fd) }
    }

    /// Sends `text` as UTF-8.
    public func send(_ text: String) {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { socketSend(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            sent += count
        }
    }

    /// Sends `bytes`, waiting up to `stall` seconds each time the connection takes nothing;
    /// returns how many it took — fewer than all when the server stopped reading.
    public func send(_ bytes: [UInt8], stallingAfter stall: Int) -> Int {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { socketSend(fd, $0.baseAddress, $0.count, flags: Int32(MSG_DONTWAIT)) }
            if count > 0 {
                sent += count
                continue
            }
            guard count < 0, errno == EAGAIN || errno == EWOULDBLOCK else { break }
            var pollFD = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard poll(&pollFD, 1, Int32(stall * 1000)) > 0 else { break }
        }
        return sent
    }

    /// Reads until `done` holds for everything received so far, the server closes the connection,
    /// or 10 s pass without bytes; returns everything received so far (as text).
    public func read(until done: @escaping @Sendable (String) -> Bool = { _ in false }) async -> String {
        await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
            Thread { [self] in
                var chunk = [UInt8](repeating: 0, count: 65_536)
                while !done(text) {
                    var pollFD = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    guard poll(&pollFD, 1, 10_000) > 0 else { break }
                    let count = recv(fd, &chunk, chunk.count, 0)
                    guard count > 0 else {
                        ended.withLock { $0 = true }
                        break
                    }
                    buffer.withLock { $0.append(contentsOf: chunk[0..<count]) }
                }
                continuation.resume(returning: text)
            }.start()
        }
    }

    /// Everything received so far, as text.
    public var text: String { String(decoding: buffer.withLock { $0 }, as: UTF8.self) }

    /// Whether a read found the connection ended by the server (not 10 s of silence).
    public var serverClosed: Bool { ended.withLock { $0 } }

    /// Closes the connection.
    public func close() {
        let wasClosed = closed.withLock { closed in
            defer { closed = true }
            return closed
        }
        if !wasClosed { socketClose(fd) }
    }
}

private func socketSend(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int, flags: Int32 = 0) -> Int {
    send(fd, bytes, count, Int32(MSG_NOSIGNAL) | flags)
}

private func socketClose(_ fd: Int32) {
    close(fd)
}
