import HTTPTypes

/// Interim (`1xx`) responses an origin sends before its final response, such as `103 Early Hints`.
///
/// A transport that sees them (FreshetTransports' `HTTP1Transport`) hands each one to the
/// ``handler`` of the task that sends the request, and awaits it before reading on, so the
/// handler sees them in order and before the final response is returned. `100 Continue` and
/// `101 Switching Protocols` are never handed over. Interim responses are never cached and never
/// part of the final response.
///
/// The handler is a task-local value: it reaches the transport through the middleware chain
/// because that chain is awaited in the same task; work started with `Task.detached` (such as a
/// cache's background revalidation) does not see it.
public enum InterimResponses {
    /// What receives the interim responses.
    ///
    /// (A struct rather than a bare closure: with an optional closure as the task-local value,
    /// optimized builds by Swift 6.3 crashed binding it.)
    public struct Handler: Sendable {
        /// Called with each interim response, in order; the transport waits for it to return.
        public let receive: @Sendable (HTTPResponse) async -> Void

        /// A handler calling `receive`.
        public init(_ receive: @escaping @Sendable (HTTPResponse) async -> Void) {
            self.receive = receive
        }
    }

    /// Receives the interim responses of requests sent by the current task; `nil`: they are dropped.
    @TaskLocal public static var handler: Handler?
}
