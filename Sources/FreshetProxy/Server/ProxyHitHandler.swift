import Freshet
import FreshetCache
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
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
/// Requests with a body, `Expect` or a `Connection` field always go on.
///
/// A stored response answered whole is written with its head ready (``PreparedAnswers``): head
/// and body go straight to NIO's HTTP/1 encoder, below the HTTPTypes conversion, and only the
/// end passes the connection-state handler.
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

    init(answering: HitAnswering) {
        self.answering = answering
    }

    /// The decoder or a handler after it failed: what the connection answers next is the
    /// failure's (Hummingbird's `400`, then a close), never a hit.
    private var failed = false

    /// Some request the decoder passed on is not answered to its end yet, or the connection failed.
    var busy: Bool { pending > 0 || swallowing || failed }

    /// A request has been read whole and its answer is still being written (an idle timeout
    /// waits for it).
    var responding: Bool { pending > 0 && !reading }

    func handlerAdded(context: ChannelHandlerContext) {
        codec = try? context.pipeline.syncOperations.context(handlerType: HTTP1ToHTTPServerCodec.self)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        codec = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        lastActive = .now()
        switch part {
        case .head(let request):
            let knownMiss = nextIsKnownMiss
            nextIsKnownMiss = false
            if pending == 0, !failed, !knownMiss, let codec, Self.mayAnswerHere(request) {
                let start = ContinuousClock.now
                if let answer = answering.forwarder.answerFromMemory(request) {
                    swallowing = true
                    let status: Int
                    let outcome: CacheOutcome?
                    switch answer {
                    case .stored(let stored, let age, let storedOutcome):
                        let ready = answering.prepared.answer(for: stored, age: age, outcome: storedOutcome)
                        codec.write(NIOAny(HTTPServerResponsePart.head(ready.head)), promise: nil)
                        if request.method != .head {
                            codec.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(ready.body))), promise: nil)
                        }
                        (status, outcome) = (stored.status, storedOutcome)
                    case .response(let response):
                        context.write(wrapOutboundOut(.head(response.head)), promise: nil)
                        if let complete = response.complete, request.method != .head {
                            context.write(wrapOutboundOut(.body(ByteBuffer(bytes: complete))), promise: nil)
                        }
                        (status, outcome) = (response.head.status.code, response.outcome)
                    }
                    context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                    answering.record(request, status: status, outcome: outcome, since: start)
                    return
                }
            }
            pending += 1
            reading = true
            context.fireChannelRead(data)
        case .body, .end:
            if swallowing {
                if case .end = part { swallowing = false }
                return
            }
            if case .end = part { reading = false }
            context.fireChannelRead(data)
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

    /// A `GET` or `HEAD` without a body, `Expect` or `Connection` field.
    static func mayAnswerHere(_ request: HTTPRequest) -> Bool {
        guard request.method == .get || request.method == .head else { return false }
        let fields = request.headerFields
        if fields.contains(.connection) || fields.contains(.expect) || fields.contains(.transferEncoding) { return false }
        if let length = fields[.contentLength], length != "0" { return false }
        return true
    }
}

/// What answering a hit on the event loop needs, for ``RawHitHandler`` and ``ProxyHitHandler``:
/// the lookup, the prepared answers, and the counting and logging of each answer.
struct HitAnswering: Sendable {
    let forwarder: ProxyForwarder
    let prepared: PreparedAnswers
    let log: (@Sendable (ProxyLogEntry) -> Void)?

    /// Counts and logs `request`, answered on the event loop with `status` and `outcome`.
    func record(_ request: HTTPRequest, status: Int, outcome: CacheOutcome?, since start: ContinuousClock.Instant) {
        forwarder.metrics?.answered(outcome, request: request.headerFields)
        log?(ProxyLogEntry(request, status: status, outcome: outcome, duration: ContinuousClock.now - start))
    }
}

/// Hummingbird's HTTP/1.1 child channel with ``RawHitHandler`` first in the pipeline and
/// ``ProxyHitHandler`` after the connection-state handler.
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
            try sync.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            // The idle timeout is the raw hit handler's: Hummingbird's handler never sees its hits.
            try sync.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
            let hits = ProxyHitHandler(answering: answering)
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
