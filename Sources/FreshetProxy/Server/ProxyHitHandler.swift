import Freshet
import FreshetCache
import FreshetTransports
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// Answers cache hits on the connection's event loop, before any task or the origin-side chain
/// sees the request: the proxy's hit path, like nginx's and Varnish's, does only what a hit needs.
///
/// The plainest hits never reach it: ``RawHitHandler``, first in the pipeline, answers them from
/// the bytes read. This handler answers the hits that come through NIO's decoder — requests the
/// raw handler does not take, those read behind a request still being answered, and answers that
/// are not a stored response sent whole (a `304`, a range, a body decoded for the client).
///
/// It sits after Hummingbird's connection-state handler (which so sees every decoded request and
/// answer, for graceful shutdown) and before the async handler. A request head that the memory
/// tier answers (``ProxyForwarder/answerFromMemory(_:)``) is answered here — head, body and end
/// in one flush — and its end is swallowed; everything else goes on to Hummingbird. Only when no
/// answer is pending downstream: a pipelined hit never overtakes an earlier request's answer.
/// Requests with a body, `Expect` or a `Connection` field other than `keep-alive` always go on.
///
/// A stored response answered whole is written with its head ready (``PreparedAnswers``): head
/// and body go straight to NIO's HTTP/1 encoder, below the HTTPTypes conversion, and only the
/// end passes the connection-state handler.
///
/// A request the cache is known not to keep (``ProxyForwarder/pass(_:)``, hit-for-miss) is
/// forwarded from here too, over an origin connection of this event loop (``OriginConnections``,
/// ``OriginRelay``): its answer is written the same way as it arrives, parts read meanwhile are
/// held until it ends, and no byte is read from the origin while the client cannot take more.
/// Such a `GET` that ``RawHitHandler`` reads whole is handed over undecoded
/// (``forwardRaw(_:bytes:)``): its answer goes straight to NIO's encoder, past the handlers that
/// never saw the request (``HTTP1Persistence``, the conversion, the connection-state handler).
final class ProxyHitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let answering: HitAnswering
    /// The context of the HTTPTypes ↔ HTTP/1 codec: NIO parts written there go to the encoder.
    private var codec: ChannelHandlerContext?
    /// Requests handed downstream whose answer has not ended yet.
    private var pending = 0
    /// A request handed downstream still has parts to read.
    private var reading = false
    /// The request answered here still has parts to read (and drop).
    private var swallowing = false
    /// When a request part was last read or an answer last ended (for ``RawHitHandler``'s idle timeout).
    private(set) var lastActive = NIODeadline.now()
    /// ``RawHitHandler`` found the next request head's answer absent from memory just now: it is
    /// not looked up again.
    var nextIsKnownMiss = false
    /// ``RawHitHandler`` offered the next request head to ``forwardRaw(_:bytes:)``, which did not
    /// forward it: it is not asked again.
    private var nextIsNotForwarded = false
    /// The next request head decoded is one handed over that takes the pipeline's way after all
    /// (``fallBack()``): it goes on as it is.
    private var nextGoesOn = false
    /// The raw handler, for the requests it hands over.
    weak var rawHandler: RawHitHandler?
    /// The context of ``HTTP1Persistence``: parts written there go to NIO's encoder alone.
    private var persistence: ChannelHandlerContext?
    /// The answer to a request handed over has a final head in the encoder, to end there (one
    /// from the store went below it as bytes, with nothing to end).
    private var encoderHasHead = false

    init(answering: HitAnswering) {
        self.answering = answering
    }

    /// The decoder or a handler after it failed: what the connection answers next is the
    /// failure's (Hummingbird's `400`, then a close), never a hit.
    private var failed = false

    /// A request that ends the connection has been read whole (``HTTP1Persistence`` says so):
    /// nothing sent after it is answered (RFC 9112 §9.6), not even a hit from the bytes read.
    var ending = false

    /// Some request the decoder passed on is not answered to its end yet, or the connection failed
    /// or is ending.
    var busy: Bool { pending > 0 || swallowing || failed || ending || passing != nil }

    /// A request has been read whole and its answer is still being written (an idle timeout
    /// waits for it).
    var responding: Bool { (pending > 0 && !reading) || passing != nil }

    /// A request handed over by ``RawHitHandler`` is being forwarded.
    var forwardingRaw: Bool { passing?.rawBytes != nil }

    /// This handler's context, for the answers of requests forwarded on the event loop.
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        codec = try? context.pipeline.syncOperations.context(handlerType: HTTP1ToHTTPServerCodec.self)
        persistence = try? context.pipeline.syncOperations.context(handlerType: HTTP1Persistence.self)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // Hummingbird's connection-state handler, before this one, does not pass
        // `channelInactive` on: a closed connection is noticed here.
        clientGone()
        codec = nil
        persistence = nil
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        lastActive = .now()
        switch part {
        case .head(let request):
            if passing != nil {
                // Pipelined behind a request forwarded here: read once its answer has ended.
                held.append(part)
                return
            }
            let (knownMiss, notForwarded) = (nextIsKnownMiss, nextIsNotForwarded)
            nextIsKnownMiss = false
            nextIsNotForwarded = false
            if nextGoesOn {
                nextGoesOn = false
                pending += 1
                reading = true
                context.fireChannelRead(data)
                return
            }
            let answerable = pending == 0 && !failed && codec != nil && Self.mayAnswerHere(request)
            if answerable, !knownMiss, let codec {
                let start = ContinuousClock.now
                if let answer = answering.forwarder.answerFromMemory(request) {
                    swallowing = true
                    let (status, outcome) = write(answer, to: request, context: context, codec: codec)
                    context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                    answering.record(request, status: status, outcome: outcome, since: start)
                    return
                }
            }
            // Not a hit, and known not to be kept, or stored and to be validated: forwarded here.
            if answerable, !notForwarded,
               let pass = answering.forwarder.pass(request) ?? answering.forwarder.revalidation(request) {
                startPass(request, pass, rawBytes: nil)
                return
            }
            pending += 1
            reading = true
            context.fireChannelRead(data)
        case .body, .end:
            if swallowing {
                if case .end = part { swallowing = false }
                return
            }
            if passing != nil {
                held.append(part)
                return
            }
            if case .end = part { reading = false }
            context.fireChannelRead(data)
        }
    }

    /// Writes the head and body of `answer` from the store to `request` (no end); its status and
    /// outcome. With `straight` (``HTTP1Persistence``'s context), for a request handed over, every
    /// part goes straight to the encoder, or below it.
    private func write(_ answer: ProxyForwarder.MemoryAnswer, to request: HTTPRequest, context: ChannelHandlerContext,
                       codec: ChannelHandlerContext, straight: ChannelHandlerContext? = nil) -> (status: Int, outcome: CacheOutcome?) {
        switch answer {
        case .stored(let stored, let age, let outcome):
            if straight != nil, let rawHandler {
                // Nothing between here and the socket has seen the request: the prepared bytes
                // go straight there, as a raw hit's (and no end follows).
                let (head, body) = answering.prepared.rawAnswer(for: stored, age: age, outcome: outcome)
                rawHandler.write(head, body: request.method != .head ? body : nil)
                return (stored.status, outcome)
            }
            let ready = answering.prepared.answer(for: stored, age: age, outcome: outcome)
            if straight != nil { encoderHasHead = true }
            let below = straight ?? codec
            below.write(NIOAny(HTTPServerResponsePart.head(ready.head)), promise: nil)
            if request.method != .head {
                below.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(ready.body))), promise: nil)
            }
            return (stored.status, outcome)
        case .response(let response):
            writeHead(response.head, straight: straight, context: context)
            if let complete = response.complete, request.method != .head {
                let body = ByteBuffer(data: complete)
                if let straight {
                    straight.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(body))), promise: nil)
                } else {
                    context.write(wrapOutboundOut(.body(body)), promise: nil)
                }
            }
            return (response.head.status.code, response.outcome)
        }
    }

    /// Writes a head in HTTP types: through the conversion, or with `straight`, converted here, to
    /// the encoder.
    private func writeHead(_ head: HTTPResponse, straight: ChannelHandlerContext?, context: ChannelHandlerContext) {
        if let straight {
            if head.status.code >= 200 { encoderHasHead = true }
            straight.write(NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(head))), promise: nil)
        } else {
            context.write(wrapOutboundOut(.head(head)), promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failed = true
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            pending = max(0, pending - 1)
            lastActive = .now()
        }
        context.write(data, promise: promise)
    }

    // MARK: - Forwarding on the event loop (ProxyPass.swift)

    /// A request being forwarded here.
    private final class Passing {
        let request: HTTPRequest
        let pass: ProxyForwarder.Pass
        /// The request's head as read, when ``RawHitHandler`` handed it over undecoded: its answer
        /// goes to the encoder alone.
        let rawBytes: ByteBuffer?
        let start = ContinuousClock.now
        /// The current origin connection and its relay.
        var origin: OriginConnections.Connection?
        /// When the request was written to the current origin connection, and how long its
        /// answer's head took.
        var sent = ContinuousClock.now
        var waited = Duration.zero
        /// The current connection was kept alive from an earlier exchange.
        var reused = false
        /// The request went out once more on a new connection.
        var retried = false
        /// The request's end was written to the origin's socket.
        var written = false
        /// A part of the answer arrived.
        var receivedAny = false
        /// The status of the client's head, once written, and the origin's fields when the log
        /// needs them (a rate-limit budget).
        var answered: Int?
        var answeredFields: HTTPFields?
        /// How the cache answered: `miss` for the origin's answer relayed, `revalidated` or
        /// `stale` for the stored response of a revalidation.
        var outcome: CacheOutcome = .miss
        /// A revalidation answered from the store: the origin's answer is read and dropped.
        var dropsBody = false
        /// A revalidation's new answer, and its body held for the cache until its end (`nil`: relayed
        /// as it comes).
        var newHead: HTTPResponseHead?
        var kept: ByteBuffer?
        /// A revalidation's failure whose first body bytes tell whether the stored response
        /// answers instead: its head, and the bytes read so far (up to `peekLimit`).
        var peekedHead: HTTPResponseHead?
        var peeked: ByteBuffer?
        var peekLimit = 0
        var keepAlive = true
        /// When the request started (its answer's head is due `headTimeout` later), whether the
        /// head came, and when a part of the answer was last read (the next is due `readTimeout` later).
        let started = NIODeadline.now()
        var headCame = false
        var lastRead = NIODeadline.now()

        init(request: HTTPRequest, pass: ProxyForwarder.Pass, rawBytes: ByteBuffer?) {
            self.request = request
            self.pass = pass
            self.rawBytes = rawBytes
        }

        /// Lets go of the origin connection: kept for the next request when `keep`, else closed;
        /// and of the revalidation's claim on its key.
        func release(keep: Bool, to connections: OriginConnections) {
            pass.revalidation?.end()
            guard let origin else { return }
            self.origin = nil
            origin.relay.client = nil
            if keep { connections.give(origin) } else { origin.channel.close(promise: nil) }
        }
    }

    private var passing: Passing?
    /// The one timer of the requests forwarded here, and when it fires. It is not scheduled and
    /// cancelled for each request (two of each a request cost ~10,000 instructions): when it
    /// fires it checks the deadline of the request forwarded then, if any, and schedules itself
    /// again for that deadline when it has not passed.
    private var passTimer: Scheduled<Void>?
    private var passTimerDue = NIODeadline.distantFuture
    /// Request parts read while a request is forwarded here, read once its answer has ended.
    private var held: [HTTPRequestPart] = []
    /// A read asked for while a request is forwarded here and parts are held, made once its
    /// answer has ended.
    private var heldRead = false

    /// The client connection can take more of an answer.
    var clientWritable: Bool { context?.channel.isWritable ?? false }

    /// Forwards `request`, which ``RawHitHandler`` read whole from `bytes` and did not decode,
    /// when it is a `GET` known not to be kept (``ProxyForwarder/pass(_:)``) or a stored response to
    /// validate (``ProxyForwarder/revalidation(_:)``) and nothing else is being answered; whether it
    /// does. Otherwise the decoder reads it next, and it is not offered here again.
    func forwardRaw(_ request: HTTPRequest, bytes: ByteBuffer) -> Bool {
        guard request.method == .get, !busy, codec != nil, persistence != nil,
              let pass = answering.forwarder.pass(request) ?? answering.forwarder.revalidation(request) else {
            nextIsNotForwarded = true
            return false
        }
        startPass(request, pass, rawBytes: bytes)
        return true
    }

    private func startPass(_ request: HTTPRequest, _ pass: ProxyForwarder.Pass, rawBytes: ByteBuffer?) {
        let current = Passing(request: request, pass: pass, rawBytes: rawBytes)
        passing = current
        encoderHasHead = false
        // A request handed over was read whole; a decoded one's end is still to come.
        swallowing = rawBytes == nil
        answering.forwarder.metrics?.forwarding(1)
        armPassTimer(for: current)
        sendPass(fresh: false)
    }

    /// When the request forwarded here times out: its answer's head is due `headTimeout` after it
    /// started, then each part of the answer `readTimeout` after the one before.
    private static func due(_ current: Passing) -> NIODeadline {
        current.headCame ? current.lastRead + TimeAmount(current.pass.route.readTimeout)
            : current.started + TimeAmount(current.pass.route.headTimeout)
    }

    /// Makes the timer fire no later than `current`'s deadline.
    private func armPassTimer(for current: Passing) {
        let due = Self.due(current)
        if passTimer != nil, passTimerDue <= due { return }
        passTimer?.cancel()
        schedulePassTimer(at: due)
    }

    private func schedulePassTimer(at due: NIODeadline) {
        guard let context else { return }
        passTimerDue = due
        passTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: due) { [self] in
            passTimer = nil
            passTimerDue = .distantFuture
            guard let current = passing else { return }
            let due = Self.due(current)
            if NIODeadline.now() < due {
                schedulePassTimer(at: due)
            } else if current.headCame {
                // The answer stalled: its origin connection is closed (``originFailed(_:)`` goes on).
                current.origin?.channel.close(promise: nil)
            } else {
                answerFailure(timedOut: true, reason: "no answer in time")
            }
        }
    }

    /// Writes the request on an idle origin connection of this loop (unless `fresh`), or a new one.
    private func sendPass(fresh: Bool) {
        guard let context, let current = passing else { return }
        if !fresh, let idle = answering.origins.take(on: context.eventLoop) {
            attach(idle, reused: true)
            return
        }
        current.pass.route.route.connect(on: context.eventLoop) { channel, exchange in
            try channel.pipeline.syncOperations.addHandler(OriginRelay(exchange: exchange))
        }.assumeIsolated().whenComplete { [self] result in
            switch result {
            case .success(let channel):
                guard passing === current, current.origin == nil,
                      let relay = try? channel.pipeline.syncOperations.handler(type: OriginRelay.self) else {
                    channel.close(promise: nil)
                    if passing === current { fallBack() }
                    return
                }
                attach(OriginConnections.Connection(channel: channel, relay: relay), reused: false)
            case .failure:
                // Nothing was sent: the chain tries again, or says why it cannot.
                if passing === current { fallBack() }
            }
        }
    }

    private func attach(_ origin: OriginConnections.Connection, reused: Bool) {
        guard let context, let current = passing else { return }
        origin.relay.client = self
        current.origin = origin
        current.reused = reused
        current.receivedAny = false
        current.written = false
        current.sent = .now
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.assumeIsolated().whenSuccess {
            current.written = true
        }
        origin.relay.exchange.write(current.pass.head, isHead: current.request.method == .head,
                                    conditional: current.pass.revalidation != nil, promise: written)
    }

    /// The origin's `304` to a revalidation, read whole by the connection's `HTTP1RawExchange`:
    /// the answer's head and end at once.
    func originNotModified(_ head: NotModifiedHead) {
        guard let current = passing, current.pass.revalidation != nil else { return }
        current.receivedAny = true
        current.waited = .now - current.sent
        current.headCame = true
        answerNotModified(current, fields: head.fields)
        endFromStore(current, keepingOrigin: head.keepAlive)
    }

    /// A part of the origin's answer.
    func originRead(_ part: HTTPClientResponsePart) {
        guard let context, let current = passing else { return }
        current.receivedAny = true
        current.lastRead = .now()
        switch part {
        case .head(let head) where head.status.code < 200:
            // Interim answers (`103 Early Hints`, …) go on; `100` and `101` are not for this client.
            guard head.status.code != 100, head.status.code != 101 else { return }
            var interim = HTTPResponse(nioStatus: head.status, headers: head.headers)
            interim.headerFields = ProxyHeaders.forwardable(interim.headerFields)
            writeHead(interim, straight: straight(current), context: context)
        case .head(let head):
            current.waited = .now - current.sent
            current.keepAlive = head.isKeepAlive
            current.headCame = true
            armPassTimer(for: current)
            if current.pass.revalidation != nil {
                revalidationAnswered(current, head: head)
            } else {
                relay(current, head: head)
            }
        case .body(let buffer):
            guard current.request.method != .head, !current.dropsBody else { return }
            if let head = current.peekedHead, var peeked = current.peeked {
                current.peeked = nil
                peeked.writeImmutableBuffer(buffer)
                current.peeked = peeked
                if peeked.readableBytes >= current.peekLimit { decide(current, head: head) }
                return
            }
            if var kept = current.kept, let head = current.newHead {
                // Held whole up to what the cache stores (a body that breaks off is then answered
                // like a failure, stale where allowed); past that, relayed and not stored.
                current.kept = nil
                if kept.readableBytes + buffer.readableBytes <= answering.forwarder.cache.options.maxEntryBytes {
                    kept.writeImmutableBuffer(buffer)
                    current.kept = kept
                    return
                }
                relay(current, head: head, body: kept)
            }
            below(current)?.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(buffer))), promise: nil)
        case .end:
            if let head = current.peekedHead {
                decide(current, head: head)
                guard passing === current else { return }
            }
            passing = nil
            if let head = current.newHead {
                if let kept = current.kept { relay(current, head: head, body: kept) }
                answering.forwarder.revalidationEnded(current.pass, head: head, body: current.kept)
            }
            current.release(keep: current.keepAlive, to: answering.origins)
            writeEnd(current, context: context)
            passEnded(current, aborted: false, outcome: current.outcome)
        }
    }

    /// Writes the client's head for the origin's `head`, as a miss's, and the part of its `body`
    /// read so far.
    private func relay(_ current: Passing, head: HTTPResponseHead, body: ByteBuffer? = nil) {
        let (answer, fields) = answering.forwarder.passed(current.pass, head: head, waited: current.waited)
        current.answered = Int(answer.status.code)
        current.answeredFields = fields
        // Head and body go straight to NIO's encoder, as a hit's; the end passes the
        // connection-state handler (unless the request was handed over).
        if current.rawBytes != nil { encoderHasHead = true }
        below(current)?.write(NIOAny(HTTPServerResponsePart.head(answer)), promise: nil)
        if let body, body.readableBytes > 0, current.request.method != .head {
            below(current)?.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(body))), promise: nil)
        }
    }

    /// The origin's final `head` for a revalidation: a `304` answers with the stored response,
    /// freshened; a failure the stored response may answer for, with it stale (once the first
    /// bytes of the body are read, when they tell); an answer the chain must shape sends the
    /// request that way; any other is relayed — held whole first, when the cache may store it.
    private func revalidationAnswered(_ current: Passing, head: HTTPResponseHead, body: ByteBuffer? = nil) {
        guard let context, let codec else { return }
        if head.status.code == 304 {
            answerNotModified(current, fields: HTTPResponse(nioStatus: head.status, headers: head.headers).headerFields)
            current.dropsBody = true
            return
        }
        let step = answering.forwarder.revalidationStep(current.pass, head: head, body: body, waited: current.waited)
        switch step {
        case .stale(let answer):
            // The origin's failure is not read on: its connection is closed, the answer ended now.
            current.dropsBody = true
            let (status, outcome) = write(answer, to: current.request, context: context, codec: codec, straight: straight(current))
            current.answered = status
            current.outcome = outcome ?? .stale
            endFromStore(current)
        case .needsBody(let limit) where body == nil:
            current.peekedHead = head
            current.peeked = ByteBuffer()
            current.peekLimit = limit
        case .chain:
            // Nothing was written to the client: the chain sends the request again and decides.
            fallBack()
        case .relay(keepsBody: true):
            current.newHead = head
            current.kept = body ?? ByteBuffer()
        case .relay(keepsBody: false), .needsBody:
            current.newHead = head
            relay(current, head: head, body: body)
        }
    }

    /// Answers a revalidation whose origin said `304` with `fields`: the stored response, freshened.
    private func answerNotModified(_ current: Passing, fields: HTTPFields) {
        guard let context, let codec else { return }
        let (answer, answerFields) = answering.forwarder.revalidated(current.pass, notModified: fields, waited: current.waited)
        current.answeredFields = answerFields
        let (status, outcome) = write(answer, to: current.request, context: context, codec: codec, straight: straight(current))
        current.answered = status
        current.outcome = outcome ?? .revalidated
    }

    /// Ends the client's answer from the store to a revalidation: before the origin's answer has
    /// ended, its connection is not kept; after (a `304` read whole), it is when `keepingOrigin`.
    private func endFromStore(_ current: Passing, keepingOrigin: Bool = false) {
        guard let context, passing === current else { return }
        passing = nil
        current.release(keep: keepingOrigin, to: answering.origins)
        writeEnd(current, context: context)
        passEnded(current, aborted: false, outcome: current.outcome)
    }

    /// Decides on a revalidation's failure with the first bytes of its body, read so far.
    private func decide(_ current: Passing, head: HTTPResponseHead) {
        let peeked = current.peeked ?? ByteBuffer()
        current.peekedHead = nil
        current.peeked = nil
        revalidationAnswered(current, head: head, body: peeked)
    }

    /// The origin's bytes read so far are handed on: they go to the client.
    func originReadComplete() {
        if passing?.answered != nil { context?.flush() }
    }

    /// The origin connection failed or closed before the answer's end.
    func originFailed(_ error: (any Error)?) {
        guard let context, let current = passing else { return }
        let origin = current.origin
        current.origin = nil
        origin?.channel.close(promise: nil)
        if current.dropsBody {
            // The answer came from the store, whole: only the origin's body that was dropped broke off.
            endFromStore(current)
        } else if current.answered != nil {
            // Mid-body: the client sees a cut-off answer, never a complete-looking wrong one.
            passing = nil
            current.release(keep: false, to: answering.origins)
            passEnded(current, aborted: true)
            context.close(promise: nil)
        } else if current.reused, !current.receivedAny, !current.retried {
            // A kept-alive connection the origin had closed (the keep-alive race): once more, on a new one.
            current.retried = true
            sendPass(fresh: true)
        } else if !current.written {
            fallBack()
        } else {
            answerFailure(timedOut: false, reason: error.map { String(describing: $0) } ?? "the origin closed the connection")
        }
    }

    /// Answers the request forwarded here with the proxy's own `502` or `504` — or, for a
    /// revalidation, with the stored response, stale, where it may answer for a failure.
    private func answerFailure(timedOut: Bool, reason: String) {
        guard let context, let current = passing else { return }
        passing = nil
        if let stale = answering.forwarder.staleAfterFailure(current.pass), let codec {
            current.release(keep: false, to: answering.origins)
            let (status, outcome) = write(stale, to: current.request, context: context, codec: codec, straight: straight(current))
            writeEnd(current, context: context)
            current.answered = status
            passEnded(current, aborted: false, outcome: outcome)
            return
        }
        current.release(keep: false, to: answering.origins)
        let response = answering.forwarder.passFailure(current.pass, timedOut: timedOut, reason: reason)
        let (status, _) = write(.response(response), to: current.request, context: context, codec: codec ?? context,
                                straight: straight(current))
        writeEnd(current, context: context)
        current.answered = status
        passEnded(current, aborted: false, outcome: nil)
    }

    /// Hands the request forwarded here to the pipeline after all, as read: nothing reached the origin.
    private func fallBack() {
        guard let context, let current = passing else { return }
        passing = nil
        current.release(keep: false, to: answering.origins)
        answering.forwarder.metrics?.forwarding(-1)
        if let bytes = current.rawBytes {
            // Handed over undecoded: decoded now, with what was read since, and sent on as it is.
            nextGoesOn = true
            rawHandler?.decodeAfterAll(bytes)
            return
        }
        pending += 1
        context.fireChannelRead(wrapInboundOut(.head(current.request)))
        if swallowing {
            // Its end is still to be read, and goes on.
            swallowing = false
            reading = true
        } else {
            context.fireChannelRead(wrapInboundOut(.end(nil)))
        }
        resumeHeld(context)
    }

    /// Counts and logs the request forwarded here, and goes on with what was read meanwhile.
    private func passEnded(_ current: Passing, aborted: Bool, outcome: CacheOutcome? = .miss) {
        answering.forwarder.metrics?.forwarding(-1)
        lastActive = .now()
        if let answered = current.answered {
            answering.record(current.request, status: answered, outcome: outcome, since: current.start,
                             answer: current.answeredFields, aborted: aborted)
        }
        guard !aborted else { return }
        if current.rawBytes != nil {
            rawHandler?.forwardingEnded()
        } else if let context {
            resumeHeld(context)
        }
    }

    /// ``HTTP1Persistence``'s context when `current` was handed over undecoded: its answer's parts
    /// go to the encoder alone.
    private func straight(_ current: Passing) -> ChannelHandlerContext? {
        current.rawBytes != nil ? persistence : nil
    }

    /// Where `current`'s answer's head and body go below the HTTP types conversion.
    private func below(_ current: Passing) -> ChannelHandlerContext? {
        straight(current) ?? codec
    }

    /// Ends `current`'s answer and flushes: through the connection-state handler, or to the
    /// encoder alone for a request handed over.
    private func writeEnd(_ current: Passing, context: ChannelHandlerContext) {
        if let straight = straight(current) {
            if encoderHasHead {
                encoderHasHead = false
                straight.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil)
            } else {
                rawHandler?.flush()
            }
        } else {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }

    /// Reads the parts held while a request was forwarded here, and the read held meanwhile.
    private func resumeHeld(_ context: ChannelHandlerContext) {
        if !held.isEmpty {
            let parts = held
            held = []
            for (index, part) in parts.enumerated() {
                if passing != nil {
                    held.append(contentsOf: parts[index...])
                    break
                }
                channelRead(context: context, data: wrapInboundOut(part))
            }
            context.fireChannelReadComplete()
        } else if pending > 0 {
            context.fireChannelReadComplete()
        }
        if passing == nil, heldRead {
            heldRead = false
            context.read()
        }
    }

    /// While a request is forwarded here, reading goes on until a part of the next one is held:
    /// a client that waits for each answer (nearly every one) then costs NIO no change of the
    /// socket's epoll interest per request, off and on again (two `epoll_ctl` calls); one that
    /// pipelines is held to what one read brought.
    func read(context: ChannelHandlerContext) {
        if passing != nil, !held.isEmpty {
            heldRead = true
        } else {
            context.read()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { passing?.origin?.relay.resumeReading() }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        clientGone()
        context.fireChannelInactive()
    }

    /// The client left: the origin's answer to a request forwarded here is not read to its end,
    /// its connection not kept, and a revalidation's key is let go.
    private func clientGone() {
        if let current = passing {
            passing = nil
            current.release(keep: false, to: answering.origins)
            passEnded(current, aborted: true, outcome: current.outcome)
        }
        held = []
        passTimer?.cancel()
        passTimer = nil
    }

    /// A `GET` or `HEAD` without a body, `Expect` or `Connection` field.
    static func mayAnswerHere(_ request: HTTPRequest) -> Bool {
        guard request.method == .get || request.method == .head else { return false }
        let fields = request.headerFields
        if fields.contains(.expect) || fields.contains(.transferEncoding) { return false }
        if let length = fields[.contentLength], length != "0" { return false }
        // `Connection: keep-alive` (HTTP/1.1's default, which many clients send) asks nothing of
        // this handler; any other token (`close`, `upgrade`, a field to drop) is Hummingbird's.
        return fields[values: .connection].allSatisfy { $0.trimmingOWS().lowercased() == "keep-alive" }
    }
}

/// What answering a hit on the event loop needs, for ``RawHitHandler`` and ``ProxyHitHandler``:
/// the lookup, the prepared answers, and the counting and logging of each answer.
struct HitAnswering: Sendable {
    let forwarder: ProxyForwarder
    let prepared: PreparedAnswers
    let log: (@Sendable (ProxyLogEntry) -> Void)?

    /// Idle connections to the origin for the requests forwarded on the event loop.
    let origins = OriginConnections()

    /// Counts and logs `request`, answered on the event loop with `status` and `outcome` (and the
    /// fields `answer`, when they came from the origin).
    func record(_ request: HTTPRequest, status: Int, outcome: CacheOutcome?, since start: ContinuousClock.Instant,
                answer: HTTPFields? = nil, aborted: Bool = false) {
        forwarder.metrics?.answered(outcome, request: request.headerFields)
        log?(ProxyLogEntry(request, status: status, outcome: outcome, duration: ContinuousClock.now - start,
                           answer: answer, aborted: aborted))
    }
}

/// Hummingbird's HTTP/1.1 child channel with ``RawHitHandler`` first in the pipeline,
/// ``HTTP1Persistence`` after NIO's codec and ``ProxyHitHandler`` after the connection-state handler.
struct ProxyHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder
    let idleTimeout: Duration
    let answering: HitAnswering

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let sync = channel.pipeline.syncOperations
            // As Hummingbird's HTTP1Channel sets it up, with its default limits.
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldSize = 80 * 1024
            limits.maxHeaderListSize = 80 * 1024
            limits.maxHeaderFieldCount = 1000
            try sync.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(), withDecoderLimitConfiguration: limits)
            // Before the HTTP types conversion, which drops the request's version.
            let hits = ProxyHitHandler(answering: answering)
            try sync.addHandler(HTTP1Persistence(hits: hits))
            try sync.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            // The idle timeout is the raw hit handler's: Hummingbird's handler never sees its hits.
            try sync.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
            try sync.addHandler(hits)
            try sync.addHandler(RawHitHandler(answering: answering, hits: hits, idleTimeout: idleTimeout), position: .first)
            return try NIOAsyncChannel(wrappingChannelSynchronously: channel,
                                       configuration: .init(isOutboundHalfClosureEnabled: true))
        }
    }

    func handle(value asyncChannel: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: asyncChannel, logger: logger)
    }
}
