import Foundation
import HTTPTypes
import OpenAPIRuntime
import Synchronization

/// A `ClientTransport` that answers from routes in memory and records every request, so an
/// app's tests need no server (Moya's stubs, as a transport under the real client and its
/// middlewares).
///
/// ```swift
/// let transport = StubTransport()
/// transport.on(.get, "/users/{login}") { request in
///     .json(#"{"login":"\(request.parameters["login"] ?? "")","id":1}"#)
/// }
/// let client = APIClient(baseURL: URL(string: "https://api.example")!, transport: transport)
/// let user = try await client.value(GitHub.user(login: "octocat"))
/// #expect(transport.requests.map(\.path) == ["/users/octocat"])
/// ```
///
/// Routes are matched in the order they were added, the first match wins. A path pattern is
/// matched segment by segment against the request's path below the base URL's: `{name}` takes
/// one segment (``RecordedRequest/parameters``), a final `*` takes the rest. What no route
/// answers gets a `404` with an empty JSON object.
public final class StubTransport: ClientTransport, Sendable {
    /// What a route answers with.
    public typealias Handler = @Sendable (RecordedRequest) async throws -> StubResponse

    private struct Route: Sendable {
        let method: HTTPRequest.Method?
        let pattern: [Substring]
        let handler: Handler
    }

    private struct State {
        var routes: [Route] = []
        var requests: [RecordedRequest] = []
    }

    private let state = Mutex(State())

    /// A transport with no routes: every request gets a `404`.
    public init() {}

    /// Answers requests with `method` (any method when `nil`) whose path matches `pattern`.
    public func on(_ method: HTTPRequest.Method?, _ pattern: String, _ handler: @escaping Handler) {
        let route = Route(method: method, pattern: Self.segments(pattern), handler: handler)
        state.withLock { $0.routes.append(route) }
    }

    /// Answers requests with `method` whose path matches `pattern` with `response`, every time.
    public func on(_ method: HTTPRequest.Method?, _ pattern: String, _ response: StubResponse) {
        on(method, pattern) { _ in response }
    }

    /// Every request sent so far, in order.
    public var requests: [RecordedRequest] {
        state.withLock { $0.requests }
    }

    /// Forgets the recorded requests (the routes stay).
    public func resetRequests() {
        state.withLock { $0.requests.removeAll() }
    }

    /// Records the request and answers it from the first matching route.
    public func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws
        -> (HTTPResponse, HTTPBody?)
    {
        let bytes: Data? = if let body { try await Data(collecting: body, upTo: .max) } else { nil }
        let target = request.path ?? "/"
        let pathPart = target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? "/"
        let basePath = baseURL.path.hasSuffix("/") ? String(baseURL.path.dropLast()) : baseURL.path
        let path = pathPart.hasPrefix(basePath) ? String(pathPart.dropFirst(basePath.count)) : pathPart
        let query = URLComponents(string: target)?.queryItems ?? []
        var recorded = RecordedRequest(
            method: request.method, path: path.isEmpty ? "/" : path,
            query: Dictionary(query.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first }),
            headerFields: request.headerFields, body: bytes, operationID: operationID)
        let (handler, parameters) = state.withLock { state -> (Handler?, [String: String]) in
            state.requests.append(recorded)
            for route in state.routes where route.method == nil || route.method == request.method {
                if let parameters = Self.match(route.pattern, Self.segments(recorded.path)) { return (route.handler, parameters) }
            }
            return (nil, [:])
        }
        recorded.parameters = parameters
        let answer = try await handler?(recorded) ?? .status(.notFound, json: "{}")
        var fields = answer.headerFields
        if let stream = answer.stream {
            return (HTTPResponse(status: answer.status, headerFields: fields), stream.body())
        }
        if fields[.contentLength] == nil { fields[.contentLength] = String(answer.body.count) }
        return (HTTPResponse(status: answer.status, headerFields: fields), HTTPBody(answer.body))
    }

    private static func segments(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }

    /// The `{name}` values when `path` matches `pattern`, else `nil`.
    private static func match(_ pattern: [Substring], _ path: [Substring]) -> [String: String]? {
        var parameters: [String: String] = [:]
        for (index, part) in pattern.enumerated() {
            if part == "*", index == pattern.count - 1 { return parameters }
            guard index < path.count else { return nil }
            if part.hasPrefix("{"), part.hasSuffix("}") {
                parameters[String(part.dropFirst().dropLast())] = path[index].removingPercentEncoding ?? String(path[index])
            } else if part != path[index] {
                return nil
            }
        }
        return pattern.count == path.count ? parameters : nil
    }
}

/// A request a ``StubTransport`` received.
public struct RecordedRequest: Sendable {
    /// The method.
    public var method: HTTPRequest.Method
    /// The path below the base URL's path (`/users/octocat`), without the query.
    public var path: String
    /// The query's items (the first value of a repeated name).
    public var query: [String: String]
    /// The header fields as the client sent them (after every middleware).
    public var headerFields: HTTPFields
    /// The body, read whole; `nil` when there was none.
    public var body: Data?
    /// The operation ID the client gave.
    public var operationID: String
    /// The values of the matched route's `{name}` segments.
    public var parameters: [String: String] = [:]
}

/// What a ``StubTransport`` route answers.
public struct StubResponse: Sendable {
    /// The status.
    public var status: HTTPResponse.Status
    /// The header fields (`Content-Length` is added when missing).
    public var headerFields: HTTPFields
    /// The body.
    public var body: Data
    /// A streamed body in place of ``body`` (``eventStream(_:then:headerFields:)``).
    var stream: StubStream?

    /// A response with `status`, `headerFields` and `body`.
    public init(status: HTTPResponse.Status = .ok, headerFields: HTTPFields = [:], body: Data = Data()) {
        self.status = status
        self.headerFields = headerFields
        self.body = body
    }

    /// A `200` with `Content-Type: text/event-stream` whose body is `events`, in the Server-Sent
    /// Events format, then ends as `end` says: to script a stream for `APIClient/events(_:options:)`
    /// (a route answering each connection with the next script tests reconnection).
    public static func eventStream(_ events: [StubEvent], then end: StubEvent.End = .close,
                                   headerFields: HTTPFields = [:]) -> StubResponse {
        var fields = headerFields
        if fields[.contentType] == nil { fields[.contentType] = "text/event-stream" }
        var response = StubResponse(status: .ok, headerFields: fields)
        response.stream = StubStream(text: events.map(\.serialized).joined(), end: end)
        return response
    }

    /// A `200` (or `status`) with a JSON body and `Content-Type: application/json`.
    public static func json(_ text: String, status: HTTPResponse.Status = .ok, headerFields: HTTPFields = [:]) -> StubResponse {
        var fields = headerFields
        if fields[.contentType] == nil { fields[.contentType] = "application/json; charset=utf-8" }
        return StubResponse(status: status, headerFields: fields, body: Data(text.utf8))
    }

    /// `status` with a JSON body (an error body, say).
    public static func status(_ status: HTTPResponse.Status, json: String = "{}", headerFields: HTTPFields = [:]) -> StubResponse {
        .json(json, status: status, headerFields: headerFields)
    }
}


/// One event of a scripted stream (``StubResponse/eventStream(_:then:headerFields:)``).
public struct StubEvent: Sendable, Equatable {
    /// How a scripted stream ends after its events.
    public enum End: Sendable, Equatable {
        /// The body ends (the client reconnects).
        case close
        /// Nothing more arrives until the client goes away (an idle connection).
        case hang
        /// The connection breaks.
        case fail
    }

    /// The `event:` field (`nil`: none, a `message`).
    public var type: String?
    /// The data, sent as one `data:` line per line.
    public var data: String
    /// The `id:` field.
    public var id: String?
    /// The `retry:` field, in milliseconds.
    public var retry: Int?

    /// An event.
    public init(_ type: String? = nil, data: String, id: String? = nil, retry: Int? = nil) {
        self.type = type
        self.data = data
        self.id = id
        self.retry = retry
    }

    /// The event as it goes on the wire.
    var serialized: String {
        var text = type.map { "event: \($0)\n" } ?? ""
        if let id { text += "id: \(id)\n" }
        if let retry { text += "retry: \(retry)\n" }
        for line in data.split(separator: "\n", omittingEmptySubsequences: false) { text += "data: \(line)\n" }
        return text + "\n"
    }
}

/// A scripted streamed body.
struct StubStream: Sendable {
    /// The error a ``StubEvent/End/fail`` stream breaks off with.
    struct Broken: Error, CustomStringConvertible {
        var description: String { "the scripted stream broke off" }
    }

    var text: String
    var end: StubEvent.End

    /// A new body for one connection.
    func body() -> HTTPBody {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ArraySlice<UInt8>.self)
        continuation.yield(ArraySlice(text.utf8))
        switch end {
        case .close: continuation.finish()
        case .hang: continuation.onTermination = { _ in _ = continuation }  // kept open until the reader leaves
        case .fail: continuation.finish(throwing: Broken())
        }
        return HTTPBody(stream, length: .unknown, iterationBehavior: .single)
    }
}
