import OpenAPIRuntime
import Synchronization

/// What a middleware of a chain is to the HTTP cache's stored answers, told without a protocol
/// cast where its type has said (``note(source:)``, ``note(adapter:)``) or is one of Freshet's
/// plain hops.
///
/// The runtime's first check of a type against a protocol reads every conformance record of the
/// process, about a million instructions in a release build: a command that reads the cache asked
/// three of them (the cache and the content decoder against ``StoredResponseSource`` and
/// ``StoredResponseAdapter``) before it could look anything up. A cast to a concrete type compares
/// metadata. Types nobody noted are still asked by protocol, so any middleware may be a source or
/// an adapter.
package enum StoredRoles {
    /// One middleware's role, with the middleware as that role.
    package enum Role: Sendable {
        /// A ``StoredResponseSource`` (the cache).
        case source(any StoredResponseSource)
        /// A ``StoredResponseAdapter`` (content decoding).
        case adapter(any StoredResponseAdapter)
        /// Neither.
        case neither
    }

    /// For each noted type, how a middleware of that type becomes its role.
    private static let noted = Mutex<[ObjectIdentifier: @Sendable (any ClientMiddleware) -> Role]>([:])

    /// Notes that middlewares of type `Source` are ``StoredResponseSource``s.
    package static func note<Source: ClientMiddleware & StoredResponseSource>(source: Source.Type) {
        noted.withLock { $0[ObjectIdentifier(Source.self)] = { ($0 as? Source).map { .source($0) } ?? .neither } }
    }

    /// Notes that middlewares of type `Adapter` are ``StoredResponseAdapter``s.
    package static func note<Adapter: ClientMiddleware & StoredResponseAdapter>(adapter: Adapter.Type) {
        noted.withLock { $0[ObjectIdentifier(Adapter.self)] = { ($0 as? Adapter).map { .adapter($0) } ?? .neither } }
    }

    /// What `middleware` is: a source first, then an adapter, else neither.
    package static func role(of middleware: any ClientMiddleware) -> Role {
        if APIClient.isPlainHop(middleware) { return .neither }
        if let make = noted.withLock({ $0[ObjectIdentifier(type(of: middleware))] }) { return make(middleware) }
        if let source = middleware as? any StoredResponseSource { return .source(source) }
        if let adapter = middleware as? any StoredResponseAdapter { return .adapter(adapter) }
        return .neither
    }

    /// Whether middlewares of `type` are told by their type.
    package static func isNoted(_ type: any ClientMiddleware.Type) -> Bool {
        noted.withLock { $0[ObjectIdentifier(type)] != nil }
    }

    /// Whether `middleware` is a ``StoredResponseSource``.
    package static func isSource(_ middleware: any ClientMiddleware) -> Bool {
        if case .source = role(of: middleware) { return true }
        return false
    }
}
