// freshet-bench-forwarder: the plainest HTTP/1.1 forwarder on SwiftNIO, a yardstick for
// bench/proxy-load's pass-through case. It forwards every request to one origin over keep-alive
// connections kept per event loop, and relays the answer part by part, all on the event loop:
// no task, no cache, no header shaping. It shows what forwarding costs on Swift and NIO alone,
// beside nginx `proxy_pass` and `freshet proxy`. Not a product: it assumes a well-behaved origin
// and client (no timeouts, no retries, no back-pressure beyond NIO's own).
//
//   freshet-bench-forwarder LISTEN_PORT ORIGIN_PORT      (both on 127.0.0.1)
//
// Prints `listening on PORT` once it accepts connections.
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// Idle connections to the origin, per event loop (a connection is only used on its own loop).
final class IdlePool: Sendable {
    private let idle = NIOLockedValueBox<[ObjectIdentifier: [any Channel]]>([:])

    func take(on loop: any EventLoop) -> (any Channel)? {
        idle.withLockedValue { $0[ObjectIdentifier(loop)]?.popLast() }
    }

    func give(_ channel: any Channel) {
        idle.withLockedValue { $0[ObjectIdentifier(channel.eventLoop), default: []].append(channel) }
    }
}

/// Relays one origin connection's answer to the client connection it is lent to.
final class OriginHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    /// The client connection's forwarding handler while a request is being answered.
    var client: ClientHandler?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        client?.relay(unwrapInboundIn(data), from: context.channel)
    }

    func channelInactive(context: ChannelHandlerContext) {
        client?.originFailed()
        client = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Forwards one client connection's requests, one at a time, each over an idle origin connection
/// of this event loop (or a new one).
final class ClientHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let pool: IdlePool
    private let originPort: Int
    private var context: ChannelHandlerContext?
    private var origin: (any Channel)?
    /// The request being answered keeps the client connection open after its answer.
    private var keepAlive = true
    /// Request parts read before the origin connection was ready.
    private var waiting: [HTTPClientRequestPart] = []

    init(pool: IdlePool, originPort: Int) {
        self.pool = pool
        self.originPort = originPort
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(var head):
            // As nginx with `proxy_set_header Connection ""`: the origin connection stays open
            // whatever the client asked for its own.
            keepAlive = head.isKeepAlive
            head.headers.remove(name: "Connection")
            head.headers.remove(name: "Keep-Alive")
            head.headers.replaceOrAdd(name: "Host", value: "127.0.0.1:\(originPort)")
            send(.head(head))
        case .body(let buffer):
            send(.body(.byteBuffer(buffer)))
        case .end(let trailers):
            send(.end(trailers))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        origin?.close(promise: nil)
        origin = nil
        self.context = nil
    }

    private func send(_ part: HTTPClientRequestPart) {
        if let origin {
            write(part, to: origin)
            return
        }
        waiting.append(part)
        guard case .head = part, let context else { return }
        if let idle = pool.take(on: context.eventLoop), idle.isActive {
            lend(idle)
            return
        }
        ClientBootstrap(group: context.eventLoop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(OriginHandler())
                }
            }
            .connect(host: "127.0.0.1", port: originPort)
            .assumeIsolated()
            .whenComplete { result in
                switch result {
                case .success(let channel): self.lend(channel)
                case .failure: self.context?.close(promise: nil)
                }
            }
    }

    private func lend(_ channel: any Channel) {
        guard let handler = try? channel.pipeline.syncOperations.handler(type: OriginHandler.self) else {
            context?.close(promise: nil)
            return
        }
        origin = channel
        handler.client = self
        for part in waiting { write(part, to: channel) }
        waiting = []
    }

    private func write(_ part: HTTPClientRequestPart, to channel: any Channel) {
        if case .end = part {
            channel.writeAndFlush(part, promise: nil)
        } else {
            channel.write(part, promise: nil)
        }
    }

    func relay(_ part: HTTPClientResponsePart, from channel: any Channel) {
        guard let context else { return }
        switch part {
        case .head(let head):
            context.write(wrapOutboundOut(.head(head)), promise: nil)
        case .body(let buffer):
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        case .end(let trailers):
            if keepAlive {
                context.writeAndFlush(wrapOutboundOut(.end(trailers)), promise: nil)
            } else {
                context.writeAndFlush(wrapOutboundOut(.end(trailers))).assumeIsolated().whenComplete { _ in
                    context.close(promise: nil)
                }
            }
            if let handler = try? channel.pipeline.syncOperations.handler(type: OriginHandler.self) {
                handler.client = nil
            }
            origin = nil
            pool.give(channel)
        }
    }

    func originFailed() {
        origin = nil
        context?.close(promise: nil)
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 3, let listenPort = Int(arguments[1]), let originPort = Int(arguments[2]) else {
    print("usage: freshet-bench-forwarder LISTEN_PORT ORIGIN_PORT")
    exit(2)
}
let pool = IdlePool()
let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
    .serverChannelOption(.backlog, value: 256)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline()
            try channel.pipeline.syncOperations.addHandler(ClientHandler(pool: pool, originPort: originPort))
        }
    }
    .bind(host: "127.0.0.1", port: listenPort).get()
// Written straight to the descriptor: a parent reading a pipe or file sees the line at once.
let line = "listening on \(server.localAddress?.port ?? listenPort)\n"
_ = line.utf8CString.withUnsafeBufferPointer { write(1, $0.baseAddress, $0.count - 1) }
try await server.closeFuture.get()
