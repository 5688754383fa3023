import Foundation
import Freshet
import FreshetTestSupport
import GitHubAPI
import HTTPTypes
import OpenAPIRuntime
import Testing

/// `APIError` keeps what caused it typed — the transport's error, the server's answer — while its
/// description stays the text a person has always been shown.
@Suite("APIError keeps its causes typed", .timeLimit(.minutes(1)))
struct TypedCauseTests {
    /// An error type of the caller's own, as a transport might throw it.
    struct OwnFailure: Error, Equatable, CustomStringConvertible {
        var code: Int
        var description: String { "own failure \(code)" }
    }

    static let base = URL(string: "https://api.example.com")!

    /// The error `client.send` throws for `GET /x` when the transport answers with `handler`.
    static func failure(
        _ handler: @escaping @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async -> APIError? {
        let client = APIClient(baseURL: base, transport: ClosureTransport(handler))
        return await #expect(throws: APIError.self) { _ = try await client.send(Endpoint<Data>.raw("x")) }
    }

    @Test("A 422's head and body are reachable from the error; the message is GitHub's, the description unchanged")
    func unprocessableKeepsItsAnswer() async throws {
        try await withSimClient { _, client in
            var client = client
            client.errorBody = .gitHub
            let result = await Result { () async throws(APIError) in
                try await client.send(Endpoint<Data>.raw("search", "repositories", query: [QueryItem("q", "")]))
            }
            guard case .failure(let error) = result,
                  case .httpStatus(422, let message?, let url, let response?) = error else {
                Issue.record("expected a 422 with its response, got \(result)")
                return
            }
            #expect(error.response == response)
            #expect(response.status == .unprocessableContent)
            #expect(response.headerFields[.contentType]?.hasPrefix("application/json") == true)
            #expect(!response.isBodyTruncated)
            let body = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
            #expect(body["message"] as? String == "Validation Failed")
            #expect((body["errors"] as? [Any])?.isEmpty == false)
            // The description is made of what it always was made of.
            #expect(error.description == APIError.httpStatus(code: 422, message: message, url: url).description)
            #expect(error.description.hasPrefix("HTTP 422 from \(url): Validation Failed"))
        }
    }

    @Test("A rate-limit refusal and a Retry-After past the client's patience keep the server's answer too")
    func refusalsKeepTheirAnswer() async throws {
        let refusal = Data(#"{"message":"API rate limit exceeded for 127.0.0.1."}"#.utf8)
        let spent = await Self.failure { _, _, _ in
            (HTTPResponse(status: .forbidden, headerFields: [.xRateLimitRemaining: "0", .xRateLimitReset: "2000000000"]),
             HTTPBody(refusal))
        }
        guard case .rateLimited(_, let message?, _, let response?)? = spent else {
            Issue.record("expected rateLimited with the server's answer, got \(String(describing: spent))")
            return
        }
        #expect(message == "API rate limit exceeded for 127.0.0.1.")
        #expect(response.status == .forbidden)
        #expect(response.headerFields[.xRateLimitRemaining] == "0")
        #expect(response.body == refusal)
        #expect(spent?.response == response)

        let retry = RetryMiddleware(policy: .init(maxRetryAfter: .seconds(60)))
        for (status, text) in [(HTTPResponse.Status.tooManyRequests, "slow down"), (.serviceUnavailable, "maintenance")] {
            let client = APIClient(baseURL: Self.base, transport: ClosureTransport { _, _, _ in
                (HTTPResponse(status: status, headerFields: [.retryAfter: "3600"]), HTTPBody(text))
            }, middlewares: [retry])
            let error = await #expect(throws: APIError.self) { _ = try await client.send(Endpoint<Data>.raw("x")) }
            let answer = try #require(error?.response, "\(String(describing: error))")
            #expect(answer.status == status)
            #expect(answer.headerFields[.retryAfter] == "3600")
            #expect(answer.body == Data(text.utf8))
            switch error {
            case .rateLimited?: #expect(status == .tooManyRequests)
            case .retryLater(503, _, _, _)?: #expect(status == .serviceUnavailable)
            default: Issue.record("unexpected \(String(describing: error))")
            }
        }
    }

    @Test("An error body is kept up to 64 KiB; a longer one is cut and says so")
    func errorBodyIsBounded() async throws {
        let big = Data(repeating: UInt8(ascii: "x"), count: 100_000)
        let error = await Self.failure { _, _, _ in
            (HTTPResponse(status: .internalServerError, headerFields: [.retryAfter: "7"]), HTTPBody(big))
        }
        let response = try #require(error?.response)
        #expect(APIError.ErrorResponse.bodyLimit == 64 * 1024)
        #expect(response.body == big.prefix(64 * 1024))
        #expect(response.isBodyTruncated)
        #expect(response.headerFields[.retryAfter] == "7")
        let small = APIError.ErrorResponse(head: HTTPResponse(status: .notFound), body: Data("{}".utf8))
        #expect(small.body == Data("{}".utf8) && !small.isBodyTruncated)
        #expect(error?.description == "HTTP 500 from https://api.example.com/x. The server failed; try again later.")
    }

    @Test("A transport's timeout is the cause of .timedOut, saying which wait ran out; the message is as before")
    func timeoutKeepsItsCause() async throws {
        let failure = TransportFailure(.timedOut, reason: "no connection to the origin came free in time")
        let error = await Self.failure { _, _, _ in throw failure }
        guard case .timedOut(let url, let cause?)? = error else {
            Issue.record("expected .timedOut with its cause, got \(String(describing: error))")
            return
        }
        #expect(cause as? TransportFailure == failure)
        #expect(error?.underlyingError as? TransportFailure == failure)
        #expect(error?.description == APIError.timedOut(url: url).description)
        #expect(error == .timedOut(url: url), "a timeout's cause is not compared")
    }

    @Test("A transport's error is the cause of .transport, as it was thrown; the message is as before")
    func transportCauseIsTheError() async throws {
        let own = await Self.failure { _, _, _ in throw OwnFailure(code: 7) }
        guard case .transport(let url, let cause)? = own else {
            Issue.record("expected .transport, got \(String(describing: own))")
            return
        }
        #expect(cause as? OwnFailure == OwnFailure(code: 7))
        #expect(own?.underlyingError as? OwnFailure == OwnFailure(code: 7))
        #expect(own?.reason == "own failure 7")
        #expect(own?.description == "The connection to \(url) failed: own failure 7. Try again.")

        let lost = await Self.failure { _, _, _ in throw TransportFailure(.connectionLost, reason: "connection reset by peer") }
        #expect((lost?.underlyingError as? TransportFailure)?.kind == .connectionLost)
        #expect(lost?.description == "The connection to https://api.example.com/x failed: connection reset by peer. Try again.")

        let refused = await Self.failure { _, _, _ in throw TransportFailure(.unreachable, reason: "connection refused") }
        guard case .unreachable(_, let refusal)? = refused else {
            Issue.record("expected .unreachable, got \(String(describing: refused))")
            return
        }
        #expect(refusal as? TransportFailure == TransportFailure(.unreachable, reason: "connection refused"))
        #expect(refused?.description
            == "Could not connect to https://api.example.com/x (connection refused). Check the network connection and the base URL.")

        let offline = await Self.failure { _, _, _ in throw URLError(.notConnectedToInternet) }
        #expect((offline?.underlyingError as? URLError)?.code == .notConnectedToInternet)
        #expect(offline?.reason == URLError(.notConnectedToInternet).localizedDescription)
    }

    @Test("Equality compares what an error says: causes by type and description, not the attached answer")
    func equality() {
        let head = HTTPResponse(status: .notFound, headerFields: [.date: "Tue, 01 Dec 2026 10:00:00 GMT"])
        let answered = APIError.httpStatus(code: 404, message: "Not Found", url: "u",
                                           response: .init(head: head, body: Data("{}".utf8)))
        #expect(answered == .httpStatus(code: 404, message: "Not Found", url: "u"))
        #expect(answered != .httpStatus(code: 404, message: nil, url: "u"))
        let a = APIError.transport(url: "u", cause: OwnFailure(code: 1))
        #expect(a == .transport(url: "u", cause: OwnFailure(code: 1)))
        #expect(a != .transport(url: "u", cause: OwnFailure(code: 2)))
        #expect(a != .transport(url: "u", cause: TransportFailure(.connectionLost, reason: "own failure 1")))
        #expect(a != .unreachable(url: "u", cause: OwnFailure(code: 1)))
    }

    @Test("A stored response served for a failed refresh says why as a value")
    func staleReasonIsTyped() {
        let status = StaleReason.status(.serviceUnavailable, url: "https://api.example.com/x")
        #expect(status.status == .serviceUnavailable && status.error == nil)
        #expect(status.description == "HTTP 503 from https://api.example.com/x")
        let failed = StaleReason.failed(.timedOut(url: "https://api.example.com/x"))
        #expect(failed.error == .timedOut(url: "https://api.example.com/x") && failed.status == nil)
        #expect(failed.description == "The server at https://api.example.com/x did not answer in time. Try again later.")
        #expect(StaleReason.failed(.httpStatus(code: 502, message: nil, url: "u")).status == .badGateway)
        #expect(StaleReason.invalidJSON(url: "u").description == "the response from u is not valid JSON")
    }
}
