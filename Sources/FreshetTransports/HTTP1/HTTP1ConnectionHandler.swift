import Freshet
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOTLS

/// The event-loop side of a connection: buffers response parts until the exchange asks for
/// them, and reads from the socket only when asked (auto-read is off), so a slow reader slows
/// the origin down instead of filling memory.
final class HTTP1ConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    private let tls: Bool
    private var context: ChannelHandlerContext?
    private var buffered: [HTTPClientResponsePart] = []
    private var waiter: EventLoopPromise<Parts>?
    private var failure: (any Error)?
    private var reading = false
    private var parked = false
    private var handshakePromise: EventLoopPromise<Void>?
    private var handshakeDone = false
    private var headTimer: Scheduled<Void>?
    /// The whole request, its end included, has been written to the socket.
    private var requestWritten = false
    private var readTimer: Scheduled<Void>?
    private let flag: TimedOutFlag
    private var loop: (any EventLoop)?

    init(tls: Bool, flag: TimedOutFlag) {
        self.tls = tls
        self.flag = flag
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        loop = context.eventLoop
        if tls, context.channel.isActive { context.read() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        if tls { context.read() }
        context.fireChannelActive()
    }

    /// Succeeds once the connection can carry a first exchange: at once without TLS, after the
    /// TLS handshake (for at most `handshakeTimeout`) with it. Fails with the error that ended the
    /// connection (`ConnectionClosed` when the origin closed it without one).
    func opened(handshakeTimeout timeout: TimeAmount?) -> EventLoopFuture<Void> {
        if let failure { return (loop ?? MultiThreadedEventLoopGroup.singleton.next()).makeFailedFuture(failure) }
        guard let context else { return Self.closedFuture(on: loop) }
        guard let timeout, !handshakeDone else { return context.eventLoop.makeSucceededVoidFuture() }
        let promise = context.eventLoop.makePromise(of: Void.self)
        handshakePromise = promise
        let timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
            fail(ChannelError.connectTimeout(timeout))
            self.context?.close(promise: nil)
        }
        promise.futureResult.whenComplete { _ in timer.cancel() }
        context.read()
        return promise.futureResult
    }

    private static func closedFuture(on loop: (any EventLoop)?) -> EventLoopFuture<Void> {
        (loop ?? MultiThreadedEventLoopGroup.singleton.next()).makeFailedFuture(ConnectionClosed())
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            handshakeDone = true
            let promise = handshakePromise
            handshakePromise = nil
            promise?.succeed()
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Parked in the pool: read, to notice the origin closing.
    func park() {
        parked = true
        buffered.removeAll()
        if !reading, let context, failure == nil {
            reading = true
            context.read()
        }
    }

    /// Starts an exchange: writes the request head (and its end when there is no body) and arms
    /// the head deadline.
    func begin(_ head: HTTPRequestHead, deadline: NIODeadline, noBody: Bool) -> EventLoopFuture<Void> {
        guard let context else { return Self.closedFuture(on: loop) }
        if let failure { return context.eventLoop.makeFailedFuture(failure) }
        parked = false
        buffered.removeAll()
        requestWritten = false
        flag.reset()
        headTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            timeOut()
        }
        // Through this handler's own write, which notes when the request is complete.
        let promise = context.eventLoop.makePromise(of: Void.self)
        if noBody {
            write(context: context, data: wrapOutboundOut(.head(head)), promise: nil)
            write(context: context, data: wrapOutboundOut(.end(nil)), promise: promise)
        } else {
            write(context: context, data: wrapOutboundOut(.head(head)), promise: promise)
        }
        context.flush()
        return promise.futureResult
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        // Noted so that a response ending right after the request can release the connection.
        // (The last body bytes of a request go out together with its end: no response can
        // complete before this is set.)
        let written = promise ?? context.eventLoop.makePromise(of: Void.self)
        written.futureResult.assumeIsolated().whenSuccess { [self] in requestWritten = true }
        context.write(data, promise: written)
    }

    func headReceived() {
        headTimer?.cancel()
        headTimer = nil
    }

    private func timeOut() {
        flag.set()
        fail(TransportFailure(.timedOut, reason: "the origin did not answer in time"))
        context?.close(promise: nil)
    }

    /// The parts received so far, or a future for the next ones; with them, whether the request's
    /// end has been written.
    func next(readTimeout: TimeAmount?) -> EventLoopFuture<Parts> {
        precondition(waiter == nil, "one reader at a time")
        let loop = self.loop ?? MultiThreadedEventLoopGroup.singleton.next()
        if !buffered.isEmpty {
            // What arrived before the connection closed is still delivered.
            let parts = buffered
            buffered.removeAll(keepingCapacity: true)
            // Read ahead by one socket read while the caller handles these.
            if !reading, failure == nil, let context {
                reading = true
                context.read()
            }
            return loop.makeSucceededFuture(Parts(parts: parts, requestWritten: requestWritten))
        }
        guard failure == nil, let context else { return loop.makeFailedFuture(failure ?? ConnectionClosed()) }
        let promise = loop.makePromise(of: Parts.self)
        waiter = promise
        if let readTimeout {
            readTimer = loop.assumeIsolated().scheduleTask(in: readTimeout) { [self] in
                timeOut()
            }
        }
        if !reading {
            reading = true
            context.read()
        }
        return promise.futureResult
    }

    private func deliver() {
        guard let waiter else { return }
        if !buffered.isEmpty {
            self.waiter = nil
            readTimer?.cancel()
            readTimer = nil
            let parts = buffered
            buffered.removeAll(keepingCapacity: true)
            waiter.succeed(Parts(parts: parts, requestWritten: requestWritten))
        } else if let failure {
            self.waiter = nil
            readTimer?.cancel()
            readTimer = nil
            waiter.fail(failure)
        } else if !reading, let context {
            reading = true
            context.read()
        }
    }

    private func fail(_ error: any Error) {
        if failure == nil { failure = error }
        headTimer?.cancel()
        headTimer = nil
        if let promise = handshakePromise {
            handshakePromise = nil
            promise.fail(failure!)
        }
        deliver()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if parked {
            // Nothing is expected on an idle connection.
            context.close(promise: nil)
            return
        }
        buffered.append(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        reading = false
        if tls, !handshakeDone, failure == nil {
            reading = true
            context.read()
        } else if parked {
            if failure == nil {
                reading = true
                context.read()
            }
        } else {
            deliver()
        }
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(ConnectionClosed())
        context.fireChannelInactive()
    }
}
