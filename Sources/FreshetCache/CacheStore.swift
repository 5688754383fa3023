import Foundation
import Freshet
import HTTPTypes

/// One stored response: a variant of a cache entry.
///
/// `key` identifies the entry (method, URL and credential, hashed: no URL query secret and no
/// token is ever stored in it); `variant` tells apart the responses `Vary` selects between.
public struct CachedResponse: Sendable, Equatable {
    /// The primary cache key: a hex SHA-256 of method, URL and credential.
    public var key: String
    /// The secondary key: the normalised values of the request headers named by `Vary`
    /// (empty when the response has no `Vary`).
    public var variant: String
    /// The request URL with secrets redacted, for display (`freshet cache stats`) and invalidation.
    public var url: String
    /// The stored status code.
    public var status: Int
    /// The stored header fields, in order.
    public var headers: HTTPFields
    /// The stored body.
    public var body: Data
    /// When the request that produced this response was sent (`request_time`, RFC 9111 §4.2.3).
    public var requestTime: Date
    /// When the response was received (`response_time`, RFC 9111 §4.2.3).
    public var responseTime: Date

    /// Creates a stored response.
    public init(key: String, variant: String, url: String, status: Int, headers: HTTPFields, body: Data,
                requestTime: Date, responseTime: Date) {
        self.key = key
        self.variant = variant
        self.url = url
        self.status = status
        self.headers = headers
        self.body = body
        self.requestTime = requestTime
        self.responseTime = responseTime
    }

    /// What tells this stored response apart from others stored under the same key and variant
    /// over time: replacing it or updating it from a `304` changes its times. A memo of work
    /// derived from a stored response (parsed directives, a prepared head) is valid while the
    /// version it was made from is the stored one's.
    public struct Version: Hashable, Sendable {
        let key: String
        let variant: String
        let requestTime: Date
        let responseTime: Date
        let fieldCount: Int
        let bodyCount: Int
    }

    /// This stored response's ``Version``.
    public var version: Version {
        Version(key: key, variant: variant, requestTime: requestTime, responseTime: responseTime,
                fieldCount: headers.count, bodyCount: body.count)
    }

    /// The bytes this entry costs in a store (body plus header text).
    public var size: Int {
        body.count + headers.reduce(0) { $0 + $1.name.rawName.utf8.count + $1.value.utf8.count + 4 }
    }
}

/// What a store holds and how the cache has answered.
public struct CacheStats: Sendable, Equatable, Codable {
    /// Stored responses (variants).
    public var entries: Int
    /// Bytes stored.
    public var bytes: Int
    /// How many requests were answered with each `CacheOutcome`, by raw value.
    public var outcomes: [String: Int]

    /// Creates statistics.
    public init(entries: Int, bytes: Int, outcomes: [String: Int]) {
        self.entries = entries
        self.bytes = bytes
        self.outcomes = outcomes
    }
}

/// Where the cache keeps responses. Implementations must be safe to call concurrently.
public protocol CacheStore: Sendable {
    /// Every stored variant for `key`, most recently stored first; marks them as used (for LRU).
    func variants(forKey key: String) async throws -> [CachedResponse]
    /// Stores `response`, replacing the variant with the same `key` and `variant`, then evicts
    /// least recently used entries if the store is over its size cap.
    func save(_ response: CachedResponse) async throws
    /// Removes every variant of `key`.
    func remove(key: String) async throws
    /// Removes every entry whose display URL equals `url` (used to invalidate after unsafe methods).
    func remove(url: String) async throws
    /// Removes everything.
    func removeAll() async throws
    /// Counts one answer of the cache.
    func record(_ outcome: CacheOutcome) async throws
    /// What the store holds and the outcome counters.
    func stats() async throws -> CacheStats
    /// Reads what is stored for `keys` ahead of their lookups, in one go where the store can (a
    /// batch of keys in one database read), so that the ``variants(forKey:)`` calls that follow
    /// are answered from memory. Does not mark anything as used. A hint: a store without a
    /// memory does nothing.
    func preload(keys: [String]) async throws
    /// Writes whatever the store keeps only in memory (queued responses, LRU stamps, counters) to
    /// where it lasts, and returns once it is there. Call it before the process exits.
    func flush() async throws
    /// The store as a ``MemoryLookup`` when it is one, else `nil`. A store that conforms to
    /// ``MemoryLookup`` gets this without writing it: it saves ``CacheMiddleware`` a dynamic cast,
    /// whose first check of a type against a protocol reads every conformance record of the
    /// process (about a million instructions, once in every command that opens the cache).
    var memoryLookup: (any MemoryLookup)? { get }
}

extension CacheStore {
    /// Nothing to write: the store keeps nothing only in memory.
    public func flush() async throws {}

    /// Not a ``MemoryLookup``.
    public var memoryLookup: (any MemoryLookup)? { nil }

    /// Nothing to read ahead: every lookup is as quick as a batch would be.
    public func preload(keys: [String]) async throws {}
}

/// A store with a memory that answers without suspending: a server may then answer cache hits
/// on its event loop (``CacheMiddleware/decisionFromMemory(for:at:)``).
public protocol MemoryLookup: CacheStore {
    /// Every variant stored for `key` when the memory knows the key (marked as used, like
    /// ``CacheStore/variants(forKey:)``); `nil` when only ``CacheStore/variants(forKey:)`` can tell.
    func variantsInMemory(forKey key: String) -> [CachedResponse]?
    /// Counts one answer of the cache, like ``CacheStore/record(_:)``.
    func count(_ outcome: CacheOutcome)
    /// Stores `response` like ``CacheStore/save(_:)``, without suspending: the memory tier holds
    /// it when this returns, and it is written to where it lasts later.
    func saveWithoutWaiting(_ response: CachedResponse)
    /// ``saveWithoutWaiting(_:)`` for a stored response freshened by a `304` (new times and
    /// fields, the same body): a store that writes behind may keep it in memory alone when it
    /// wrote the key a short while ago (its copy on disk is then that much older).
    func freshenWithoutWaiting(_ response: CachedResponse)
    /// The bytes the memory tier holds now (for a metrics gauge).
    var memoryTierBytes: Int { get }
}

extension MemoryLookup {
    /// The store itself.
    public var memoryLookup: (any MemoryLookup)? { self }

    /// The bytes the memory tier holds now (for a metrics gauge); 0 when the store does not say.
    public var memoryTierBytes: Int { 0 }

    /// Saves `response` (``saveWithoutWaiting(_:)``).
    public func freshenWithoutWaiting(_ response: CachedResponse) {
        saveWithoutWaiting(response)
    }
}

/// A store that lets concurrent misses for one key — in this process and in every other
/// process sharing the store — make a single origin request: the cache fills a key under the
/// store's lock for it, and the callers that waited then find the response stored.
///
/// ``CacheMiddleware`` uses it on a plain miss (a `GET` with nothing stored for its key, no
/// `Range` and no validators of the caller's own).
public protocol CacheFillCoordinating: CacheStore {
    /// Runs `fill` while holding the fill lock of `key`, after any earlier holder has finished.
    ///
    /// `fill` gets `true` when it holds the lock and so should look in the store again first:
    /// an earlier holder may have stored the answer meanwhile. It gets `false` when the lock
    /// could not be had within the store's bounded wait, or the earlier holder could not store
    /// what it fetched (nothing will be there to find): it should then go to the origin at once,
    /// as if there were no lock.
    func withFillLock<T: Sendable>(forKey key: String, _ fill: (_ locked: Bool) async throws -> T) async throws -> T
}

// MARK: - Readiness

/// Whether a store can answer now, as a readiness probe (`freshet proxy`'s `/readyz`) asks it.
public enum StoreReadiness: Sendable, Equatable {
    /// The store answers.
    case ready
    /// The store does not answer now, and why, in one line with no secret in it.
    case notReady(String)
}

/// A store that can tell, cheaply, whether it answers now: a trivial read, or the state of its
/// connection. The check is bounded by the store's own deadlines.
public protocol CacheStoreReadiness: CacheStore {
    /// Whether the store answers now.
    func readiness() async -> StoreReadiness
}

extension MemoryCacheStore: CacheStoreReadiness {
    /// Always ready: the store is memory.
    public func readiness() async -> StoreReadiness { .ready }
}

extension SQLiteCacheStore: CacheStoreReadiness {
    /// Ready when a trivial read of the cache's table succeeds.
    public func readiness() async -> StoreReadiness {
        do {
            _ = try await writer.read { db in try Int.fetchOne(db, sql: "SELECT 1 FROM cache_entry LIMIT 1") }
            return .ready
        } catch {
            let reason = String(describing: error).split(whereSeparator: \.isNewline).joined(separator: " ")
            return .notReady("the SQLite cache database cannot be read: \(reason)")
        }
    }
}

// The SQLite store's readiness read (imported here, below the file's other declarations, as this part was appended).
import GRDB
