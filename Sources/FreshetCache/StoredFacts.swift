import Foundation
import Synchronization

/// A memo of what stored responses say about their own reuse — their directives, freshness
/// lifetime and age on arrival — so a hit does not parse header fields again.
///
/// An entry belongs to one stored response: it is used only while the key, variant, request
/// and response times and number of fields are those it was made from, so a replaced or
/// revalidated response is worked out afresh. Bounded: past ``capacity`` entries it starts over.
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

    private struct Entry {
        var requestTime: Date
        var responseTime: Date
        var fieldCount: Int
        var facts: Facts
    }

    /// The most entries kept.
    static let capacity = 8192

    private let table = Mutex<[Key: Entry]>([:])

    /// The facts of `stored`, from the memo or `compute`.
    func facts(of stored: CachedResponse, compute: () -> Facts) -> Facts {
        let key = Key(key: stored.key, variant: stored.variant)
        if let entry = table.withLock({ $0[key] }), entry.responseTime == stored.responseTime,
           entry.requestTime == stored.requestTime, entry.fieldCount == stored.headers.count {
            return entry.facts
        }
        let facts = compute()
        let entry = Entry(requestTime: stored.requestTime, responseTime: stored.responseTime,
                          fieldCount: stored.headers.count, facts: facts)
        table.withLock { table in
            if table.count >= Self.capacity { table.removeAll(keepingCapacity: true) }
            table[key] = entry
        }
        return facts
    }
}
