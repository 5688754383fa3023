import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix

extension HTTP1ConnectionPool {
    /// The way to one origin for a caller that runs its exchanges itself, on an event loop, with
    /// no task: `freshet proxy` forwards the requests it knows it will not store this way.
    ///
    /// A route makes channels the way the pool makes its own — TCP with the pool's connect
    /// timeout, TLS for `https` (the pool's trust roots, ALPN `http/1.1`, its pins checked), NIO's
    /// HTTP/1 response decoder and its idle guard — and request heads with the fields
    /// ``HTTP1Transport`` writes, except that heads are not validated again on the way out (the
    /// caller forwards a request NIO's server decoder and HTTP types have already checked). The
    /// channels are the caller's: it adds its handler, writes request heads as bytes through the
    /// channel's `HTTP1RawExchange` (which reads a `304` itself), reads the other answers as
    /// `HTTPClientResponsePart`s, keeps the channels alive or closes them. They count against no
    /// limit of the pool.
    public struct LoopRoute: Sendable {
        let pool: HTTP1ConnectionPool
        let key: Key
        /// The origin's path prefix, without a trailing slash (empty for none).
        let prefix: String
        /// The `Host` field of every head, made once.
        let host: String
        /// The origin's address when its host is an IP literal: connected to without a lookup.
        let address: SocketAddress?

        init(pool: HTTP1ConnectionPool, key: Key, prefix: String) {
            self.pool = pool
            self.key = key
            self.prefix = prefix
            host = HTTP1Transport.hostField(for: key)
            address = key.host.socketAddress(port: key.port)
        }

        /// The bytes of a `GET` (or, when `isHead`, `HEAD`) request head for `target` (in origin
        /// form) after the origin's path prefix: `Host` first, then the (name, value) lines `add`
        /// appends (at most `lines` of them, no body: they must not frame one), for
        /// `HTTP1RawExchange.write(_:isHead:conditional:promise:)`. Names and values must be
        /// valid, as `HTTPField`s' are: nothing is checked again.
        package func headBytes(isHead: Bool, target: String, lines: Int, add: (inout [(String, String)]) -> Void) -> ByteBuffer {
            var headers: [(String, String)] = []
            headers.reserveCapacity(lines + 1)
            headers.append(("Host", host))
            add(&headers)
            return ByteBuffer(headStartLine: (isHead ? "HEAD " : "GET ") + prefix + target + " HTTP/1.1\r\n", lines: headers)
        }

        /// Connects a channel to the origin on `loop`; `configure` runs on the loop once the codec
        /// is in place, with the connection's `HTTP1RawExchange`, to add the caller's handlers. The future fails when no connection can be
        /// made within the pool's connect timeout. For `https`, request parts written before the
        /// TLS handshake completes wait for it; a failed handshake (an untrusted chain, a pin
        /// that does not match) reaches the caller's handler as an error, and the channel closes.
        package func connect(on loop: any EventLoop,
                            configure: @escaping @Sendable (any Channel, HTTP1RawExchange) throws -> Void) -> EventLoopFuture<any Channel> {
            let key = self.key
            let tls: HTTP1Connection.TLS?
            do {
                tls = key.scheme == "https" ? try pool.makeTLSContext() : nil
            } catch {
                return loop.makeFailedFuture(error)
            }
            let bootstrap = ClientBootstrap(group: loop)
                .connectTimeout(TimeAmount(pool.configuration.connectTimeout))
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let sync = channel.pipeline.syncOperations
                        if let tls { try HTTP1Connection.addTLS(sync, key: key, tls: tls, refusal: .init()) }
                        let exchange = try HTTP1Connection.addCodec(sync, validating: false, rawExchange: true)!
                        try configure(channel, exchange)
                    }
                }
            if let address { return bootstrap.connect(to: address) }
            return bootstrap.connect(host: key.host, port: key.port)
        }
    }

    /// The route to `origin` (an `http` or `https` URL, whose path prefixes every target), or
    /// `nil` when requests to it go through a forward proxy (the pool's
    /// ``Configuration/proxies``) or it is not such a URL.
    public func loopRoute(to origin: URL) -> LoopRoute? {
        guard let components = URLComponents(url: origin, resolvingAgainstBaseURL: false),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.host, !host.isEmpty,
              (try? configuration.proxies.proxy(for: origin)) == .some(nil) else { return nil }
        var prefix = components.percentEncodedPath
        while prefix.hasSuffix("/") { prefix.removeLast() }
        return LoopRoute(pool: self, key: Key(scheme: scheme, host: host, port: components.port ?? (scheme == "https" ? 443 : 80)),
                         prefix: prefix)
    }
}
