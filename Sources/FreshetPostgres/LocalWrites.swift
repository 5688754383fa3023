/// This instance's writes on its way to PostgreSQL, as a lookup that reads the server needs to
/// know them: a key's list read while one of its writes had not committed may lack that write,
/// and kept in the memory tier it would answer without it until the key is written again.
///
/// A lookup keeps what it read only when no write of its key (nor one of unknown keys: a URL's,
/// everything) was going when it began, and none began before it ended
/// (``beginRead(of:)``, ``endRead(of:began:)``). A value in the store's state, under its lock.
struct LocalWrites {
    /// One key's writes (or those of unknown keys).
    struct Writes {
        /// How many are going.
        var going = 0
        /// ``LocalWrites/begun`` when the latest began.
        var latest: UInt64 = 0
    }

    /// Counts the writes begun.
    private var begun: UInt64 = 0
    /// The keys with a write going, or one begun while a read that began earlier is going.
    private var keys: [String: Writes] = [:]
    /// Writes whose keys are not known: a URL's, everything.
    private var broad = Writes()
    /// The reads going, by ``begun`` when each began.
    private var reads: [UInt64: Int] = [:]

    /// A write of `key` (`nil`: of keys not known) begins.
    mutating func begin(_ key: String?) {
        begun += 1
        guard let key else {
            broad.going += 1
            broad.latest = begun
            return
        }
        keys[key, default: Writes()].going += 1
        keys[key]?.latest = begun
    }

    /// A write begun with ``begin(_:)`` has committed, or failed.
    mutating func end(_ key: String?) {
        guard let key else {
            broad.going -= 1
            return
        }
        guard var writes = keys[key] else { return }
        writes.going -= 1
        // Kept while a read that began before its latest write is going: that read must not keep
        // what it read.
        if writes.going == 0, !reads.keys.contains(where: { $0 < writes.latest }) {
            keys[key] = nil
        } else {
            keys[key] = writes
        }
    }

    /// A lookup of `key` begins reading the server: what to hand to ``endRead(of:began:)``, or
    /// `nil` when a write that may concern the key is going (what is read then is not kept).
    mutating func beginRead(of key: String) -> UInt64? {
        guard broad.going == 0, (keys[key]?.going ?? 0) == 0 else { return nil }
        reads[begun, default: 0] += 1
        return begun
    }

    /// The lookup of `key` that began at `began` has read the server: whether what it read may
    /// be kept (no write that may concern the key began meanwhile).
    mutating func endRead(of key: String, began: UInt64) -> Bool {
        if let count = reads[began], count > 1 { reads[began] = count - 1 } else { reads[began] = nil }
        let keep = broad.latest <= began && (keys[key]?.latest ?? 0) <= began
        // Keys whose writes have all ended are no longer needed once no earlier read is going.
        if keys.count > 64 || reads.isEmpty {
            let earliest = reads.keys.min() ?? .max
            keys = keys.filter { $0.value.going > 0 || $0.value.latest > earliest }
        }
        return keep
    }
}
