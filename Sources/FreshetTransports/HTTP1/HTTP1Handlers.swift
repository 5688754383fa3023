import NIOCore
import NIOHTTP1
import NIOTLS

/// Completes ``opened`` once a TLS connection can carry a first exchange: when the handshake
/// completes, or with the error that ended it, `ConnectionClosed` when the origin closed it without
/// one, or `ChannelError.connectTimeout` when it took longer than `timeout` from the connection on.
/// (`NIOAsyncChannel` drops the handshake's user event.)
final class HTTP1HandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let timeout: TimeAmount
    private var promise: EventLoopPromise<Void>?
    private var timer: Scheduled<Void>?
    /// Set in `handlerAdded`, which runs in the channel's initializer.
    private(set) var opened: EventLoopFuture<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let promise = context.eventLoop.makePromise(of: Void.self)
        self.promise = promise
        opened = promise.futureResult
        if context.channel.isActive { armTimer(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        complete(.failure(ConnectionClosed()))
    }

    func channelActive(context: ChannelHandlerContext) {
        armTimer(context: context)
        context.fireChannelActive()
    }

    private func armTimer(context: ChannelHandlerContext) {
        guard timer == nil, promise != nil else { return }
        let timeout = self.timeout
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
            complete(.failure(ChannelError.connectTimeout(timeout)))
            context.close(promise: nil)
        }
    }

    private func complete(_ result: Result<Void, any Error>) {
        timer?.cancel()
        timer = nil
        guard let promise else { return }
        self.promise = nil
        promise.completeWith(result)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            complete(.success(()))
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        complete(.failure(error))
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        complete(.failure(ConnectionClosed()))
        context.fireChannelInactive()
    }
}

/// Closes the connection when the origin sends anything between exchanges: from a response's end
/// until the next request's head is written. A server may send a `408` before closing an idle
/// keep-alive connection; the async channel would buffer it, unseen, for the next exchange to take
/// as its response. Also closes the connection on any error (a malformed response, a reset), after
/// passing the error on, so that the async channel's inbound stream ends with that error.
final class HTTP1IdleGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias InboundOut = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    /// Between a response's end and the next request.
    private var idle = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if idle {
            // Nothing is expected on an idle connection.
            context.close(promise: nil)
            return
        }
        // A 1xx head has no end: only the final response's end makes the connection idle.
        if case .end = unwrapInboundIn(data) { idle = true }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .head = unwrapOutboundIn(data) { idle = false }
        context.write(data, promise: promise)
    }

    /// A request head was written below this handler (``HTTP1RawExchange``).
    func exchangeBegins() {
        idle = false
    }

    /// The answer was read below this handler (``HTTP1RawExchange``).
    func exchangeEnds() {
        idle = true
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.fireErrorCaught(error)
        context.close(promise: nil)
    }
}
