import AsyncHTTPClient
import Foundation
import Freshet
@testable import FreshetTransports
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOSSL
import OpenAPIRuntime
import Testing

/// The transports' one error classifier, row by row: which networking error is which
/// `TransportFailure` kind, before the request was sent (`false`), after (`true`), or when the
/// transport cannot tell (`nil`, AsyncHTTPClient through `ClassifyingTransport`).
@Suite("Transport error classifier")
struct TransportErrorClassifierTests {
    struct NotNetworking: Error, Equatable {}

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var error: any Error & Sendable
        /// The kind for requestSent false, true and nil; `nil`: not classified.
        var beforeSending: TransportFailure.Kind?
        var afterSending: TransportFailure.Kind?
        var unknown: TransportFailure.Kind?
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "cancelled", error: CancellationError(), beforeSending: .cancelled, afterSending: .cancelled, unknown: .cancelled),
        Row(name: "a TransportFailure as it is", error: TransportFailure(.timedOut, reason: "t"),
            beforeSending: .timedOut, afterSending: .timedOut, unknown: .timedOut),
        Row(name: "connection refused", error: IOError(errnoCode: ECONNREFUSED, reason: "connect"),
            beforeSending: .unreachable, afterSending: .connectionLost, unknown: .unreachable),
        Row(name: "no route", error: IOError(errnoCode: EHOSTUNREACH, reason: "connect"),
            beforeSending: .unreachable, afterSending: .connectionLost, unknown: .unreachable),
        Row(name: "reset", error: IOError(errnoCode: ECONNRESET, reason: "read"),
            beforeSending: .connectionLost, afterSending: .connectionLost, unknown: .connectionLost),
        Row(name: "another I/O error", error: IOError(errnoCode: EIO, reason: "read"),
            beforeSending: .unreachable, afterSending: .connectionLost, unknown: .connectionLost),
        Row(name: "connect timeout", error: ChannelError.connectTimeout(.seconds(1)),
            beforeSending: .unreachable, afterSending: .unreachable, unknown: .unreachable),
        Row(name: "channel closed", error: ChannelError.eof,
            beforeSending: .connectionLost, afterSending: .connectionLost, unknown: .connectionLost),
        Row(name: "another channel error", error: ChannelError.unknownLocalAddress,
            beforeSending: .unreachable, afterSending: .connectionLost, unknown: .connectionLost),
        Row(name: "closed mid-body", error: HTTPParserError.invalidEOFState,
            beforeSending: .connectionLost, afterSending: .connectionLost, unknown: .connectionLost),
        // AsyncHTTPClient's TLS errors reach its callers as they are (not retried); HTTP1Transport's are connectionLost.
        Row(name: "TLS", error: NIOSSLError.uncleanShutdown,
            beforeSending: .connectionLost, afterSending: .connectionLost, unknown: nil),
        Row(name: "AsyncHTTPClient's deadline", error: HTTPClientError.deadlineExceeded,
            beforeSending: .timedOut, afterSending: .timedOut, unknown: .timedOut),
        Row(name: "AsyncHTTPClient's connect timeout", error: HTTPClientError.connectTimeout,
            beforeSending: .unreachable, afterSending: .unreachable, unknown: .unreachable),
        Row(name: "AsyncHTTPClient's early close", error: HTTPClientError.remoteConnectionClosed,
            beforeSending: .connectionLost, afterSending: .connectionLost, unknown: .connectionLost),
        Row(name: "an OpenAPI ClientError around a refusal",
            error: ClientError(operationID: "t", operationInput: "", causeDescription: "transport",
                               underlyingError: IOError(errnoCode: ECONNREFUSED, reason: "connect")),
            beforeSending: .unreachable, afterSending: .connectionLost, unknown: .unreachable),
        Row(name: "not a networking error", error: NotNetworking(),
            beforeSending: nil, afterSending: nil, unknown: nil),
    ]

    @Test("Each error's kind before sending, after, and when the transport cannot tell", arguments: rows)
    func kinds(row: Row) {
        #expect(TransportErrorClassifier.failure(for: row.error, requestSent: false)?.kind == row.beforeSending)
        #expect(TransportErrorClassifier.failure(for: row.error, requestSent: true)?.kind == row.afterSending)
        #expect(TransportErrorClassifier.failure(for: row.error)?.kind == row.unknown)
        // ClassifyingTransport's public face: the same, and an unknown error passes through.
        let classified = ClassifyingTransport.classify(row.error)
        #expect((classified as? TransportFailure)?.kind == row.unknown)
        if row.unknown == nil { #expect(type(of: classified) == type(of: row.error as any Error)) }
    }

    @Test("ClassifyingTransport unwraps an OpenAPI ClientError around an error it does not classify")
    func clientErrorUnwrapped() {
        let wrapped = ClientError(operationID: "t", operationInput: "", causeDescription: "transport", underlyingError: NotNetworking())
        #expect(ClassifyingTransport.classify(wrapped) is NotNetworking)
    }

    @Test("A connection our own deadline closed is timedOut, whatever error the closing caused")
    func deadlineClosed() {
        let failure = TransportErrorClassifier.failure(for: ChannelError.eof, requestSent: true, deadlineClosed: true)
        #expect(failure?.kind == .timedOut)
        #expect(HTTP1Transport.failure(NotNetworking(), sent: false) as? TransportFailure
            == TransportFailure(.unreachable, reason: String(describing: NotNetworking())))
    }

    /// Answers `200` with a body whose first chunk arrives and whose next one fails with `error`.
    struct FailingBodyTransport: ClientTransport {
        let error: any Error & Sendable

        func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws
            -> (HTTPResponse, HTTPBody?)
        {
            let (chunks, continuation) = AsyncThrowingStream<ArraySlice<UInt8>, any Error>.makeStream()
            continuation.yield([1, 2, 3])
            continuation.finish(throwing: error)
            return (HTTPResponse(status: .ok), HTTPBody(chunks, length: .unknown, iterationBehavior: .single))
        }
    }

    /// The body `transport` answers with.
    static func body(through transport: ClassifyingTransport) async throws -> HTTPBody {
        let request = HTTPRequest(method: .get, scheme: "http", authority: "example.com", path: "/")
        let (_, body) = try await transport.send(request, body: nil, baseURL: URL(string: "http://example.com")!,
                                                 operationID: "t")
        return try #require(body)
    }

    @Test("ClassifyingTransport classifies an error thrown mid-body, and fails a chunk asked for past its deadline")
    func bodyErrorsClassified() async throws {
        let reset = FailingBodyTransport(error: IOError(errnoCode: ECONNRESET, reason: "read"))
        var iterator = try await Self.body(through: ClassifyingTransport(base: reset)).makeAsyncIterator()
        #expect(try await iterator.next() == [1, 2, 3])
        do {
            _ = try await iterator.next()
            Issue.record("the body did not fail")
        } catch {
            #expect((error as? TransportFailure)?.kind == .connectionLost)
        }

        var late = try await Self.body(through: ClassifyingTransport(base: reset, deadline: .zero)).makeAsyncIterator()
        do {
            _ = try await late.next()
            Issue.record("a chunk past the deadline was read")
        } catch {
            #expect(error as? TransportFailure == TransportFailure(.timedOut, reason: "the response body did not arrive in time"))
        }
    }
}
