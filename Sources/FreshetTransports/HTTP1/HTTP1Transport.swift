import Foundation
import Freshet
import HTTPTypes
import NIOCore
import NIOHTTP1
import OpenAPIRuntime

// HTTP1/ — the proxy's origin client, one job per file:
//
//   HTTP1Transport.swift          the public `ClientTransport`: URL → request head, replay of an
//                                 idempotent request whose body can be sent again (none, or
//                                 `.multiple`) on a stale keep-alive connection, failures
//                                 through the transports' one classifier
//   HTTP1ConnectionPool.swift     keep-alive connections per origin: limits, waiters, idle expiry
//   HTTP1Connection.swift         one channel: connect (TCP, TLS), the pipeline, reading response
//                                 parts from its `NIOAsyncChannel`, writing request parts,
//                                 the head deadline and the read timeout
//   HTTP1Exchange.swift           one request/response: upload, interim heads, the final head, the
//                                 body, and whether the connection goes back to the pool
//   HTTP1Handlers.swift           the two small channel handlers the async channel cannot replace
//   HTTP1Failures.swift           the errors an exchange ends with
//   HTTP1Tunnel.swift             a forward proxy's tunnel (`CONNECT`, or SOCKS5's handshake end),
//                                 opened before TLS and the HTTP/1.1 handlers are added
//
// The wire format is NIO's HTTP/1 client codec (`HTTPRequestEncoder`, and `HTTPResponseDecoder`
// with `informationalResponseStrategy: .forward`, which hands each 1xx head on as a `.head`
// part, header lines in order and as spelled). Response parts are read through a
// `NIOAsyncChannel`'s inbound stream, one iterator per connection kept across its exchanges (the
// stream is taken within `executeThenClose`, whose scope a task per connection holds until the
// channel closes):
// - read-ahead is bounded by the back-pressure watermarks (low 1, high 2, counted in parts):
//   no socket read is made while two parts or more (what one read decoded to) are unread, and
//   reading resumes once the reader has taken them all;
// - the head deadline and the read timeout are timers scheduled on the channel's event loop
//   around each read; on expiry they mark the connection timed out and close it, which ends the
//   pending read (the failure is then `timedOut`); cancelling the reading task closes it too;
// - nothing reads the stream between exchanges: a read from it in a cancelled task ends it for
//   good (NIO then stops reading the socket), so no task waits on a parked connection. The
//   channel goes on reading meanwhile (the stream's buffer is empty), which is how an origin's
//   close of an idle connection is noticed: the channel closes and the pool drops it;
// - a connection is reused only while its stream can still give parts: a read that returns the
//   stream's end, throws, or is cancelled marks the connection dead (and closes it), and the pool
//   checks that flag as well as the channel (which may look active for a moment after a close
//   was asked for).
// Request parts are written with `channel.writeAndFlush`, not the async channel's outbound writer:
// the writer hands parts to the channel without a promise, and the exchange needs to know when
// the request's end was written to the socket (so that a response completing before the upload
// task notes its end still releases the connection for reuse); the async channel's outbound side
// is `Never`. Two small handlers do what the async channel cannot:
// - `HTTP1HandshakeHandler` (TLS only) completes a future on the handshake's user event (which the
//   async channel drops), or fails it with the handshake's error, the close, or the connect
//   timeout;
// - `HTTP1IdleGuard` closes the connection when the origin sends anything between a response's
//   end and the next request's head (a server may send a `408` before closing an idle connection;
//   the async channel would buffer it, unseen, for the next exchange to take as its response),
//   and closes it on any error after passing the error on to the inbound stream.

/// A `ClientTransport` speaking HTTP/1.1 over SwiftNIO directly, for `freshet proxy`.
///
/// Unlike AsyncHTTPClient it relays interim responses: every `1xx` head the origin sends before
/// the final one (`102`, `103 Early Hints`, …; never `100` or `101`) is handed to
/// `InterimResponses.handler` of the sending task, and awaited, before the final response.
///
/// - Header lines go out as given (order, spelling, repeats), `Host` is added first when missing,
///   the method is sent as spelled (`M-SEARCH`), and the body is framed from `HTTPBody.length`
///   (`Content-Length`, or chunked when unknown); the request's own framing fields are dropped.
/// - Response header lines come back exactly as received, in order, repeats kept.
/// - Both bodies stream with back pressure: the request body one flush at a time, the response
///   body with no socket read while two parts or more wait for the caller.
/// - Connections are kept alive in ``HTTP1ConnectionPool`` and reused only after a complete
///   exchange in which neither side said `Connection: close`; a cancelled or failed exchange
///   closes its connection. When a reused connection turns out to have been closed by the origin
///   before any of the answer arrived (the keep-alive race), an idempotent request is sent once
///   more on a new connection if its body can be sent again: no body, or an `HTTPBody` whose
///   `iterationBehavior` is `.multiple`. Other requests fail with `connectionLost`.
/// - Through the forward proxy its pool's ``HTTP1ConnectionPool/Configuration/proxies`` choose for
///   the URL (by default the environment's): a plain `http` request goes to an HTTP proxy in
///   absolute form with `Proxy-Authorization` when the proxy has credentials (a `407` answer is a
///   ``ForwardProxyFailure``); an `https` one through its `CONNECT` tunnel, a SOCKS5 proxy's for
///   either, with TLS to the origin inside it.
/// - Failures are `TransportFailure`s: `unreachable` only when no connection could be made (the
///   request never left), `connectionLost` when it broke later or the response was malformed,
///   `timedOut` when the final head did not arrive within ``headTimeout`` or the body stalled for
///   ``readTimeout``, `cancelled` when the calling task was cancelled. A server certificate chain
///   that is refused (see ``HTTP1ConnectionPool/Configuration/pins``) fails with a
///   ``TLSTrustFailure``, which the retry middleware does not retry.
public struct HTTP1Transport: ClientTransport {
    /// The longest wait for the final response head, from the call on (waiting for a pooled
    /// connection, connecting and sending included).
    public var headTimeout: Duration
    /// The longest the response body may go without any bytes arriving while the caller waits for it.
    public var readTimeout: Duration
    /// The connections used.
    public var pool: HTTP1ConnectionPool

    /// Creates the transport.
    public init(headTimeout: Duration = .seconds(30), readTimeout: Duration = .seconds(30),
                pool: HTTP1ConnectionPool = .shared) {
        self.headTimeout = headTimeout
        self.readTimeout = readTimeout
        self.pool = pool
    }

    /// Sends `request` to `baseURL` + its path; the response body streams as it arrives.
    public func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws
        -> (HTTPResponse, HTTPBody?)
    {
        guard let url = request.url(relativeTo: baseURL),
              let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.host, !host.isEmpty else {
            throw APIError.invalidRequest("the request target \(request.path ?? "") does not form a valid http(s) URL")
        }
        let port = components.port ?? (scheme == "https" ? 443 : 80)
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        var target = path + (components.percentEncodedQuery.map { "?\($0)" } ?? "")
        let proxy = try pool.configuration.proxies.proxy(for: url)
        let key = HTTP1ConnectionPool.Key(scheme: scheme, host: host, port: port, proxy: proxy)
        if key.isAbsoluteForm {
            // To an HTTP proxy, a plain `http` request names its origin: `GET http://host:port/path`.
            let authority = host.contains(":") ? "[\(host)]" : host
            target = "http://\(authority)\(port == 80 ? "" : ":\(port)")" + target
        }
        var head = Self.requestHead(request, target: target, key: key, bodyLength: body?.length)
        if key.isAbsoluteForm, let authorization = proxy?.proxyAuthorization {
            head.headers.replaceOrAdd(name: "Proxy-Authorization", value: authorization)
        }
        let plan = ExchangePlan(
            head: head, body: body, isHead: request.method == .head,
            closeAfter: request.headerFields[values: .connection].contains { $0.lowercased().contains("close") },
            deadline: .now() + TimeAmount(headTimeout), readTimeout: TimeAmount(TransferContext.isStream ? .seconds(7 * 24 * 3600) : readTimeout),
            interim: InterimResponses.handler)
        // An idempotent request may go again on a new connection when a reused one turns out to
        // have been closed by the origin before it answered anything (the keep-alive race), if its
        // body can be sent again: none, or one that may be iterated more than once.
        let mayReplay = request.isIdempotent && (body == nil || body?.iterationBehavior == .multiple)
        var fresh = false
        while true {
            let connection: HTTP1Connection
            let reused: Bool
            do {
                (connection, reused) = try await pool.acquire(key, deadline: plan.deadline, fresh: fresh)
            } catch {
                if let refused = TransportErrorClassifier.trustFailure(for: error, host: host) { throw refused }
                throw Self.failure(error, sent: false)
            }
            do {
                let (response, responseBody) = try await connection.exchange(plan)
                if key.isAbsoluteForm, let proxy, response.status.code == 407 {
                    // Only a proxy sends 407: its credentials are missing or wrong.
                    if let responseBody { _ = try? await ArraySlice<UInt8>(collecting: responseBody, upTo: 64 * 1024) }
                    throw ForwardProxyFailure.refused(proxy, target: "\(key.host):\(key.port)", status: 407,
                                                      phrase: response.status.reasonPhrase, tunnel: false)
                }
                return (response, responseBody)
            } catch let error as StaleConnection {
                if reused, mayReplay, error.replayable, !fresh, !Task.isCancelled {
                    fresh = true
                    continue
                }
                throw Self.failure(error.underlying, sent: true, timedOut: error.timedOut)
            }
        }
    }

    /// The NIO request head: header lines as given, `Host` first when missing, framing from the body.
    static func requestHead(_ request: HTTPRequest, target: String, key: HTTP1ConnectionPool.Key,
                            bodyLength: HTTPBody.Length?) -> HTTPRequestHead {
        var headers = HTTPHeaders()
        headers.reserveCapacity(request.headerFields.count + 2)
        if request.headerFields[.init("Host")!] == nil {
            headers.add(name: "Host", value: hostField(for: key))
        }
        headers.addExceptFraming(request.headerFields)
        switch bodyLength {
        case .none, .known(0):
            // RFC 9110 §8.6: `Content-Length: 0` only where the method defines a meaning for
            // content (POST, PUT, PATCH); a bodiless GET, OPTIONS or extension method (M-SEARCH,
            // PURGE) goes without, as its client sent it.
            if [.post, .put, .patch].contains(request.method) {
                headers.add(name: "Content-Length", value: "0")
            }
        case .known(let length):
            headers.add(name: "Content-Length", value: String(length))
        case .unknown:
            headers.add(name: "Transfer-Encoding", value: "chunked")
        }
        return HTTPRequestHead(version: .http1_1, method: HTTPClientTransport.method(request.method), uri: target,
                               headers: headers)
    }

    /// The `Host` field for `key`'s origin: its host (an IPv6 one in brackets), and its port
    /// unless it is the scheme's default.
    static func hostField(for key: HTTP1ConnectionPool.Key) -> String {
        // A byte search: `String.contains(_:)` with Foundation imported is a CFString search.
        let host = key.host.utf8.contains(UInt8(ascii: ":")) ? "[\(key.host)]" : key.host
        let defaultPort = key.scheme == "https" ? 443 : 80
        return key.port == defaultPort ? host : "\(host):\(key.port)"
    }

    /// Any error as a `TransportFailure` (through the transports' one classifier; an error it does
    /// not know is `unreachable` before the request was sent, `connectionLost` after), except a
    /// ``TLSTrustFailure`` or a ``TLSTrust/ConfigurationError``, thrown as they are.
    /// `sent`: the request may have reached the origin; `timedOut`: a deadline closed the connection.
    static func failure(_ error: any Error, sent: Bool, timedOut: Bool = false) -> any Error {
        // A refused certificate chain, a proxy's refusal or an unusable setting is not retried: it
        // would fail the same way.
        if error is TLSTrustFailure || error is TLSTrust.ConfigurationError || error is ForwardProxyFailure
            || error is ProxySettings.ConfigurationError { return error }
        return TransportErrorClassifier.failure(for: error, requestSent: sent, deadlineClosed: timedOut)
            ?? TransportFailure(sent ? .connectionLost : .unreachable, reason: String(describing: error))
    }
}
