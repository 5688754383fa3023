import HTTPTypes
import NIOCore
import NIOHTTP1

/// The first handler of a ``HTTP1ConnectionPool/LoopRoute``'s connection after TLS, in place of
/// NIO's HTTP/1 encoder: a request head is written here as bytes, and the `304` to a conditional
/// request is read here — NIO's decoder and the handlers after it never see such an exchange.
/// Every other answer is NIO's decoder's, told of the request's method as if the head had gone
/// through an encoder (it must know it: a `HEAD`'s answer has no body).
///
/// What this saves a revalidation that the origin answers with `304` (`freshet proxy
/// --revalidate always`): NIO's request head, the encoder's copy of it piece by piece, llhttp and
/// NIO's headers for the `304`, and the trips through the pipeline for each (the whole process
/// counted 170–183k instructions a revalidation before, 135–151k after; bench/RESULTS.md).
package final class HTTP1RawExchange: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer

    /// Receives a `304` read here, whole: the answer of the exchange has ended.
    package var notModified: ((NotModifiedHead) -> Void)?

    private let decoder: HTTPResponseDecoder
    private let idleGuard: HTTP1IdleGuard
    private var context: ChannelHandlerContext?
    /// A conditional request's answer is awaited here (with what arrived of it so far).
    private var awaiting = false
    private var held: ByteBuffer?

    /// The heads NIO's decoder is told of: it reads the method alone.
    private static let get = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")
    private static let head = HTTPRequestHead(version: .http1_1, method: .HEAD, uri: "/")

    init(decoder: HTTPResponseDecoder, idleGuard: HTTP1IdleGuard) {
        self.decoder = decoder
        self.idleGuard = idleGuard
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// Writes and flushes `bytes`, the whole head of a `GET` or `HEAD` request without a body.
    /// When `conditional`, a `GET` carrying validators, its answer is read here when it is a
    /// `304` (see ``notModified``); every other answer goes to NIO's decoder.
    package func write(_ bytes: ByteBuffer, isHead: Bool, conditional: Bool, promise: EventLoopPromise<Void>?) {
        guard let context else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        idleGuard.exchangeBegins()
        if conditional, !isHead {
            awaiting = true
        } else {
            decoder.write(data: .head(isHead ? Self.head : Self.get))
        }
        context.writeAndFlush(NIOAny(bytes), promise: promise)
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard awaiting else {
            context.fireChannelRead(data)
            return
        }
        var bytes = unwrapInboundIn(data)
        if var earlier = held {
            held = nil
            earlier.writeBuffer(&bytes)
            bytes = earlier
        }
        switch bytes.withUnsafeReadableBytes(NotModifiedHead.read) {
        case .incomplete:
            held = bytes
        case .head(let head) where head.length == bytes.readableBytes:
            awaiting = false
            idleGuard.exchangeEnds()
            notModified?(head)
        case .head, .other:
            // NIO's decoder reads it (and whatever followed a `304`: nothing may).
            awaiting = false
            decoder.write(data: .head(Self.get))
            context.fireChannelRead(wrapInboundOut(bytes))
        }
    }
}
