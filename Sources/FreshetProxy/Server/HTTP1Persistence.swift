import NIOCore
import NIOHTTP1

/// Keeps or ends the client's connection as its request asks (RFC 9112 §9.3): an HTTP/1.0
/// request without `Connection: keep-alive`, or any request with `Connection: close`, gets its
/// answer with `Connection: close` and then the end of the connection (its output half-closed,
/// as Hummingbird does, so the answer is read whole: §9.6); an HTTP/1.0 request with keep-alive
/// gets `Connection: keep-alive`. An HTTP/1.0 answer with no `Content-Length` is sent as
/// HTTP/1.0, its end marked by the close (HTTP/1.0 has no chunked coding); an HTTP/1.0 client
/// gets no interim (`1xx`) answer. Nothing sent after a request that ends the connection is
/// processed (§9.6): NIO's decoder refuses those bytes with an error, which this handler keeps
/// from failing the request being answered (Hummingbird would answer `400` and close at once),
/// and ``ProxyHitHandler/ending`` keeps the raw hit path from answering them.
///
/// It sits between NIO's HTTP/1 codec and the HTTP types conversion, which drops the request's
/// version, and so sees every answer but ``RawHitHandler``'s, which answers HTTP/1.1 keep-alive
/// requests only. An HTTP/1.1 keep-alive request costs a check and a count.
final class HTTP1Persistence: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// A request that is not HTTP/1.1 keep-alive: its number among the heads read, and what it asked.
    private struct Note {
        var request: Int
        var http10: Bool
        var keepAlive: Bool
        var head: Bool
    }

    /// Request heads read, and final answer heads written.
    private var heads = 0
    private var answers = 0
    /// The requests that are not HTTP/1.1 keep-alive, oldest first (empty otherwise).
    private var notes: [Note] = []
    /// The answer being written ends the connection.
    private var closesAfterEnd = false
    /// The request being read ends the connection.
    private var closingRequest = false
    /// Told when a request that ends the connection has been read whole (``ProxyHitHandler/ending``).
    private let hits: ProxyHitHandler

    init(hits: ProxyHitHandler) {
        self.hits = hits
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var endsConnection = false
        switch unwrapInboundIn(data) {
        case .head(let head):
            let keepAlive = head.isKeepAlive
            if !keepAlive || head.version != .http1_1 {
                notes.append(Note(request: heads, http10: head.version.major == 1 && head.version.minor == 0,
                                  keepAlive: keepAlive, head: head.method == .HEAD))
            }
            closingRequest = !keepAlive
            heads &+= 1
        case .end:
            endsConnection = closingRequest
        case .body:
            break
        }
        context.fireChannelRead(data)
        if endsConnection { hits.ending = true }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // NIO's decoder refuses bytes after a message that ends the connection (and any after
        // that, as data received in its error state); they are not read anyway, so the request
        // being answered is not failed for them.
        if hits.ending, error is HTTPParserError || error is ByteToMessageDecoderError { return }
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code < 200:
            // No interim answer to an HTTP/1.0 client (RFC 9110 §15.2).
            if let note = notes.first, note.request == answers, note.http10 {
                promise?.succeed()
                return
            }
        case .head(var head):
            let index = answers
            answers &+= 1
            while let first = notes.first, first.request < index { notes.removeFirst() }
            guard let note = notes.first, note.request == index else { break }
            notes.removeFirst()
            var keepAlive = note.keepAlive
            if note.http10, !note.head, head.status.mayHaveResponseBody, !head.headers.contains(name: "Content-Length") {
                head.version = .http1_0
                keepAlive = false
            }
            head.headers.replaceOrAdd(name: "Connection", value: keepAlive ? "keep-alive" : "close")
            closesAfterEnd = !keepAlive
            context.write(wrapOutboundOut(.head(head)), promise: promise)
            return
        case .end where closesAfterEnd:
            closesAfterEnd = false
            context.writeAndFlush(data, promise: promise)
            context.close(mode: .output, promise: nil)
            return
        default:
            break
        }
        context.write(data, promise: promise)
    }
}
