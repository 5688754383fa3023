import Freshet
import NIOCore
import NIOSOCKS

/// Opens a tunnel to an origin through a forward proxy, before anything else is in the pipeline:
/// an HTTP proxy is sent `CONNECT host:port` (with `Proxy-Authorization` when the proxy has
/// credentials) and must answer `2xx`; behind NIOSOCKS' `SOCKSClientHandler` it waits for the
/// SOCKS5 handshake's end. ``established`` then completes, and the connection carries TLS and
/// HTTP/1.1 to the origin as a direct one does; it fails with a ``ForwardProxyFailure`` when the
/// proxy refuses, or with an `unreachable` `TransportFailure` naming the proxy when it closes the
/// connection or takes longer than `timeout`.
final class HTTP1TunnelHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let proxy: ForwardProxy
    private let host: String
    private let port: Int
    private let timeout: TimeAmount
    private var promise: EventLoopPromise<Void>?
    private var timer: Scheduled<Void>?
    private var started = false
    /// The proxy's answer to `CONNECT`, until its head is complete.
    private var answer: ByteBuffer?
    /// Set in `handlerAdded`, which runs in the channel's initializer.
    private(set) var established: EventLoopFuture<Void>?

    /// The longest answer head to `CONNECT` read.
    private static let maxHeadBytes = 16 * 1024

    init(proxy: ForwardProxy, host: String, port: Int, timeout: TimeAmount) {
        self.proxy = proxy
        self.host = host
        self.port = port
        self.timeout = timeout
    }

    /// `host:port` as the request target of `CONNECT` (an IPv6 address in brackets).
    private var target: String { "\(host.contains(":") ? "[\(host)]" : host):\(port)" }

    func handlerAdded(context: ChannelHandlerContext) {
        let promise = context.eventLoop.makePromise(of: Void.self)
        self.promise = promise
        established = promise.futureResult
        if context.channel.isActive { start(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        fail(TransportFailure(.unreachable, reason: "the proxy \(proxy) closed the connection before the tunnel to \(target) was open"))
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        let timeout = self.timeout
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
            fail(TransportFailure(.unreachable, reason: "the proxy \(proxy) did not open the tunnel to \(target) in time"))
            context.close(promise: nil)
        }
        guard proxy.kind == .http else { return }
        var head = "CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n"
        if let authorization = proxy.proxyAuthorization { head += "Proxy-Authorization: \(authorization)\r\n" }
        head += "\r\n"
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: head)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard promise != nil, proxy.kind == .http else {
            context.fireChannelRead(data)
            return
        }
        var bytes = unwrapInboundIn(data)
        answer.setOrWriteBuffer(&bytes)
        guard let buffer = answer else { return }
        let view = buffer.readableBytesView
        guard let end = view.firstRange(of: [13, 10, 13, 10]) else {
            if buffer.readableBytes > Self.maxHeadBytes {
                fail(ForwardProxyFailure(proxy: proxy, target: target, status: nil,
                                         reason: "answered CONNECT \(target) with a head longer than 16 KiB"))
                context.close(promise: nil)
            }
            return
        }
        let head = String(decoding: view[view.startIndex..<end.lowerBound], as: UTF8.self)
        let statusLine = head.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            fail(ForwardProxyFailure(proxy: proxy, target: target, status: nil,
                                     reason: "answered CONNECT \(target) with something that is not HTTP/1.1"))
            context.close(promise: nil)
            return
        }
        guard (200..<300).contains(status) else {
            fail(ForwardProxyFailure.refused(proxy, target: target, status: status,
                                             phrase: parts.count > 2 ? String(parts[2]) : "", tunnel: true))
            context.close(promise: nil)
            return
        }
        // Nothing may follow the proxy's answer before the client speaks (TLS's ClientHello).
        guard end.upperBound == view.endIndex else {
            fail(ForwardProxyFailure(proxy: proxy, target: target, status: status,
                                     reason: "sent bytes after its answer to CONNECT \(target)"))
            context.close(promise: nil)
            return
        }
        answer = nil
        succeed()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if proxy.kind == .socks5, event is SOCKSProxyEstablishedEvent {
            succeed()
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if String(reflecting: type(of: error)).hasPrefix("NIOSOCKS.") {
            // NIOSOCKS' errors: the proxy refused the connection to the target, or does not speak SOCKS5 as expected.
            fail(ForwardProxyFailure(proxy: proxy, target: target, status: nil,
                                     reason: "refused the SOCKS5 connection to \(target) (\(error))"))
        } else {
            fail(error)
        }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(TransportFailure(.unreachable, reason: "the proxy \(proxy) closed the connection before the tunnel to \(target) was open"))
        context.fireChannelInactive()
    }

    private func succeed() {
        timer?.cancel()
        timer = nil
        let promise = self.promise
        self.promise = nil
        promise?.succeed(())
    }

    private func fail(_ error: any Error) {
        timer?.cancel()
        timer = nil
        let promise = self.promise
        self.promise = nil
        promise?.fail(error)
    }
}
