import Freshet
import FreshetCache
import FreshetFeeds
import Synchronization
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
    private let log: (@Sendable (String) -> Void)?
    /// The context of the HTTPTypes ↔ HTTP/1 codec: NIO parts written there go to the encoder.
    private var codec: ChannelHandlerContext?
    /// Requests handed downstream whose answer has not ended yet.
    private var pending = 0
    /// The request answered here still has parts to read (and drop).
    private var swallowing = false

    init(forwarder: ProxyForwarder, prepared: PreparedAnswers, log: (@Sendable (String) -> Void)?) {
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
                    log?(ProxyLogLine.format(method: request.method.rawValue, target: request.path ?? "",
                                             status: status, outcome: outcome, duration: ContinuousClock.now - start))
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
        if fields[.connection] != nil || fields[.expect] != nil || fields[.transferEncoding] != nil { return false }
        if let length = fields[.contentLength], length != "0" { return false }
        return true
    }
}

/// Stored responses as the proxy writes them: the client's head (``ProxyForwarder/storedHead(_:)``
/// as NIO's HTTP/1 head) and the body in a `ByteBuffer`, made once per stored response
/// (``FreshetCache/CachedResponse/Version``), and the head with `X-Cache` and `Age` once per
/// second of age — so a hit allocates nothing for its answer and converts nothing.
///
/// Shared by every connection of a server. Bounded: past ``capacity`` stored responses or
/// ``capacityBytes`` of bodies it starts over.
final class PreparedAnswers: Sendable {
    /// A head and body ready to write.
    struct Ready: Sendable {
        var head: HTTPResponseHead
        var body: ByteBuffer
    }

    private struct Entry {
        var version: CachedResponse.Version
        var base: Ready
        var age: Int
        var outcome: CacheOutcome
        var head: HTTPResponseHead
    }

    private struct Key: Hashable {
        var key: String
        var variant: String
    }

    static let capacity = 4096
    let capacityBytes: Int
    private let state = Mutex<(entries: [Key: Entry], bytes: Int)>(([:], 0))

    init(capacityBytes: Int = 16 * 1024 * 1024) {
        self.capacityBytes = capacityBytes
    }

    /// The head (with `X-Cache: outcome` and `Age: age`) and body for `stored`.
    func answer(for stored: CachedResponse, age: Int, outcome: CacheOutcome) -> Ready {
        let key = Key(key: stored.key, variant: stored.variant)
        let version = stored.version
        return state.withLock { state in
            if var entry = state.entries[key], entry.version == version {
                if entry.age != age || entry.outcome != outcome {
                    entry.head = Self.head(entry.base.head, age: age, outcome: outcome)
                    entry.age = age
                    entry.outcome = outcome
                    state.entries[key] = entry
                }
                return Ready(head: entry.head, body: entry.base.body)
            }
            let base = Ready(head: HTTPResponseHead(ProxyForwarder.storedHead(stored)),
                             body: ByteBuffer(bytes: stored.body))
            let entry = Entry(version: version, base: base, age: age, outcome: outcome,
                              head: Self.head(base.head, age: age, outcome: outcome))
            if state.entries.count >= Self.capacity || state.bytes + stored.body.count > capacityBytes {
                state = ([:], 0)
            }
            if let old = state.entries.updateValue(entry, forKey: key) { state.bytes -= old.base.body.readableBytes }
            state.bytes += stored.body.count
            return Ready(head: entry.head, body: base.body)
        }
    }

    private static func head(_ base: HTTPResponseHead, age: Int, outcome: CacheOutcome) -> HTTPResponseHead {
        var head = base
        head.headers.add(name: "X-Cache", value: outcome.rawValue.uppercased())
        head.headers.add(name: "Age", value: String(age))
        return head
    }
}

/// Hummingbird's HTTP/1.1 child channel with ``ProxyHitHandler`` in the pipeline.
struct ProxyHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder
    let idleTimeout: Duration
    let forwarder: ProxyForwarder
    let prepared: PreparedAnswers
    let log: (@Sendable (String) -> Void)?

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
