import Foundation
import Freshet
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import OpenAPIRuntime
import Synchronization

/// One HTTP/1.1 connection: the channel, and its handler on the channel's event loop.
final class HTTP1Connection: Sendable {
    let key: HTTP1ConnectionPool.Key
    let channel: any Channel
    private let handler: NIOLoopBound<HTTP1ConnectionHandler>
    /// Set when a deadline closed the connection.
    let flag: TimedOutFlag
    /// The pool the connection goes back to (a cycle while it is parked there, broken when it closes).
    let pool: HTTP1ConnectionPool?

    private init(key: HTTP1ConnectionPool.Key, channel: any Channel, handler: NIOLoopBound<HTTP1ConnectionHandler>,
                 flag: TimedOutFlag, pool: HTTP1ConnectionPool?) {
        self.key = key
        self.channel = channel
        self.handler = handler
        self.flag = flag
        self.pool = pool
    }

    /// A deadline closed the connection.
    var timedOut: Bool { flag.load() }

    var isActive: Bool { channel.isActive }

    func close() {
        channel.close(promise: nil)
    }

    static func connect(_ key: HTTP1ConnectionPool.Key, tls: NIOSSLContext?, group: any EventLoopGroup,
                        timeout: TimeAmount, pool: HTTP1ConnectionPool? = nil) async throws -> HTTP1Connection {
        let serverName: String? = key.host.isIPAddress ? nil : key.host
        let flag = TimedOutFlag()
        // The handler comes out of the initializer: looked up afterwards, it may already be gone
        // with a connection the origin (or a failed TLS handshake) closed at once.
        let (channel, handler) = try await ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelOption(ChannelOptions.autoRead, value: false)
            .connect(host: key.host, port: key.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if let tls {
                        try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    }
                    let encoder = HTTPRequestEncoder(configuration: {
                        var configuration = HTTPRequestEncoder.Configuration()
                        configuration.automaticallySetFramingHeaders = false
                        return configuration
                    }())
                    let decoder = ByteToMessageHandler(
                        HTTPResponseDecoder(leftOverBytesStrategy: .dropBytes, informationalResponseStrategy: .forward))
                    let handler = HTTP1ConnectionHandler(tls: tls != nil, flag: flag)
                    try sync.addHandlers([encoder, decoder, NIOHTTPRequestHeadersValidator(), handler])
                    return (channel, NIOLoopBound(handler, eventLoop: channel.eventLoop))
                }
            }
        do {
            let handshakeTimeout = tls != nil ? timeout : nil
            try await channel.eventLoop.flatSubmit { handler.value.opened(handshakeTimeout: handshakeTimeout) }.get()
            return HTTP1Connection(key: key, channel: channel, handler: handler, flag: flag, pool: pool)
        } catch is ConnectionClosed {
            // The origin closed the connection as it opened, without an error: nothing was sent.
            channel.close(promise: nil)
            throw TransportFailure(.unreachable, reason: "the connection closed as soon as it opened")
        } catch {
            // A TLS handshake that failed (a certificate not trusted, …) or timed out.
            channel.close(promise: nil)
            throw error
        }
    }

    /// Parks the connection in the pool: any byte or close from the origin now closes it.
    func park() {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.park() }
    }

    /// Runs one exchange: sends the request, relays interim heads, and returns the final head
    /// with the body streaming from this connection. Failures are thrown as ``StaleConnection``.
    func exchange(_ plan: ExchangePlan) async throws -> (HTTPResponse, HTTPBody?) {
        let exchange = HTTP1Exchange(connection: self, closeAfter: plan.closeAfter, readTimeout: plan.readTimeout)
        let handler = self.handler
        let loop = channel.eventLoop
        do {
            try await withTaskCancellationHandler {
                try await loop.flatSubmit { handler.value.begin(plan.head, deadline: plan.deadline, noBody: plan.body == nil) }.get()
            } onCancel: {
                self.close()
            }
            if let body = plan.body {
                exchange.startUpload(body, length: body.length)
            } else {
                exchange.uploadFinished(ok: true)
            }
            return try await exchange.readHead(isHead: plan.isHead, interim: plan.interim)
        } catch {
            exchange.abort()
            let timedOut = self.timedOut
            throw StaleConnection(underlying: error, timedOut: timedOut,
                                  replayable: !timedOut && !exchange.receivedAny && !exchange.bodyFailed
                                      && TransportErrorClassifier.isClose(error))
        }
    }

    /// The response parts received since the last call (at least one), waiting for them.
    /// `readTimeout`: how long the origin may stay silent meanwhile (`nil`: the head deadline applies).
    func nextParts(readTimeout: TimeAmount?) async throws -> Parts {
        let handler = self.handler
        let loop = channel.eventLoop
        return try await withTaskCancellationHandler {
            try await loop.flatSubmit { handler.value.next(readTimeout: readTimeout) }.get()
        } onCancel: {
            self.close()
        }
    }

    /// The final head arrived: the head deadline no longer applies.
    func headReceived() {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.headReceived() }
    }

    /// Writes parts of the request body in one flush, waiting until they are written.
    func write(_ parts: [HTTPClientRequestPart]) async throws {
        let channel = self.channel
        try await withTaskCancellationHandler {
            for part in parts.dropLast() { channel.write(part, promise: nil) }
            try await channel.writeAndFlush(parts[parts.count - 1]).get()
        } onCancel: {
            channel.close(promise: nil)
        }
    }
}

/// Response parts handed from the event loop to the exchange.
struct Parts: Sendable {
    /// At least one part.
    var parts: [HTTPClientResponsePart]
    /// Whether the request's end had been written to the socket by then.
    var requestWritten: Bool
}

/// Set on the event loop when a deadline closed the connection; read anywhere.
final class TimedOutFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func load() -> Bool { flag.load(ordering: .relaxed) }
    func set() { flag.store(true, ordering: .relaxed) }
    func reset() { flag.store(false, ordering: .relaxed) }
}

extension String {
    /// An IPv4 or IPv6 literal (which TLS's SNI must not carry).
    fileprivate var isIPAddress: Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, self, &v4) == 1 || inet_pton(AF_INET6, self, &v6) == 1
    }
}
