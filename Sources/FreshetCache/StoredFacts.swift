import Foundation
import Synchronization

/// A memo of what stored responses say about their own reuse — their directives, freshness
/// lifetime and age on arrival — so a hit does not parse header fields again.
///
/// An entry belongs to one stored response: it is used only while the stored response's
/// ``CachedResponse/Version`` is the one it was made from, so a replaced or revalidated
/// response is worked out afresh. Bounded: past ``capacity`` entries it starts over.
final class StoredFacts: Sendable {
    /// What one stored response says.
    struct Facts: Sendable {
        /// The directives this cache obeys (a targeted field's, else `Cache-Control`'s).
        var control: CacheControl
        /// The freshness lifetime in seconds (§4.2.1).
        var lifetime: Double
        /// The corrected initial age in seconds (§4.2.3): the age with no resident time.
        var initialAge: Double
    }

    private struct Key: Hashable {
        var key: String
        var variant: String
    }

    /// The most entries kept.
    static let capacity = 8192

    private let table = Mutex<[Key: (version: CachedResponse.Version, facts: Facts)]>([:])

    /// The facts of `stored`, from the memo or `compute`.
    func facts(of stored: CachedResponse, compute: () -> Facts) -> Facts {
        let key = Key(key: stored.key, variant: stored.variant)
        let version = stored.version
        if let entry = table.withLock({ $0[key] }), entry.version == version { return entry.facts }
        let facts = compute()
        table.withLock { table in
            if table.count >= Self.capacity { table.removeAll(keepingCapacity: true) }
            table[key] = (version, facts)
        }
        return facts
    }
}
