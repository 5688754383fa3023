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
/// It also keeps the connection's idle timeout, which Hummingbird's connection-state handler
/// cannot (it never sees the hits answered here): a connection is closed when nothing was read or
/// answered for `idleTimeout`, unless a request read whole is still being answered. And it stops
/// reading while hits answered on the event loop wait to be written (see ``read(context:)``).
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
    /// written, made once they are.
    private var heldRead = false

    init(answering: HitAnswering, hits: ProxyHitHandler, idleTimeout: Duration) {
        self.answering = answering
        self.hits = hits
        self.idleTimeout = TimeAmount(idleTimeout)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        var answered = false
        /// The length of the head recognised but not answered here, the decoder's next request.
        var passedOn: Int?
        while decoderHoldsNothing, !hits.busy, buffer.readableBytes > 0,
              let head = buffer.withUnsafeReadableBytes(RawRequestHead.recognise) {
            let outcome = answer(head.request, context: context)
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
        // A miss read alone (the usual case) is known to be one whole head without reading it again.
        if decoderHoldsNothing, passedOn != buffer.readableBytes {
            decoderHoldsNothing = buffer.withUnsafeReadableBytes(RawRequestHead.areWholeHeads)
        }
        context.fireChannelRead(wrapInboundOut(buffer))
    }

    // MARK: - Back-pressure

    /// No more bytes are read while answers to hits (this handler's or ``ProxyHitHandler``'s,
    /// which no task waits on) fill the channel past its high-water mark: a client that pipelines
    /// hits and never reads its answers cannot make the proxy buffer without bound. A request the
    /// pipeline is answering keeps Hummingbird's own back-pressure.
    func read(context: ChannelHandlerContext) {
        if !context.channel.isWritable, !hits.busy {
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

    private enum Outcome { case answered, absent, elsewhere }

    /// Writes `request`'s answer when the memory tier has a stored response to send whole;
    /// `.absent` when it has nothing, `.elsewhere` when its answer is for ``ProxyHitHandler``.
    private func answer(_ request: HTTPRequest, context: ChannelHandlerContext) -> Outcome {
        let start = ContinuousClock.now
        switch answering.forwarder.answerFromMemory(request) {
        case nil:
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
