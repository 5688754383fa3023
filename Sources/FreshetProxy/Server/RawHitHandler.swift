import FreshetCache
import HTTPTypes
import NIOCore

/// Answers cache hits from the bytes a connection read, below NIO's HTTP/1 decoder and encoder:
/// a hit is a head recognised, a memory lookup and two prepared buffers written, as in nginx.
///
/// First in the pipeline. While the decoder holds nothing and every request it passed on has
/// been answered (``ProxyHitHandler/busy``), each request head at the start of the bytes read
/// that ``RawRequestHead`` takes and the memory tier answers with a stored response sent whole is
/// answered here: the prepared head's bytes (``PreparedAnswers/Ready/headBytes``) and the body
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
/// answered for `idleTimeout`, unless a request read whole is still being answered.
final class RawHitHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let answering: HitAnswering
    private let hits: ProxyHitHandler
    private let idleTimeout: TimeAmount
    /// Everything handed to the decoder ended at the end of a request head taken here.
    private var decoderHoldsNothing = true
    private var lastAnswered = NIODeadline.now()
    private var idleTask: Scheduled<Void>?

    init(answering: HitAnswering, hits: ProxyHitHandler, idleTimeout: Duration) {
        self.answering = answering
        self.hits = hits
        self.idleTimeout = TimeAmount(idleTimeout)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        var answered = false
        while decoderHoldsNothing, !hits.busy, buffer.readableBytes > 0, context.channel.isWritable,
              let head = buffer.withUnsafeReadableBytes(RawRequestHead.recognise) {
            let outcome = answer(head.request, context: context)
            guard outcome == .answered else {
                // The decoder reads this request next; a miss need not be looked up again there.
                hits.nextIsKnownMiss = outcome == .absent
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
        if decoderHoldsNothing {
            decoderHoldsNothing = buffer.withUnsafeReadableBytes(RawRequestHead.areWholeHeads)
        }
        context.fireChannelRead(wrapInboundOut(buffer))
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
            let ready = answering.prepared.answer(for: stored, age: age, outcome: outcome)
            context.write(NIOAny(ready.headBytes), promise: nil)
            if request.method != .head {
                context.write(NIOAny(ready.body), promise: nil)
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
