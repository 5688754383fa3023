import Synchronization

/// A bounded memo of values worked out from stored responses, one per key and variant, each
/// used only while the stored response is the one it was made from.
///
/// **Versioned.** An entry remembers the ``CachedResponse/Version`` it was made from; a stored
/// response with another version (replaced, revalidated) finds no entry and is worked out
/// afresh, its new value taking the old one's place.
///
/// **Bounded.** Past ``capacity`` entries, or ``capacityBytes`` of what the entries say they
/// hold, the memo starts over (empty) before it keeps the next one: no LRU bookkeeping on a hit.
///
/// One lock, taken once on a hit; a hit allocates nothing. The cache's stored-response facts
/// (`StoredFacts`) and the proxy's prepared answers use it.
package final class VersionedMemo<Value: Sendable>: Sendable {
    /// Where an entry is kept: one per stored response.
    @usableFromInline
    struct Key: Hashable {
        @usableFromInline var key: String
        @usableFromInline var variant: String

        @inlinable
        init(key: String, variant: String) {
            self.key = key
            self.variant = variant
        }
    }

    /// A value and what it was made from.
    @usableFromInline
    struct Slot {
        @usableFromInline var version: CachedResponse.Version
        @usableFromInline var value: Value
        @usableFromInline var bytes: Int

        @inlinable
        init(version: CachedResponse.Version, value: Value, bytes: Int) {
            self.version = version
            self.value = value
            self.bytes = bytes
        }
    }

    /// The entries and the bytes they say they hold.
    @usableFromInline
    struct Table {
        @usableFromInline var slots: [Key: Slot] = [:]
        @usableFromInline var bytes = 0

        @inlinable
        init() {}

        /// Keeps `slot` under `key`, starting over first when it would not fit.
        @inlinable
        mutating func keep(_ slot: Slot, forKey key: Key, capacity: Int, capacityBytes: Int) {
            if slots.count >= capacity || bytes + slot.bytes > capacityBytes {
                slots.removeAll(keepingCapacity: true)
                bytes = 0
            }
            if let old = slots.updateValue(slot, forKey: key) { bytes -= old.bytes }
            bytes += slot.bytes
        }
    }

    /// The most entries kept.
    package let capacity: Int
    /// The most bytes (as ``withValue(for:make:_:)``'s `make` counts them) kept.
    package let capacityBytes: Int
    @usableFromInline let table = Mutex(Table())

    /// An empty memo of at most `capacity` entries and `capacityBytes` bytes.
    package init(capacity: Int, capacityBytes: Int = .max) {
        self.capacity = capacity
        self.capacityBytes = capacityBytes
    }

    /// The number of entries kept now.
    package var count: Int { table.withLock { $0.slots.count } }

    /// The value for `stored`: the memo's when it was made from this version of `stored`, else
    /// `make()`'s, which is kept (as taking no bytes). `make` runs outside the lock, so two
    /// callers may both make a value; the last one made is kept.
    @inlinable
    package func value(for stored: CachedResponse, make: () -> Value) -> Value {
        let key = Key(key: stored.key, variant: stored.variant)
        let version = stored.version
        let found = table.withLock { table -> Value? in
            guard let slot = table.slots[key], slot.version == version else { return nil }
            return slot.value
        }
        if let found { return found }
        let value = make()
        let (capacity, capacityBytes) = (self.capacity, self.capacityBytes)
        table.withLock { $0.keep(Slot(version: version, value: value, bytes: 0), forKey: key, capacity: capacity,
                                     capacityBytes: capacityBytes) }
        return value
    }

    /// Runs `body` on the value for `stored`, in place, under the memo's lock: the memo's value
    /// when it was made from this version of `stored`, else the one `make` returns (with the
    /// bytes it counts for against ``capacityBytes``), which is kept with what `body` did to it.
    /// `make` is handed the value of another version of the same stored response, when the memo
    /// holds one (a revalidated response's value, to be made again from what did not change).
    @inlinable
    package func withValue<Result: Sendable>(for stored: CachedResponse, make: (Value?) -> (value: Value, bytes: Int),
                                             _ body: (inout Value) -> Result) -> Result {
        let key = Key(key: stored.key, variant: stored.variant)
        let version = stored.version
        let (capacity, capacityBytes) = (self.capacity, self.capacityBytes)
        return table.withLock { table -> Result in
            let index = table.slots.index(forKey: key)
            if let index, table.slots.values[index].version == version {
                return body(&table.slots.values[index].value)
            }
            let made = make(index.map { table.slots.values[$0].value })
            var slot = Slot(version: version, value: made.value, bytes: made.bytes)
            let result = body(&slot.value)
            // Another version of the same response (revalidated, replaced) is replaced where it
            // is, without hashing the key again.
            if let index, table.bytes - table.slots.values[index].bytes + slot.bytes <= capacityBytes {
                table.bytes += slot.bytes - table.slots.values[index].bytes
                table.slots.values[index] = slot
            } else {
                table.keep(slot, forKey: key, capacity: capacity, capacityBytes: capacityBytes)
            }
            return result
        }
    }
}
