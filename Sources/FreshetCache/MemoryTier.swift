import Foundation

/// The in-memory tier of ``SQLiteCacheStore`` (and of FreshetPostgres' store): for each key it holds, the complete list of stored
/// variants (most recently stored first; an empty list says "nothing stored"), least recently
/// used lists dropped first once the bytes held pass ``capacity``.
///
/// A value type guarded by its owner's lock; every operation is O(1) but eviction, which sorts
/// once and drops down to 90% of the capacity, so it runs seldom.
package struct MemoryTier {
    private struct Slot {
        var variants: [CachedResponse]
        var bytes: Int
        var used: UInt64
        /// The oldest LRU stamp of the key's rows on disk as far as this process knows (Unix
        /// seconds; `-infinity`: unknown), for a store that rewrites stamps at most so often.
        var stamped: Double
        /// When this process last queued a write of one of the key's responses (Unix seconds;
        /// `-infinity`: never), for a store that writes freshened responses at most so often.
        var saved = -Double.infinity
        /// The variants freshened here since the key was last written: newer than their copies
        /// on disk (``freshen(with:now:interval:size:)``, ``takeUnsaved()``).
        var unsaved: [String] = []
    }

    /// What an empty list (a known absence) costs, and what each list costs beyond its responses.
    package static let slotOverhead = 96

    /// The most bytes held at once.
    package let capacity: Int
    private var slots: [String: Slot] = [:]
    package private(set) var bytes = 0
    /// A logical clock: each use takes the next tick (for LRU, here and on disk).
    package private(set) var clock: UInt64 = 0

    package init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// The next tick of the clock.
    package mutating func tick() -> UInt64 {
        clock &+= 1
        return clock
    }

    /// The variants held for `key`, marked as used; `nil` when the tier does not know the key.
    package mutating func variants(forKey key: String) -> [CachedResponse]? {
        guard let index = slots.index(forKey: key) else { return nil }
        let now = tick()
        slots.values[index].used = now
        return slots.values[index].variants
    }

    /// Whether the tier knows `key` (holds its list, or knows nothing is stored), without marking it used.
    package func knows(_ key: String) -> Bool {
        slots[key] != nil
    }

    /// Holds `variants` as everything stored for `key`, whose rows' oldest LRU stamp on disk is
    /// `stamped` (`nil`: the stamp the tier knew for the key, if any).
    package mutating func put(_ variants: [CachedResponse], forKey key: String, stamped: Double? = nil) {
        let stamped = stamped ?? slots[key]?.stamped ?? -.infinity
        let size = Self.slotOverhead + variants.reduce(0) { $0 + $1.size }
        // One entry never crowds out the rest.
        guard size <= capacity / 4 || size <= Self.slotOverhead else { return remove(key: key) }
        // Replaced in one lookup of the key, not removed and inserted.
        if let old = slots.updateValue(Slot(variants: variants, bytes: size, used: tick(), stamped: stamped), forKey: key) {
            bytes -= old.bytes
        }
        bytes += size
        evictIfNeeded()
    }

    /// Puts `response` first among its key's variants, replacing the same variant — when the tier
    /// holds that key; otherwise nothing changes (the key's other variants are not known here).
    /// `now`: when the response's row is stamped; it is the key's stamp when it is its only variant.
    /// `savedAt`: when the write of `response` was queued (for ``freshen(with:now:interval:size:)``;
    /// `now` when not given).
    package mutating func update(with response: CachedResponse, stampedAt now: Double = -.infinity, savedAt: Double? = nil) {
        guard let slot = slots[response.key] else { return }
        var variants = slot.variants
        variants.removeAll { $0.variant == response.variant }
        variants.insert(response, at: 0)
        put(variants, forKey: response.key, stamped: variants.count == 1 ? now : nil)
        guard let index = slots.index(forKey: response.key) else { return }
        slots.values[index].saved = savedAt ?? now
        // The key's other variants freshened in memory alone still are.
        slots.values[index].unsaved = slot.unsaved.filter { $0 != response.variant }
    }

    /// Puts `response`, the stored response of its variant freshened by a `304` (new times and
    /// fields, the same body), in place of that variant — when the tier holds the key and a write
    /// of it was queued less than `interval` seconds before `now`: `true` then, and the write
    /// may be skipped (the disk keeps that copy, at most `interval` older; ``takeUnsaved()`` hands
    /// it back for the write before the process exits). `false` changes nothing.
    /// `size`: `response.size` (the caller works it out outside its lock).
    package mutating func freshen(with response: CachedResponse, now: Double, interval: Double, size: Int) -> Bool {
        guard let index = slots.index(forKey: response.key), now - slots.values[index].saved < interval,
              let at = slots.values[index].variants.firstIndex(where: { $0.variant == response.variant })
        else { return false }
        // A key's only variant takes all its list's bytes but the overhead (`put`'s sum): a
        // size walks every field.
        let old = slots.values[index].variants.count == 1
            ? slots.values[index].bytes - Self.slotOverhead : slots.values[index].variants[at].size
        slots.values[index].variants[at] = response
        slots.values[index].bytes += size - old
        if !slots.values[index].unsaved.contains(response.variant) {
            slots.values[index].unsaved.append(response.variant)
        }
        bytes += size - old
        evictIfNeeded()
        return true
    }

    /// The responses freshened in memory alone (``freshen(with:now:interval:size:)``) that the
    /// tier still holds, newer than their copies on disk; the tier then counts them as written.
    /// A store writes them when it is flushed, so that the next process finds them. One pass
    /// over the tier's keys (a flush is at exit, or beside a removal that passes over them too).
    package mutating func takeUnsaved() -> [CachedResponse] {
        let keys = slots.compactMap { $0.value.unsaved.isEmpty ? nil : $0.key }
        var responses: [CachedResponse] = []
        for key in keys {
            guard let index = slots.index(forKey: key) else { continue }
            let unsaved = slots.values[index].unsaved
            responses += slots.values[index].variants.filter { unsaved.contains($0.variant) }
            slots.values[index].unsaved = []
        }
        return responses
    }

    /// The oldest LRU stamp of `key`'s rows on disk as far as the tier knows; `nil` when it does
    /// not hold the key.
    package func stamped(_ key: String) -> Double? {
        slots[key]?.stamped
    }

    /// Notes that every row of each of `keys` the tier holds was stamped at `time` or later.
    package mutating func noteStamped(_ keys: some Sequence<String>, at time: Double) {
        for key in keys {
            guard let index = slots.index(forKey: key) else { continue }
            slots.values[index].stamped = max(slots.values[index].stamped, time)
        }
    }

    /// Drops one variant of `key`, when the tier holds the key.
    package mutating func remove(key: String, variant: String) {
        guard var variants = slots[key]?.variants else { return }
        variants.removeAll { $0.variant == variant }
        put(variants, forKey: key)
    }

    /// Forgets `key` (the next lookup asks the disk).
    package mutating func remove(key: String) {
        if let slot = slots.removeValue(forKey: key) { bytes -= slot.bytes }
    }

    /// Drops every variant whose display URL is `url`.
    package mutating func remove(url: String) {
        let keys = slots.compactMap { key, slot in slot.variants.contains { $0.url == url } ? key : nil }
        for key in keys {
            guard var variants = slots[key]?.variants else { continue }
            variants.removeAll { $0.url == url }
            put(variants, forKey: key)
        }
    }

    /// Forgets everything: later lookups ask the disk again.
    package mutating func removeAll() {
        slots = [:]
        bytes = 0
    }

    private mutating func evictIfNeeded() {
        guard bytes > capacity else { return }
        let target = capacity - capacity / 10
        for (key, _) in slots.sorted(by: { $0.value.used < $1.value.used }) {
            guard bytes > target else { break }
            remove(key: key)
        }
    }
}
