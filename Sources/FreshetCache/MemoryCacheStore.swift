import Foundation
import Freshet
import Synchronization

/// A ``CacheStore`` in memory, for tests and for processes that should not touch the disk.
///
/// It behaves like ``SQLiteCacheStore``: variants come back most recently stored first, and after
/// each save the least recently used responses are evicted until the stored bytes
/// (``CachedResponse/size``) fit in ``maxBytes``. Safe to use from any number of tasks.
public final class MemoryCacheStore: CacheStore {
    /// The size cap in bytes. A response larger than this is never stored.
    public let maxBytes: Int
    private let state = Mutex(State())

    private struct Entry {
        var response: CachedResponse
        var size: Int
        var stored: UInt64
        var accessed: UInt64
    }

    private struct State {
        /// Entries by key, then by variant.
        var entries: [String: [String: Entry]] = [:]
        var bytes = 0
        var count = 0
        var outcomes: [String: Int] = [:]
        /// A logical clock: every save and lookup takes the next tick.
        var clock: UInt64 = 0

        mutating func tick() -> UInt64 {
            clock += 1
            return clock
        }

        @discardableResult
        mutating func remove(key: String, variant: String) -> Entry? {
            guard let entry = entries[key]?.removeValue(forKey: variant) else { return nil }
            if entries[key]?.isEmpty == true { entries[key] = nil }
            bytes -= entry.size
            count -= 1
            return entry
        }

        mutating func evict(maxBytes: Int) {
            guard bytes > maxBytes else { return }
            let byAge = entries.values.flatMap(\.values).sorted { $0.accessed < $1.accessed }
            for entry in byAge {
                guard bytes > maxBytes else { break }
                remove(key: entry.response.key, variant: entry.response.variant)
            }
        }
    }

    /// Creates an empty store keeping at most `maxBytes` (32 MiB by default).
    public init(maxBytes: Int = 32 * 1024 * 1024) {
        self.maxBytes = maxBytes
    }

    /// Every stored variant for `key`, most recently stored first; marks them as used.
    public func variants(forKey key: String) async throws -> [CachedResponse] {
        state.withLock { state in
            guard var variants = state.entries[key], !variants.isEmpty else { return [] }
            let now = state.tick()
            for variant in variants.keys { variants[variant]?.accessed = now }
            state.entries[key] = variants
            return variants.values.sorted { $0.stored > $1.stored }.map(\.response)
        }
    }

    /// Stores `response`, replacing the same key and variant, then evicts least recently used
    /// responses until the store fits in ``maxBytes``. A response larger than ``maxBytes`` is
    /// not stored, and the older copy of its variant is removed.
    public func save(_ response: CachedResponse) async throws {
        let size = response.size
        state.withLock { state in
            state.remove(key: response.key, variant: response.variant)
            guard size <= maxBytes else { return }
            let now = state.tick()
            state.entries[response.key, default: [:]][response.variant] =
                Entry(response: response, size: size, stored: now, accessed: now)
            state.bytes += size
            state.count += 1
            state.evict(maxBytes: maxBytes)
        }
    }

    /// Removes every variant of `key`.
    public func remove(key: String) async throws {
        state.withLock { state in
            for variant in state.entries[key]?.keys.map({ $0 }) ?? [] {
                state.remove(key: key, variant: variant)
            }
        }
    }

    /// Removes every response whose display URL equals `url`.
    public func remove(url: String) async throws {
        state.withLock { state in
            let matching = state.entries.values.flatMap(\.values).filter { $0.response.url == url }
            for entry in matching {
                state.remove(key: entry.response.key, variant: entry.response.variant)
            }
        }
    }

    /// Removes every stored response and resets the outcome counters.
    public func removeAll() async throws {
        state.withLock { $0 = State() }
    }

    /// Adds one to the counter of `outcome`.
    public func record(_ outcome: CacheOutcome) async throws {
        state.withLock { $0.outcomes[outcome.rawValue, default: 0] += 1 }
    }

    /// The number of stored responses, their bytes and the outcome counters.
    public func stats() async throws -> CacheStats {
        state.withLock { CacheStats(entries: $0.count, bytes: $0.bytes, outcomes: $0.outcomes) }
    }
}
