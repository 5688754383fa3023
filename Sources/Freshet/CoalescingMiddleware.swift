import Foundation
import HTTPTypes
import OpenAPIRuntime
import Synchronization

/// Lets concurrent identical GET/HEAD requests share one network exchange — the seeds'
/// `share(replay: 1)`.
///
/// Requests are identical when method, URL and every header that can change the answer
/// (`Authorization`, `Accept`, `Accept-Language`, `Cookie`, conditional headers) are equal, so
/// two users' requests never share a response.
///
/// The first request (the owner) runs the exchange in its own task; identical requests that
/// arrive before the answer is complete wait for it. The body is read once, up to
/// ``maxBodyBytes``, before the answer is handed on — so a body that breaks off mid-way is a
/// failed exchange the retry middleware outside can repeat — and replayed to every waiter.
///
/// A request with `Cache-Control: no-store` (a download to a file) is never shared: it streams.
///
/// A waiter cancelling leaves alone. When the owner is cancelled its exchange ends; the waiters
/// still waiting are not failed: one of them starts the exchange again and the rest join it.
public struct CoalescingMiddleware: ClientMiddleware, WholeResponseMiddleware {
    /// The largest body that is shared; a larger one fails every waiter with
    /// ``APIError/bodyTooLarge(limit:url:)``.
    public var maxBodyBytes: Int
    private let registry = Registry()

    /// Creates the middleware.
    public init(maxBodyBytes: Int = APIClient.defaultMaxResponseBytes) {
        self.maxBodyBytes = maxBodyBytes
    }

    /// The number of exchanges currently shared (for tests and diagnostics).
    public var inFlightCount: Int { registry.count }

    /// The number of requests waiting for another request's exchange (for tests and diagnostics).
    public var waiterCount: Int { registry.waiterCount }

    /// Joins an identical exchange in flight, or starts one.
    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        // A request that says `no-store` (a download to a file) wants its own exchange, streamed:
        // sharing would read its body into memory.
        let noStore = request.cacheControlMentions("no-store")
        guard request.method == .get || request.method == .head, body == nil, !noStore, let path = request.path else {
            return try await next(request, body, baseURL)
        }
        let key = Key(method: request.method.rawValue, base: baseURL.absoluteString, path: path,
                      varying: Self.varyingHeaders(request))
        while true {
            let (exchange, isOwner) = registry.join(key)
            if isOwner {
                return try await run(exchange, key: key, request: request, baseURL: baseURL, next: next)
            }
            do {
                return Self.deliver(try await exchange.value(), for: request)
            } catch is OwnerLeft {
                // The owner was cancelled: start over, unless this request was cancelled too.
                if Task.isCancelled { throw CancellationError() }
                continue
            }
        }
    }

    /// The owner's side: sends the request, reads the body once and hands it to every waiter.
    private func run(
        _ exchange: Exchange, key: Key, request: HTTPRequest, baseURL: URL,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let response: HTTPResponse
        let responseBody: HTTPBody?
        do {
            (response, responseBody) = try await next(request, nil, baseURL)
        } catch {
            registry.remove(key, exchange)
            exchange.complete(.failure(Task.isCancelled ? OwnerLeft() : error))
            throw error
        }
        let result: Result<Exchange.Output, any Error>
        do {
            let data = try await APIClient.collect(responseBody, limit: maxBodyBytes, url: baseURL)
            result = .success(Exchange.Output(response: response, body: data, report: ExchangeReport.current?.snapshot))
        } catch APIError.bodyTooLarge(let limit, _) {
            // The URL is built for the message only.
            let url = request.url(relativeTo: baseURL).map(Redaction.redact) ?? Redaction.redact(baseURL)
            result = .failure(APIError.bodyTooLarge(limit: limit, url: url))
        } catch {
            result = .failure(Task.isCancelled ? OwnerLeft() : error)
        }
        registry.remove(key, exchange)
        exchange.complete(result)
        if case .failure(let error) = result, error is OwnerLeft { throw CancellationError() }
        return Self.deliver(try result.get(), for: request)
    }

    /// The shared answer for one request; a waiter's report learns what the owner's cache said.
    private static func deliver(_ output: Exchange.Output, for request: HTTPRequest) -> (HTTPResponse, HTTPBody?) {
        if let shared = output.report, let cache = shared.cache, let report = ExchangeReport.current {
            report.recordCache(cache, staleReason: shared.staleReason)
        }
        return (output.response, request.method == .head ? nil : .whole(output.body))
    }

    /// The fields that can change the answer, in the request's order: one pass over its fields
    /// (a request carries a handful; looking each of these names up would index them all).
    static let varyingNames: [HTTPField.Name] = [.authorization, .accept, .acceptLanguage, .acceptEncoding, .cookie,
                                                 .ifNoneMatch, .ifModifiedSince, .range, .cacheControl]

    /// The request's varying fields as one text: each line `name: value`, in the order the
    /// request has them. Two requests whose varying fields differ only in order share no exchange
    /// (a missed merge, never a wrong one).
    static func varyingHeaders(_ request: HTTPRequest) -> String {
        var text = ""
        for field in request.headerFields where varyingNames.contains(field.name) {
            text += field.name.canonicalName
            text += ": "
            text += field.value
            text += "\n"
        }
        return text
    }

    /// The waiters' error when the owner was cancelled before the answer was complete.
    struct OwnerLeft: Error {}

    struct Key: Hashable, Sendable {
        let method: String
        let base: String
        let path: String
        let varying: String
        /// Hashed once: the registry's table hashes a key on insertion, lookup and removal, and
        /// again for its neighbours when one is removed (some 12,000 instructions a request).
        private let hash: Int

        init(method: String, base: String, path: String, varying: String) {
            (self.method, self.base, self.path, self.varying) = (method, base, path, varying)
            var hasher = Hasher()
            hasher.combine(method)
            hasher.combine(base)
            hasher.combine(path)
            hasher.combine(varying)
            hash = hasher.finalize()
        }

        static func == (a: Key, b: Key) -> Bool {
            a.hash == b.hash && a.method == b.method && a.base == b.base && a.path == b.path && a.varying == b.varying
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(hash)
        }
    }

    /// The exchanges in flight, by key.
    final class Registry: Sendable {
        private let exchanges = Mutex<[Key: Exchange]>([:])

        var count: Int { exchanges.withLock { $0.count } }

        var waiterCount: Int { exchanges.withLock { $0.values.reduce(0) { $0 + $1.waiterCount } } }

        /// The exchange in flight for `key` to wait on, or a new one the caller must run.
        func join(_ key: Key) -> (Exchange, isOwner: Bool) {
            exchanges.withLock { table in
                if let existing = table[key], existing.acceptsWaiters { return (existing, false) }
                let created = Exchange()
                table[key] = created
                return (created, true)
            }
        }

        func remove(_ key: Key, _ exchange: Exchange) {
            exchanges.withLock { table in
                if table[key] === exchange { table[key] = nil }
            }
        }
    }

    /// One shared network exchange and the waiters for its result.
    final class Exchange: Sendable {
        /// The shared answer: a struct, not a tuple, so that the generic types around it (`Result`,
        /// the continuations) find its metadata without a runtime lookup per exchange.
        struct Output: Sendable {
            var response: HTTPResponse
            var body: Data
            var report: ExchangeReport.Snapshot?
        }
        private struct State {
            var waiters: [Int: CheckedContinuation<Output, any Error>] = [:]
            var nextWaiter = 0
            var result: Result<Output, any Error>?
        }
        private let state = Mutex(State())

        var waiterCount: Int { state.withLock { $0.waiters.count } }

        /// Whether a new waiter may still join (no answer yet).
        var acceptsWaiters: Bool {
            state.withLock { $0.result == nil }
        }

        /// Waits for the shared result; cancelling the caller removes only this waiter.
        func value() async throws -> Output {
            let id = state.withLock { state -> Int in
                state.nextWaiter += 1
                return state.nextWaiter
            }
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    let finished = state.withLock { state -> Result<Output, any Error>? in
                        if let result = state.result { return result }
                        state.waiters[id] = continuation
                        return nil
                    }
                    if let finished { continuation.resume(with: finished) }
                    if Task.isCancelled { leave(id) }
                }
            } onCancel: {
                leave(id)
            }
        }

        private func leave(_ id: Int) {
            let continuation = state.withLock { $0.waiters.removeValue(forKey: id) }
            continuation?.resume(throwing: CancellationError())
        }

        /// Delivers the result to every waiter.
        func complete(_ result: Result<Output, any Error>) {
            let waiters = state.withLock { state -> [CheckedContinuation<Output, any Error>] in
                state.result = result
                defer { state.waiters = [:] }
                return Array(state.waiters.values)
            }
            for waiter in waiters { waiter.resume(with: result) }
        }
    }
}
