import FreshetCache
import HTTPTypes
import NIOCore

/// Answers cache hits from the bytes a connection read, below NIO's HTTP/1 decoder and encoder:
/// a hit is a head recognised, a memory lookup and two prepared buffers written, as in nginx.
///
/// First in the pipeline. While the decoder holds nothing and every request it passed on has
/// been answered (``ProxyHitHandler/busy``), each request head at the start of the bytes read
/// that ``RawRequestHead`` takes and the memory tier answers with a stored response sent whole is
/// answered here: the prepared head's bytes (``PreparedAnswers/rawAnswer(for:age:outcome:)``) and the body
/// (none to a `HEAD`), flushed once per read. From the first request it does not answer on, the
/// bytes go to the decoder and the pipeline handles them as before. Decoder and encoder are passed
/// by together, so the encoder's queue of request methods, fed by the decoder, stays in step.
///
/// Bytes handed to the decoder that are not whole heads taken here (a body, a head split over two
/// reads, a request this handler does not take) may leave the start of a message in the decoder;
/// the connection then stays on the decoder for good.
///
/// A `GET` that the memory tier does not answer but that ``ProxyHitHandler`` would forward on the
/// event loop (hit-for-miss, or a stored response to validate) is handed to it from here
/// (``ProxyHitHandler/forwardRaw(_:bytes:)``), not decoded: no handler between the two sees the
/// request, and its answer goes straight to NIO's encoder, whose queue of request methods then
/// holds nothing (every request decoded was answered). Bytes read meanwhile are held here, not
/// decoded, until that answer has ended; a request that must take the chain after all (nothing
/// was sent, or the origin's answer needs the chain) is handed to the decoder then, with them.
///
/// It also keeps the connection's idle timeout, which Hummingbird's connection-state handler
/// cannot (it never sees the hits answered here): a connection is closed when nothing was read or
/// answered for `idleTimeout`, unless a request read whole is still being answered. And it stops
/// reading while hits answered on the event loop wait to be written (see ``read(context:)``). A
/// request to quiesce (graceful shutdown) waits for a forwarded request's answer: the
/// connection-state handler, which never saw that request, would close the connection at once.
final class RawHitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let answering: HitAnswering
    private let hits: ProxyHitHandler
    private let idleTimeout: TimeAmount
    /// Everything handed to the decoder ended at the end of a request head taken here.
    private var decoderHoldsNothing = true
    private var lastAnswered = NIODeadline.now()
    private var idleTask: Scheduled<Void>?
    /// A read the channel asked for while hits answered on the event loop were waiting to be
    /// written, or while a request handed over is forwarded and bytes are held, made once they are.
    private var heldRead = false
    /// Bytes read while a request handed over is forwarded, read once its answer has ended.
    private var heldBytes: ByteBuffer?
    /// A request to quiesce that came while a request handed over was forwarded.
    private var heldQuiesce: ChannelShouldQuiesceEvent?
    private var context: ChannelHandlerContext?

    init(answering: HitAnswering, hits: ProxyHitHandler, idleTimeout: Duration) {
        self.answering = answering
        self.hits = hits
        self.idleTimeout = TimeAmount(idleTimeout)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        if hits.forwardingRaw {
            hold(buffer)
            return
        }
        process(&buffer, context: context)
    }

    /// Answers the requests at the start of `buffer` that are answered here, hands over one to
    /// forward, and passes the rest to the decoder (or holds it, while forwarding).
    private func process(_ buffer: inout ByteBuffer, context: ChannelHandlerContext) {
        var answered = false
        /// The length of the head recognised but not answered here, the decoder's next request.
        var passedOn: Int?
        while decoderHoldsNothing, !hits.busy, buffer.readableBytes > 0,
              let head = buffer.withUnsafeReadableBytes(RawRequestHead.recognise) {
            let outcome = answer(head.request, length: head.length, in: buffer, context: context)
            if outcome == .forwarding {
                buffer.moveReaderIndex(forwardBy: head.length)
                break
            }
            guard outcome == .answered else {
                // The decoder reads this request next; a miss need not be looked up again there.
                hits.nextIsKnownMiss = outcome == .absent
                passedOn = head.length
                break
            }
            buffer.moveReaderIndex(forwardBy: head.length)
            answered = true
        }
        if answered {
            lastAnswered = .now()
            context.flush()
        }
        guard buffer.readableBytes > 0 else { return }
        if hits.forwardingRaw {
            hold(buffer)
            return
        }
        // A miss read alone (the usual case) is known to be one whole head without reading it again.
        if decoderHoldsNothing, passedOn != buffer.readableBytes {
            decoderHoldsNothing = buffer.withUnsafeReadableBytes(RawRequestHead.areWholeHeads)
        }
        context.fireChannelRead(wrapInboundOut(buffer))
    }

    // MARK: - Requests handed over to forward

    private func hold(_ buffer: ByteBuffer) {
        if heldBytes == nil {
            heldBytes = buffer
        } else {
            heldBytes?.writeImmutableBuffer(buffer)
        }
    }

    /// The answer to the request handed over has ended: a request to quiesce that came meanwhile
    /// goes on (bytes held are dropped then: the connection closes), else the bytes held are read.
    func forwardingEnded() {
        guard let context else { return }
        if let quiesce = heldQuiesce {
            heldQuiesce = nil
            heldBytes = nil
            context.fireUserInboundEventTriggered(quiesce)
            return
        }
        if var bytes = heldBytes {
            heldBytes = nil
            process(&bytes, context: context)
            context.fireChannelReadComplete()
        }
        if heldRead, !hits.forwardingRaw {
            heldRead = false
            context.read()
        }
    }

    /// The request handed over takes the pipeline's way after all: its `bytes` (nothing of it was
    /// sent to the client) go to the decoder, with the bytes held since.
    func decodeAfterAll(_ bytes: ByteBuffer) {
        guard let context else { return }
        var bytes = bytes
        if let held = heldBytes {
            heldBytes = nil
            bytes.writeImmutableBuffer(held)
        }
        decoderHoldsNothing = bytes.withUnsafeReadableBytes(RawRequestHead.areWholeHeads)
        context.fireChannelRead(wrapInboundOut(bytes))
        context.fireChannelReadComplete()
        if let quiesce = heldQuiesce {
            heldQuiesce = nil
            context.fireUserInboundEventTriggered(quiesce)
        }
        if heldRead {
            heldRead = false
            context.read()
        }
    }

    /// Writes an answer's head and body bytes, below every other handler (a request handed over
    /// and answered from the store).
    func write(_ head: ByteBuffer, body: ByteBuffer?) {
        guard let context else { return }
        context.write(NIOAny(head), promise: nil)
        if let body { context.write(NIOAny(body), promise: nil) }
        lastAnswered = .now()
    }

    /// Flushes what was written below every other handler.
    func flush() {
        context?.flush()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if hits.forwardingRaw, let quiesce = event as? ChannelShouldQuiesceEvent {
            heldQuiesce = quiesce
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: - Back-pressure

    /// No more bytes are read while answers to hits (this handler's or ``ProxyHitHandler``'s,
    /// which no task waits on) fill the channel past its high-water mark: a client that pipelines
    /// hits and never reads its answers cannot make the proxy buffer without bound. A request the
    /// pipeline is answering keeps Hummingbird's own back-pressure.
    func read(context: ChannelHandlerContext) {
        if (!context.channel.isWritable && !hits.busy) || (heldBytes != nil && hits.forwardingRaw) {
            heldRead = true
        } else {
            context.read()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if heldRead, context.channel.isWritable {
            heldRead = false
            context.read()
        }
        context.fireChannelWritabilityChanged()
    }

    private enum Outcome { case answered, absent, elsewhere, forwarding }

    /// Writes `request`'s answer when the memory tier has a stored response to send whole;
    /// `.forwarding` when ``ProxyHitHandler`` forwards it (its head is the `length` bytes at the
    /// start of `buffer`), `.absent` when the memory has nothing, `.elsewhere` when its answer is
    /// for ``ProxyHitHandler`` through the decoder.
    private func answer(_ request: HTTPRequest, length: Int, in buffer: ByteBuffer, context: ChannelHandlerContext) -> Outcome {
        let start = ContinuousClock.now
        switch answering.forwarder.answerFromMemory(request) {
        case nil:
            if request.method == .get, let bytes = buffer.getSlice(at: buffer.readerIndex, length: length),
               hits.forwardRaw(request, bytes: bytes) {
                return .forwarding
            }
            return .absent
        case .response?:
            return .elsewhere
        case .stored(let stored, let age, let outcome)?:
            let (head, body) = answering.prepared.rawAnswer(for: stored, age: age, outcome: outcome)
            context.write(NIOAny(head), promise: nil)
            if request.method != .head {
                context.write(NIOAny(body), promise: nil)
            }
            answering.record(request, status: stored.status, outcome: outcome, since: start)
            return .answered
        }
    }

    // MARK: - Idle timeout

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        hits.rawHandler = self
        if context.channel.isActive { scheduleIdleCheck(context, at: .now() + idleTimeout) }
    }

    func channelActive(context: ChannelHandlerContext) {
        scheduleIdleCheck(context, at: .now() + idleTimeout)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelIdleCheck()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelIdleCheck()
        self.context = nil
    }

    private func scheduleIdleCheck(_ context: ChannelHandlerContext, at deadline: NIODeadline) {
        guard idleTask == nil else { return }
        idleTask = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            idleTask = nil
            guard context.channel.isActive else { return }
            if hits.responding {
                scheduleIdleCheck(context, at: .now() + idleTimeout)
                return
            }
            let due = max(lastAnswered, hits.lastActive) + idleTimeout
            if NIODeadline.now() >= due {
                context.close(promise: nil)
            } else {
                scheduleIdleCheck(context, at: due)
            }
        }
    }

    private func cancelIdleCheck() {
        idleTask?.cancel()
        idleTask = nil
    }
}
