import Foundation
import HTTPTypes
import OpenAPIRuntime
import Synchronization

/// Lets concurrent identical GET/HEAD requests share one network exchange — the seeds'
/// `share(replay: 1)`.
///
/// Requests are identical when method, URL and every header that can change the answer
/// (`Authorization`, `Accept`, `Accept-Language`, `Cookie`, conditional headers) are equal, so
/// two users' requests never share a response. The shared response body is read once (up to
/// ``maxBodyBytes``) and replayed to every waiter.
///
/// One waiter cancelling does not disturb the others; when every waiter has cancelled, the
/// exchange is cancelled too.
public struct CoalescingMiddleware: ClientMiddleware {
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

    /// Joins an identical exchange in flight, or starts one.
    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard request.method == .get || request.method == .head, body == nil,
              let url = request.url(relativeTo: baseURL) else {
            return try await next(request, body, baseURL)
        }
        let key = Key(method: request.method.rawValue, url: url.absoluteString, varying: Self.varyingHeaders(request))
        let (exchange, isOwner) = registry.join(key)
        guard isOwner else {
            return Self.deliver(try await exchange.value(), for: request)
        }
        // The owner runs the exchange in a task of its own so that its cancellation does not end
        // the exchange for the other waiters; since `next` is only valid during this call, the
        // owner returns only after that task has ended (at once when every waiter has left).
        let limit = maxBodyBytes
        let registry = self.registry
        let outcome: Result<Exchange.Output, any Error> = await withoutActuallyEscaping(next) { next in
            let task = Task {
                let result: Result<Exchange.Output, any Error>
                do {
                    let (response, responseBody) = try await next(request, body, baseURL)
                    result = .success((response, try await APIClient.collect(responseBody, limit: limit, url: url)))
                } catch {
                    result = .failure(error)
                }
                registry.remove(key, exchange)
                exchange.complete(result)
            }
            exchange.attach(task)
            let outcome: Result<Exchange.Output, any Error>
            do {
                outcome = .success(try await exchange.value())
            } catch {
                outcome = .failure(error)
            }
            await task.value
            return outcome
        }
        return Self.deliver(try outcome.get(), for: request)
    }

    private static func deliver(_ output: Exchange.Output, for request: HTTPRequest) -> (HTTPResponse, HTTPBody?) {
        (output.0, request.method == .head ? nil : HTTPBody(output.1))
    }

    static func varyingHeaders(_ request: HTTPRequest) -> [String] {
        let names: [HTTPField.Name] = [.authorization, .accept, .acceptLanguage, .acceptEncoding, .cookie,
                                       .ifNoneMatch, .ifModifiedSince, .range, .cacheControl]
        return names.map { request.headerFields[values: $0].joined(separator: ", ") }
    }

    struct Key: Hashable, Sendable {
        var method: String
        var url: String
        var varying: [String]
    }

    /// The exchanges in flight, by key.
    final class Registry: Sendable {
        private let exchanges = Mutex<[Key: Exchange]>([:])

        var count: Int { exchanges.withLock { $0.count } }

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
        typealias Output = (HTTPResponse, Data)
        private struct State {
            var waiters: [Int: CheckedContinuation<Output, any Error>] = [:]
            var nextWaiter = 0
            var result: Result<Output, any Error>?
            var task: Task<Void, Never>?
            var abandoned = false
        }
        private let state = Mutex(State())

        /// Whether a new waiter may still join (not finished, not abandoned by every waiter).
        var acceptsWaiters: Bool {
            state.withLock { $0.result == nil && !$0.abandoned }
        }

        /// Gives the exchange the task running it, so it can be cancelled when every waiter leaves.
        func attach(_ task: Task<Void, Never>) {
            let cancelNow = state.withLock { state -> Bool in
                state.task = task
                return state.abandoned
            }
            if cancelNow { task.cancel() }
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
            let (continuation, task) = state.withLock { state -> (CheckedContinuation<Output, any Error>?, Task<Void, Never>?) in
                guard let continuation = state.waiters.removeValue(forKey: id) else { return (nil, nil) }
                if state.waiters.isEmpty, state.result == nil {
                    state.abandoned = true
                    return (continuation, state.task)
                }
                return (continuation, nil)
            }
            continuation?.resume(throwing: CancellationError())
            task?.cancel()
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
