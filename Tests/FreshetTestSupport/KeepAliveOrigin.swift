import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A plain HTTP/1.1 origin on 127.0.0.1 and an ephemeral port (NIO) for keep-alive edge cases.
/// Every request gets `200` with `Cache-Control: no-store`, the body `kept alive`, and
/// `X-Connection` (which connection, counted from 1) and `X-Accept-Encoding` (the request's,
/// `-` without one) — except that, when ``dropSecondRequest`` is set, the second request on each
/// connection is read and the connection closed without an answer: the keep-alive race, in which
/// a server closes an idle connection as a client sends on it. ``requests`` counts the requests
/// read; ``stop()`` closes the listener and every connection.
public final class KeepAliveOrigin: Sendable {
    /// `http://127.0.0.1:PORT`.
    public let url: URL
    private let listener: any Channel
    private let state: State

    private final class State: Sendable {
        let connections = Atomic<Int>(0)
        let requests = Atomic<Int>(0)
        let dropSecond = Atomic<Bool>(false)
        let open = Mutex<[any Channel]>([])
    }

    public init() async throws {
        let state = State()
        listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let number = state.connections.add(1, ordering: .relaxed).newValue
                    state.open.withLock { $0.append(channel) }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Answer(state: state, connection: number))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        self.state = state
        url = URL(string: "http://127.0.0.1:\(listener.localAddress?.port ?? 0)")!
    }

    /// The second request on each connection is dropped with the connection (see the type's comment).
    public var dropSecondRequest: Bool {
        get { state.dropSecond.load(ordering: .relaxed) }
        set { state.dropSecond.store(newValue, ordering: .relaxed) }
    }

    /// The requests read so far, answered or dropped.
    public var requests: Int { state.requests.load(ordering: .relaxed) }

    /// The connections accepted so far.
    public var connections: Int { state.connections.load(ordering: .relaxed) }

    /// Stops listening and closes every connection.
    public func stop() async {
        try? await listener.close()
        for channel in state.open.withLock({ $0 }) { try? await channel.close() }
    }

    private final class Answer: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        private let state: State
        private let connection: Int
        private var onThisConnection = 0
        private var acceptEncoding = "-"

        init(state: State, connection: Int) {
            self.state = state
            self.connection = connection
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                acceptEncoding = head.headers["Accept-Encoding"].first ?? "-"
            case .body:
                break
            case .end:
                state.requests.add(1, ordering: .relaxed)
                onThisConnection += 1
                if onThisConnection == 2, state.dropSecond.load(ordering: .relaxed) {
                    context.close(promise: nil)
                    return
                }
                let body = ByteBuffer(string: "kept alive")
                let headers: HTTPHeaders = [
                    "Content-Length": String(body.readableBytes), "Cache-Control": "no-store",
                    "X-Connection": String(connection), "X-Accept-Encoding": acceptEncoding,
                ]
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
                              promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
