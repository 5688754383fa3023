import Foundation
import Freshet
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSOCKS
import NIOSSL
import OpenAPIRuntime
import Synchronization

/// One HTTP/1.1 connection: the channel, its response parts read through `NIOAsyncChannel`'s
/// inbound stream, its request parts written straight to the channel.
final class HTTP1Connection: Sendable {
    let key: HTTP1ConnectionPool.Key
    let channel: any Channel
    private let reader: ResponseReader
    /// Set when a deadline closed the connection.
    private let timedOutFlag = Atomic<Bool>(false)
    /// Set when the current request's end has been written to the socket.
    private let requestWrittenFlag = Atomic<Bool>(false)
    /// The head deadline of the current exchange, until its final head arrives.
    private let headTimer = Mutex<Scheduled<Void>?>(nil)
    /// Set once the inbound stream can give nothing more: it ended or failed, or a read from it
    /// was cancelled (which ends it for good). The channel is being closed then, but may still
    /// look active for a moment: the pool goes by this flag too.
    private let deadFlag = Atomic<Bool>(false)
    /// The pool the connection goes back to (a cycle while it is parked there, broken when it closes).
    let pool: HTTP1ConnectionPool?
    /// How long making the connection took, reported to the `ExchangeReport` of its first exchange only.
    private let setup: (connect: Duration, tlsHandshake: Duration?)
    /// Set as its first exchange begins.
    private let carriedAny = Atomic<Bool>(false)

    private init(key: HTTP1ConnectionPool.Key, channel: any Channel,
                 inbound: NIOAsyncChannelInboundStream<HTTPClientResponsePart>, pool: HTTP1ConnectionPool?,
                 setup: (connect: Duration, tlsHandshake: Duration?)) {
        self.key = key
        self.channel = channel
        self.reader = ResponseReader(inbound.makeAsyncIterator())
        self.pool = pool
        self.setup = setup
    }

    /// The inbound stream of `asyncChannel`. The stream is only handed out within
    /// `executeThenClose`'s scope, which a task holds until the channel closes (the pool, a
    /// failure or a deadline closes it).
    private static func inbound(of asyncChannel: NIOAsyncChannel<HTTPClientResponsePart, Never>) async
        -> NIOAsyncChannelInboundStream<HTTPClientResponsePart>
    {
        await withCheckedContinuation { continuation in
            Task {
                try? await asyncChannel.executeThenClose { inbound in
                    continuation.resume(returning: inbound)
                    try await asyncChannel.channel.closeFuture.get()
                }
            }
        }
    }

    /// A deadline closed the connection.
    var timedOut: Bool { timedOutFlag.load(ordering: .relaxed) }

    /// The current request's end has been written to the socket.
    var requestWritten: Bool { requestWrittenFlag.load(ordering: .relaxed) }

    /// The connection may carry another exchange: open, and its inbound stream not ended.
    var isReusable: Bool { !deadFlag.load(ordering: .acquiring) && channel.isActive }

    /// The inbound stream can give nothing more: the connection is closed and never reused.
    private func markDead() {
        deadFlag.store(true, ordering: .releasing)
        close()
    }

    func close() {
        channel.close(promise: nil)
    }

    /// How `https` connections are secured: NIOSSL's context, and the verifier of the pool's pins
    /// (which then replaces BoringSSL's verification: see ``PinnedChainVerifier``).
    struct TLS: Sendable {
        var context: NIOSSLContext
        var verifier: PinnedChainVerifier?
    }

    /// Why the pins' verifier refused a connection's chain.
    final class Refusal: Sendable {
        let failure = Mutex<TLSTrustFailure?>(nil)
    }

    /// The channel's handlers for TLS (when `tls` is given) and HTTP/1.1, and its async channel:
    /// run on the channel's event loop, in its initializer or once a proxy's tunnel is open.
    private static func setUp(_ channel: any Channel, key: HTTP1ConnectionPool.Key, tls: TLS?, timeout: TimeAmount,
                              refusal: Refusal) throws -> Setup {
        let sync = channel.pipeline.syncOperations
        var opened: EventLoopFuture<Void>?
        if let tls {
            try addTLS(sync, key: key, tls: tls, refusal: refusal)
            let handshake = HTTP1HandshakeHandler(timeout: timeout)
            try sync.addHandler(handshake)
            opened = handshake.opened
        }
        try addCodec(sync)
        // Read-ahead stays bounded: no socket read while two parts or more are unread;
        // reading resumes once the reader has taken them all.
        let asyncChannel = try NIOAsyncChannel<HTTPClientResponsePart, Never>(
            wrappingChannelSynchronously: channel,
            configuration: .init(backPressureStrategy: .init(lowWatermark: 1, highWatermark: 2)))
        return Setup(asyncChannel: asyncChannel, opened: opened)
    }

    /// Adds NIOSSL's client handler for `key`'s host (SNI unless it is an IP address), verifying
    /// the chain with `tls`'s pins when it has some (a refusal's reason goes to `refusal`).
    static func addTLS(_ sync: ChannelPipeline.SynchronousOperations, key: HTTP1ConnectionPool.Key, tls: TLS,
                       refusal: Refusal) throws {
        let serverName: String? = key.host.isIPAddress ? nil : key.host
        guard let verifier = tls.verifier else {
            try sync.addHandler(NIOSSLClientHandler(context: tls.context, serverHostname: serverName))
            return
        }
        let host = key.host
        try sync.addHandler(NIOSSLClientHandler(
            context: tls.context, serverHostname: serverName,
            customVerificationCallbackWithMetadata: { presented, promise in
                promise.completeWithTask {
                    do throws(TLSTrustFailure) {
                        _ = try await verifier.verify(presented, host: host)
                        return .certificateVerified(VerificationMetadata(nil))
                    } catch {
                        refusal.failure.withLock { $0 = error }
                        return .failed
                    }
                }
            }))
    }

    /// Adds NIO's HTTP/1 client codec (framing fields as the request carries them; interim heads
    /// handed on), the request headers' validator (unless `validating` is false) and ``HTTP1IdleGuard``;
    /// with `rawExchange`, ``HTTP1RawExchange`` first, which it returns, in place of NIO's encoder
    /// (every request head is written as bytes through it).
    @discardableResult
    static func addCodec(_ sync: ChannelPipeline.SynchronousOperations, validating: Bool = true,
                         rawExchange: Bool = false) throws -> HTTP1RawExchange? {
        let decoder = HTTPResponseDecoder(leftOverBytesStrategy: .dropBytes, informationalResponseStrategy: .forward)
        let idleGuard = HTTP1IdleGuard()
        let exchange = rawExchange ? HTTP1RawExchange(decoder: decoder, idleGuard: idleGuard) : nil
        if let exchange {
            try sync.addHandler(exchange)
        } else {
            try sync.addHandler(HTTPRequestEncoder(configuration: {
                var configuration = HTTPRequestEncoder.Configuration()
                configuration.automaticallySetFramingHeaders = false
                return configuration
            }()))
        }
        try sync.addHandler(ByteToMessageHandler(decoder))
        if validating { try sync.addHandler(NIOHTTPRequestHeadersValidator()) }
        try sync.addHandler(idleGuard)
        return exchange
    }

    /// A connection's async channel, and the future of its TLS handshake (`nil` without TLS).
    private struct Setup: Sendable {
        var asyncChannel: NIOAsyncChannel<HTTPClientResponsePart, Never>
        var opened: EventLoopFuture<Void>?
    }

    static func connect(_ key: HTTP1ConnectionPool.Key, tls: TLS?, group: any EventLoopGroup,
                        timeout: TimeAmount, pool: HTTP1ConnectionPool? = nil) async throws -> HTTP1Connection {
        // Why the pins' verifier refused the chain: NIOSSL only reports that the handshake failed.
        let refusal = Refusal()
        // Through a forward proxy the connection is made to the proxy; a tunnel (CONNECT, SOCKS5)
        // is opened first, and TLS and HTTP/1.1 are set up once it is (ForwardProxy.swift).
        let tunnel = key.proxy.flatMap { $0.tunnels(key.scheme) ? $0 : nil }
        let endpoint = key.proxy.map { (host: $0.host, port: $0.port) } ?? (host: key.host, port: key.port)
        let started = ContinuousClock.now
        // The handshake's future comes out of the initializer: looked up afterwards, its handler
        // may already be gone with a connection the origin (or a failed handshake) closed at once.
        let made: (channel: any Channel, setup: Setup?, tunnel: EventLoopFuture<Void>?)
        let initialize: @Sendable (any Channel) -> EventLoopFuture<(any Channel, Setup?, EventLoopFuture<Void>?)> = { channel in
            channel.eventLoop.makeCompletedFuture {
                guard let tunnel else {
                    return (channel, try setUp(channel, key: key, tls: tls, timeout: timeout, refusal: refusal), nil)
                }
                let sync = channel.pipeline.syncOperations
                if tunnel.kind == .socks5 {
                    let address: SOCKSAddress = key.host.socketAddress(port: key.port).map { .address($0) }
                        ?? .domain(key.host, port: key.port)
                    try sync.addHandler(SOCKSClientHandler(targetAddress: address))
                }
                let handler = HTTP1TunnelHandler(proxy: tunnel, host: key.host, port: key.port, timeout: timeout)
                try sync.addHandler(handler)
                return (channel, nil, handler.established)
            }
        }
        do {
            let bootstrap = ClientBootstrap(group: group).connectTimeout(timeout)
            // An IP literal is connected to as it is: NIO's resolver would call getaddrinfo on
            // another thread and race the address families for nothing.
            if let address = endpoint.host.socketAddress(port: endpoint.port) {
                made = try await bootstrap.connect(to: address, channelInitializer: initialize)
            } else {
                made = try await bootstrap.connect(host: endpoint.host, port: endpoint.port, channelInitializer: initialize)
            }
        } catch {
            if let proxy = key.proxy { throw proxy.unreachable(error) }
            throw error
        }
        let channel = made.channel
        let asyncChannel: NIOAsyncChannel<HTTPClientResponsePart, Never>
        let opened: EventLoopFuture<Void>?
        if let setup = made.setup {
            (asyncChannel, opened) = (setup.asyncChannel, setup.opened)
        } else {
            do {
                try await made.tunnel?.get()
                let setup = try await channel.eventLoop.submit {
                    try setUp(channel, key: key, tls: tls, timeout: timeout, refusal: refusal)
                }.get()
                (asyncChannel, opened) = (setup.asyncChannel, setup.opened)
            } catch {
                channel.close(promise: nil)
                throw error
            }
        }
        // Through a proxy, "connected" includes opening the tunnel: the origin can be spoken to.
        let connected = ContinuousClock.now
        do {
            if let opened {
                // A TLS handshake that fails (a certificate not trusted, …) or times out throws here.
                try await opened.get()
            } else if !channel.isActive {
                throw ConnectionClosed()
            }
            let setup = (connect: connected - started, tlsHandshake: opened == nil ? nil : ContinuousClock.now - connected)
            return HTTP1Connection(key: key, channel: channel, inbound: await inbound(of: asyncChannel), pool: pool,
                                   setup: setup)
        } catch is ConnectionClosed {
            // The origin closed the connection as it opened, without an error: nothing was sent.
            channel.close(promise: nil)
            throw TransportFailure(.unreachable, reason: "the connection closed as soon as it opened")
        } catch {
            channel.close(promise: nil)
            // The handshake failed because the pins' verifier refused the chain: say why.
            if let refused = refusal.failure.withLock({ $0 }) { throw refused }
            throw error
        }
    }

    /// Runs one exchange: sends the request, relays interim heads, and returns the final head
    /// with the body streaming from this connection. Failures are thrown as ``StaleConnection``.
    func exchange(_ plan: ExchangePlan) async throws -> (HTTPResponse, HTTPBody?) {
        // The phases go to a listening report: making the connection on its first exchange only.
        let first = !carriedAny.exchange(true, ordering: .relaxed)
        let report = ExchangeReport.current
        report?.recordConnection(connect: first ? setup.connect : nil, tlsHandshake: first ? setup.tlsHandshake : nil)
        let exchange = HTTP1Exchange(connection: self, closeAfter: plan.closeAfter, readTimeout: plan.readTimeout,
                                     report: report)
        do {
            try await begin(plan.head, deadline: plan.deadline, noBody: plan.body == nil)
            if let body = plan.body {
                exchange.startUpload(body, length: body.length)
            } else {
                exchange.uploadFinished(ok: true)
            }
            return try await exchange.readHead(isHead: plan.isHead, interim: plan.interim)
        } catch {
            headReceived()
            exchange.abort()
            let timedOut = self.timedOut
            throw StaleConnection(underlying: error, timedOut: timedOut,
                                  replayable: !timedOut && !exchange.receivedAny && !exchange.bodyFailed
                                      && TransportErrorClassifier.isClose(error))
        }
    }

    /// Arms the head deadline and writes the request head (and its end when there is no body).
    private func begin(_ head: HTTPRequestHead, deadline: NIODeadline, noBody: Bool) async throws {
        timedOutFlag.store(false, ordering: .relaxed)
        requestWrittenFlag.store(false, ordering: .relaxed)
        let timer = channel.eventLoop.scheduleTask(deadline: deadline) { [self] in timeOut() }
        headTimer.withLock { $0 = timer }
        try await write(noBody ? [.head(head), .end(nil)] : [.head(head)])
    }

    /// The final head arrived (or the exchange failed): the head deadline no longer applies.
    func headReceived() {
        headTimer.withLock { timer in
            timer?.cancel()
            timer = nil
        }
    }

    /// A deadline passed: closing the channel ends the pending read.
    private func timeOut() {
        timedOutFlag.store(true, ordering: .relaxed)
        close()
    }

    /// The next response part. `readTimeout`: how long the origin may stay silent meanwhile
    /// (`nil`: the head deadline applies). Parts that arrived before the connection closed are
    /// still delivered; then the read fails with the error that ended the connection, or with
    /// `ConnectionClosed`.
    func nextPart(readTimeout: TimeAmount?) async throws -> HTTPClientResponsePart {
        let timer = readTimeout.map { channel.eventLoop.scheduleTask(in: $0) { [self] in timeOut() } }
        defer { timer?.cancel() }
        let reader = self.reader
        let part: HTTPClientResponsePart?
        do {
            part = try await withTaskCancellationHandler {
                try await reader.next()
            } onCancel: {
                // A cancelled read ends the stream for good, even when it returns a part.
                self.markDead()
            }
        } catch {
            markDead()
            throw error
        }
        guard let part else {
            markDead()
            throw ConnectionClosed()
        }
        return part
    }

    /// Writes parts of the request in one flush, waiting until they are written to the socket;
    /// a request's end, once written, is noted in ``requestWritten``.
    func write(_ parts: [HTTPClientRequestPart]) async throws {
        let channel = self.channel
        try await withTaskCancellationHandler {
            for part in parts.dropLast() { channel.write(part, promise: nil) }
            let written = channel.eventLoop.makePromise(of: Void.self)
            if case .end = parts[parts.count - 1] {
                // Noted on the event loop as the write completes (the callback is registered
                // before the write is issued), so before any response part read after it: a
                // response ending right after the request can then release the connection. (The
                // last body bytes of a request go out together with its end.)
                written.futureResult.whenSuccess { [self] in requestWrittenFlag.store(true, ordering: .relaxed) }
            }
            channel.writeAndFlush(parts[parts.count - 1], promise: written)
            try await written.futureResult.get()
        } onCancel: {
            self.markDead()
        }
    }
}

/// The inbound stream's iterator, read by one exchange at a time (the pool hands a connection to
/// one exchange, which reads its parts in order).
private final class ResponseReader: @unchecked Sendable {
    private var iterator: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator

    init(_ iterator: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator) {
        self.iterator = iterator
    }

    func next() async throws -> HTTPClientResponsePart? {
        try await iterator.next()
    }
}

extension String {
    /// An IPv4 or IPv6 literal (which TLS's SNI must not carry).
    var isIPAddress: Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, self, &v4) == 1 || inet_pton(AF_INET6, self, &v6) == 1
    }

    /// The address at `port` when this is an IPv4 or IPv6 literal; `nil` for a name.
    func socketAddress(port: Int) -> SocketAddress? {
        isIPAddress ? try? SocketAddress(ipAddress: self, port: port) : nil
    }
}
