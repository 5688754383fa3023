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
    /// HTTP/1 client codec and its idle guard — and request heads the way ``HTTP1Transport``
    /// writes them, except that heads are not validated again on the way out (the caller forwards
    /// a request NIO's server decoder and HTTP types have already checked). The channels are the
    /// caller's: it adds its handler, writes `HTTPClientRequestPart`s, reads
    /// `HTTPClientResponsePart`s, keeps them alive or closes them. They count against no limit of
    /// the pool.
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

        /// A request head for `target` (in origin form) after the origin's path prefix: `Host`
        /// first, then the (name, value) lines `add` appends (at most `lines` of them, no body:
        /// they must not frame one). Names must be valid field names, as `HTTPField.Name`s are:
        /// the lines become NIO's headers whole, without `HTTPHeaders.add`'s check of each name.
        public func head(_ method: HTTPMethod, target: String, lines: Int,
                         add: (inout [(String, String)]) -> Void) -> HTTPRequestHead {
            var headers: [(String, String)] = []
            headers.reserveCapacity(lines + 1)
            headers.append(("Host", host))
            add(&headers)
            return HTTPRequestHead(version: .http1_1, method: method, uri: prefix + target, headers: HTTPHeaders(headers))
        }

        /// Connects a channel to the origin on `loop`; `configure` runs on the loop once the codec
        /// is in place, to add the caller's handlers. The future fails when no connection can be
        /// made within the pool's connect timeout. For `https`, request parts written before the
        /// TLS handshake completes wait for it; a failed handshake (an untrusted chain, a pin
        /// that does not match) reaches the caller's handler as an error, and the channel closes.
        public func connect(on loop: any EventLoop,
                            configure: @escaping @Sendable (any Channel) throws -> Void) -> EventLoopFuture<any Channel> {
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
                        try HTTP1Connection.addCodec(sync, validating: false)
                        try configure(channel)
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
