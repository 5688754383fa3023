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
/// It sits after Hummingbird's connection-state handler (which so sees every request and
/// answer, for its idle timeout and graceful shutdown) and before the async handler. A request
/// head that the memory tier answers (``ProxyForwarder/answerFromMemory(_:)``) is answered
/// here — head, body and end in one flush — and its end is swallowed; everything else goes on to
/// Hummingbird. Only when no answer is pending downstream: a pipelined hit never overtakes an
/// earlier request's answer. Requests with a body, `Expect` or a `Connection` field always go on.
///
/// A stored response answered whole is written with its head ready (``PreparedAnswers``): head
/// and body go straight to NIO's HTTP/1 encoder, below the HTTPTypes conversion, and only the
/// end passes the connection-state handler.
final class ProxyHitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let forwarder: ProxyForwarder
    private let prepared: PreparedAnswers
    private let log: (@Sendable (ProxyLogEntry) -> Void)?
    /// The context of the HTTPTypes ↔ HTTP/1 codec: NIO parts written there go to the encoder.
    private var codec: ChannelHandlerContext?
    /// Requests handed downstream whose answer has not ended yet.
    private var pending = 0
    /// The request answered here still has parts to read (and drop).
    private var swallowing = false

    init(forwarder: ProxyForwarder, prepared: PreparedAnswers, log: (@Sendable (ProxyLogEntry) -> Void)?) {
        self.forwarder = forwarder
        self.prepared = prepared
        self.log = log
    }

    func handlerAdded(context: ChannelHandlerContext) {
        codec = try? context.pipeline.syncOperations.context(handlerType: HTTP1ToHTTPServerCodec.self)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        codec = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch part {
        case .head(let request):
            if pending == 0, let codec, Self.mayAnswerHere(request) {
                let start = ContinuousClock.now
                if let answer = forwarder.answerFromMemory(request) {
                    swallowing = true
                    let status: Int
                    let outcome: CacheOutcome?
                    switch answer {
                    case .stored(let stored, let age, let storedOutcome):
                        let ready = prepared.answer(for: stored, age: age, outcome: storedOutcome)
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
                    forwarder.metrics?.answered(outcome, request: request.headerFields)
                    log?(ProxyLogEntry(request, status: status, outcome: outcome, duration: ContinuousClock.now - start))
                    return
                }
            }
            pending += 1
            context.fireChannelRead(data)
        case .body, .end:
            if swallowing {
                if case .end = part { swallowing = false }
                return
            }
            context.fireChannelRead(data)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { pending = max(0, pending - 1) }
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

/// Hummingbird's HTTP/1.1 child channel with ``ProxyHitHandler`` in the pipeline.
struct ProxyHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder
    let idleTimeout: Duration
    let forwarder: ProxyForwarder
    let prepared: PreparedAnswers
    let log: (@Sendable (ProxyLogEntry) -> Void)?

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
            try sync.addHandler(HTTPConnectionStateHandler(idleTimeout: idleTimeout, logger: logger))
            try sync.addHandler(ProxyHitHandler(forwarder: forwarder, prepared: prepared, log: log))
            return try NIOAsyncChannel(wrappingChannelSynchronously: channel,
                                       configuration: .init(isOutboundHalfClosureEnabled: true))
        }
    }

    func handle(value asyncChannel: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: asyncChannel, logger: logger)
    }
}
