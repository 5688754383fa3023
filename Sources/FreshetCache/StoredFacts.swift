/// A memo of what stored responses say about their own reuse — their directives, freshness
/// lifetime and age on arrival — so a hit does not parse header fields again.
///
/// An entry belongs to one stored response: it is used only while the stored response's
/// ``CachedResponse/Version`` is the one it was made from, so a replaced or revalidated
/// response is worked out afresh. Bounded: past ``capacity`` entries it starts over
/// (a ``VersionedMemo``).
struct StoredFacts: Sendable {
    /// What one stored response says.
    struct Facts: Sendable {
        /// The directives this cache obeys (a targeted field's, else `Cache-Control`'s).
        var control: CacheControl
        /// The freshness lifetime in seconds (§4.2.1).
        var lifetime: Double
        /// The corrected initial age in seconds (§4.2.3): the age with no resident time.
        var initialAge: Double
    }

    /// The most entries kept.
    static let capacity = 8192

    private let memo = VersionedMemo<Facts>(capacity: Self.capacity)

    /// The facts of `stored`, from the memo or `compute` (run outside the memo's lock).
    func facts(of stored: CachedResponse, compute: () -> Facts) -> Facts {
        memo.value(for: stored, make: compute)
    }
}
