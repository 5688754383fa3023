import FreshetTransports
import NIOCore
import NIOHTTP1
import Synchronization

/// Keep-alive connections to the origin for the requests ``ProxyHitHandler`` forwards on its
/// event loop (``ProxyForwarder/pass(_:)``), idle ones kept per event loop: a connection is only
/// used on the loop it was made on. At most ``perLoop`` idle ones per loop; one idle for longer than
/// ``idleTimeout`` is closed when next looked at, and ``closeAll()`` closes the rest when the
/// server stops.
final class OriginConnections: Sendable {
    static let perLoop = 64
    static let idleTimeout = TimeAmount.seconds(60)

    /// A connection and its relay (found once, when it is made).
    struct Connection: @unchecked Sendable {
        var channel: any Channel
        /// Only touched on the channel's event loop.
        var relay: OriginRelay
    }

    private struct Idle: Sendable {
        var connection: Connection
        var since: NIODeadline
    }

    private let idle = Mutex<[ObjectIdentifier: [Idle]]>([:])

    /// An idle connection of `loop` that is still open, or `nil`.
    func take(on loop: any EventLoop) -> Connection? {
        let now = NIODeadline.now()
        var expired: [any Channel] = []
        defer { for channel in expired { channel.close(promise: nil) } }
        return idle.withLock { idle -> Connection? in
            let key = ObjectIdentifier(loop)
            while let entry = idle[key]?.popLast() {
                guard entry.connection.channel.isActive else { continue }
                guard now - entry.since < Self.idleTimeout else {
                    expired.append(entry.connection.channel)
                    continue
                }
                return entry.connection
            }
            return nil
        }
    }

    /// Keeps `connection`, whose exchange ended cleanly, for the next request on its loop.
    func give(_ connection: Connection) {
        let kept = connection.channel.isActive && idle.withLock { idle -> Bool in
            let key = ObjectIdentifier(connection.channel.eventLoop)
            guard idle[key, default: []].count < Self.perLoop else { return false }
            idle[key, default: []].append(Idle(connection: connection, since: .now()))
            return true
        }
        if !kept { connection.channel.close(promise: nil) }
    }

    /// Closes every idle connection.
    func closeAll() {
        let all = idle.withLock { idle -> [Idle] in
            defer { idle.removeAll() }
            return idle.values.flatMap { $0 }
        }
        for entry in all { entry.connection.channel.close(promise: nil) }
    }
}

/// The last handler of an origin connection of ``OriginConnections``: hands the answer's parts
/// (and a `304` that the connection's `HTTP1RawExchange` read) to the ``ProxyHitHandler`` whose
/// request the connection carries, and stops reading from the origin while that client connection
/// cannot take more (back-pressure). Between exchanges it has no client: `HTTP1IdleGuard`, before
/// it, closes the connection when anything arrives then.
final class OriginRelay: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    /// The client connection's handler while this connection carries its request.
    var client: ProxyHitHandler?
    /// Where request heads are written, as bytes.
    let exchange: HTTP1RawExchange
    private var context: ChannelHandlerContext?
    private var heldRead = false

    init(exchange: HTTP1RawExchange) {
        self.exchange = exchange
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // Let go in `handlerRemoved`: a weak reference would put every retain of this handler
        // on the runtime's slow path.
        exchange.notModified = { head in self.client?.originNotModified(head) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        exchange.notModified = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        client?.originRead(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        client?.originReadComplete()
        context.fireChannelReadComplete()
    }

    /// `HTTP1IdleGuard`, before this handler, closes the connection after any error.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let client = self.client
        self.client = nil
        client?.originFailed(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        let client = self.client
        self.client = nil
        client?.originFailed(nil)
        context.fireChannelInactive()
    }

    func read(context: ChannelHandlerContext) {
        if let client, !client.clientWritable {
            heldRead = true
        } else {
            context.read()
        }
    }

    /// The client connection can take more: reading resumes.
    func resumeReading() {
        guard heldRead, let context else { return }
        heldRead = false
        context.read()
    }
}
