import Foundation
import HTTPTypes
import OpenAPIRuntime
import Synchronization

/// Adds credentials to every request and refreshes them once when the server refuses them —
/// Alamofire's `AuthenticationInterceptor`, as a middleware.
///
/// - Before a request: the current credential is applied (``apply``). With none yet, or one that
///   ``isExpired`` says has run out, it is refreshed first.
/// - On `401` (or whatever ``refreshWhen`` says): the credential is refreshed **once** for all
///   requests that were refused with it: concurrent requests wait on that single refresh, then
///   each is sent again once with the new credential. A request refused with a credential that
///   has already been replaced is simply sent again with the new one.
/// - When the refresh fails, every request refused with that credential and sent before the
///   failure fails with ``APIError/authenticationFailed(cause:)`` — those waiting on the refresh and
///   those whose `401` is read only after it failed; a request sent after the failure tries again.
/// - A request whose body can be sent only once (``RequestBody/isReplayable`` false) is not sent
///   again: its `401` is returned as it is.
///
/// Nothing here logs, and the middleware's description never shows the credential. Place it
/// outside the redirect middleware (``Middlewares/standard(logger:tracing:metrics:authentication:retry:rateLimit:coalescing:decompression:innermost:)``
/// does), so credentials are added before a redirect to another host strips them.
///
/// Give the refresh its own timeout (the client it uses has one): requests wait for it.
///
/// ```swift
/// let auth = AuthenticationMiddleware.bearer(token: keychain.accessToken) { _ in
///     try await tokenClient.value(.refresh(using: keychain.refreshToken)).accessToken
/// }
/// ```
public struct AuthenticationMiddleware<Credential: Sendable>: ClientMiddleware, CustomStringConvertible {
    /// Puts a credential on a request (an `Authorization` field, a query item, …).
    public var apply: @Sendable (Credential, inout HTTPRequest) -> Void
    /// Makes a new credential; it gets the one that was refused (`nil` when there was none).
    public var refresh: @Sendable (Credential?) async throws -> Credential
    /// Whether a response means the credential must be refreshed (default: status `401`).
    public var refreshWhen: @Sendable (HTTPResponse) -> Bool
    /// Whether a credential must be refreshed before it is used (an expiry date passed).
    public var isExpired: @Sendable (Credential) -> Bool
    private let store: CredentialStore<Credential>

    /// Creates the middleware.
    /// - Parameters:
    ///   - credential: the credential to start with (`nil`: refresh before the first request).
    ///   - apply: puts a credential on a request.
    ///   - refresh: makes a new credential from the refused one.
    ///   - refreshWhen: whether a response asks for a refresh (default: `401 Unauthorized`).
    ///   - isExpired: whether a credential must be refreshed before use (default: never).
    public init(
        credential: Credential?,
        apply: @escaping @Sendable (Credential, inout HTTPRequest) -> Void,
        refresh: @escaping @Sendable (Credential?) async throws -> Credential,
        refreshWhen: @escaping @Sendable (HTTPResponse) -> Bool = { $0.status == .unauthorized },
        isExpired: @escaping @Sendable (Credential) -> Bool = { _ in false }
    ) {
        self.apply = apply
        self.refresh = refresh
        self.refreshWhen = refreshWhen
        self.isExpired = isExpired
        self.store = CredentialStore(credential)
    }

    /// The credential requests are sent with now.
    public var credential: Credential? { store.current.credential }

    /// How many refreshes have succeeded.
    public var refreshCount: Int { store.current.seen.generation }

    /// Never shows the credential.
    public var description: String { "AuthenticationMiddleware(credential: \(credential == nil ? "none" : "<redacted>"))" }

    /// Applies the credential, and refreshes it as described above.
    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let (credential, sent) = try await usable()
        var authorized = request
        apply(credential, &authorized)
        let (response, responseBody) = try await next(authorized, body, baseURL)
        let replayable = HTTPBody.canBeSentAgain(body)
        guard refreshWhen(response), replayable else { return (response, responseBody) }
        await HTTPBody.discard(responseBody)
        let (fresh, _) = try await store.refreshed(after: sent, using: refresh)
        var retried = request
        apply(fresh, &retried)
        return try await next(retried, body, baseURL)
    }

    /// The current credential, refreshed first when there is none, it has expired, or a refresh
    /// is under way.
    private func usable() async throws(APIError) -> (Credential, CredentialStore<Credential>.Seen) {
        let current = store.current
        if let credential = current.credential, !current.refreshing, !isExpired(credential) {
            return (credential, current.seen)
        }
        let (credential, generation) = try await store.refreshed(after: current.seen, using: refresh)
        return (credential, CredentialStore<Credential>.Seen(generation: generation, failures: store.current.seen.failures))
    }
}

extension AuthenticationMiddleware where Credential == String {
    /// A bearer token: `Authorization: Bearer <token>`, refreshed by `refresh` on `401`.
    public static func bearer(
        token: String?, refresh: @escaping @Sendable (String?) async throws -> String
    ) -> AuthenticationMiddleware {
        AuthenticationMiddleware(credential: token, apply: { token, request in
            request.headerFields[.authorization] = "Bearer \(token)"
        }, refresh: refresh)
    }
}

/// The credential, its generation (one per successful refresh), the refresh under way and the
/// last one that failed.
final class CredentialStore<Credential: Sendable>: Sendable {
    /// What a request saw when it was sent: the credential's generation and how many refreshes
    /// had failed by then.
    struct Seen: Sendable {
        var generation: Int
        var failures: Int
    }

    private struct State {
        var credential: Credential?
        var generation = 0
        var refresh: Task<(Credential, Int), any Error>?
        var failures = 0
        var lastFailure: (any Error)?
    }

    private let state: Mutex<State>

    init(_ credential: Credential?) {
        state = Mutex(State(credential: credential))
    }

    var current: (credential: Credential?, seen: Seen, refreshing: Bool) {
        state.withLock {
            ($0.credential, Seen(generation: $0.generation, failures: $0.failures), $0.refresh != nil)
        }
    }

    /// A credential newer than the one a request was sent with: the one already there, the
    /// refresh under way, or a refresh started now. Only one refresh runs at a time; when the
    /// refresh of that same credential failed after the request was sent, it fails the same way.
    func refreshed(after seen: Seen, using refresh: @escaping @Sendable (Credential?) async throws -> Credential)
        async throws(APIError) -> (Credential, Int)
    {
        let next = state.withLock { state -> Next in
            // A newer credential is there (a generation is only added with one).
            if state.generation > seen.generation, state.refresh == nil, let credential = state.credential {
                return .ready(credential, state.generation)
            }
            if let running = state.refresh { return .wait(running) }
            // Refreshing this credential already failed while the request was out: one attempt
            // serves every request refused with it, as a refresh under way would have.
            if state.generation == seen.generation, state.failures > seen.failures, let failure = state.lastFailure {
                return .failed(failure)
            }
            let refused = state.credential
            // Detached: the refresh serves every waiter, so it takes none of the first one's task
            // locals (its trace span, a transfer's relaxed deadlines).
            let started = Task.detached { [self] () async throws -> (Credential, Int) in
                do {
                    let fresh = try await refresh(refused)
                    return self.state.withLock { state in
                        state.credential = fresh
                        state.generation += 1
                        state.refresh = nil
                        return (fresh, state.generation)
                    }
                } catch {
                    self.state.withLock { state in
                        state.refresh = nil
                        state.failures += 1
                        state.lastFailure = error
                    }
                    throw error
                }
            }
            state.refresh = started
            return .wait(started)
        }
        switch next {
        case .ready(let credential, let generation): return (credential, generation)
        case .wait(let task): return try await waitFor(task)
        case .failed(let failure): throw .authenticationFailed(cause: failure)
        }
    }

    /// What ``refreshed(after:using:)`` does next: answer at once, or wait for a refresh.
    private enum Next {
        case ready(Credential, Int)
        case wait(Task<(Credential, Int), any Error>)
        case failed(any Error)
    }

    /// The refresh's credential, or its failure as ``APIError/authenticationFailed(cause:)``.
    private func waitFor(_ task: Task<(Credential, Int), any Error>) async throws(APIError) -> (Credential, Int) {
        do {
            return try await task.value
        } catch {
            throw .authenticationFailed(cause: error)
        }
    }
}
