import Foundation
import FreshetCache
import HTTPTypes
import Synchronization
import Testing

/// ``VersionedMemo``'s two rules: a value is reused only for the version it was made from, and
/// past its bound the memo starts over.
@Suite("Versioned memo: reuse per version, start over past the bound")
struct VersionedMemoTests {
    /// A stored response under `key`, received at `time` (its version changes with the time).
    static func stored(_ key: String, time: Double = 0, body: String = "{}") -> CachedResponse {
        let at = Date(timeIntervalSince1970: 1_800_000_000 + time)
        return CachedResponse(key: key, variant: "", url: "https://example.com/\(key)", status: 200,
                              headers: [:], body: Data(body.utf8), requestTime: at, responseTime: at)
    }

    /// Counts the values made.
    final class Maker: Sendable {
        let made = Atomic<Int>(0)
        func make(_ value: String) -> String {
            made.add(1, ordering: .relaxed)
            return value
        }
        var count: Int { made.load(ordering: .relaxed) }
    }

    @Test("The same version is answered from the memo; a new version is made again and replaces it")
    func versionMismatchRecomputes() {
        let memo = VersionedMemo<String>(capacity: 8)
        let maker = Maker()
        #expect(memo.value(for: Self.stored("a"), make: { maker.make("first") }) == "first")
        #expect(memo.value(for: Self.stored("a"), make: { maker.make("again") }) == "first")
        #expect(maker.count == 1)
        // Replaced (another response time): worked out afresh, and kept in the old one's place.
        #expect(memo.value(for: Self.stored("a", time: 1), make: { maker.make("second") }) == "second")
        #expect(memo.value(for: Self.stored("a", time: 1), make: { maker.make("again") }) == "second")
        #expect(maker.count == 2)
        #expect(memo.count == 1)
    }

    @Test("withValue changes the kept value in place, and makes a new one for a new version")
    func withValueInPlace() {
        let memo = VersionedMemo<Int>(capacity: 8)
        let first: Int = memo.withValue(for: Self.stored("a"), make: { _ in (10, 0) }) { value in value += 1; return value }
        let second: Int = memo.withValue(for: Self.stored("a"), make: { _ in (100, 0) }) { value in value += 1; return value }
        let replaced: Int = memo.withValue(for: Self.stored("a", time: 1), make: { _ in (100, 0) }) { value in value }
        #expect(first == 11)
        #expect(second == 12)
        #expect(replaced == 100)
    }

    @Test("A new version is made from the value of the version before, when the memo holds one")
    func newVersionSeesTheOld() {
        let memo = VersionedMemo<Int>(capacity: 8)
        var seen: [Int?] = []
        for time in [0.0, 1, 1, 2] {
            _ = memo.withValue(for: Self.stored("a", time: time), make: { previous in
                seen.append(previous)
                return ((previous ?? 0) + 1, 0)
            }) { $0 }
        }
        _ = memo.withValue(for: Self.stored("b"), make: { previous in seen.append(previous); return (7, 0) }) { $0 }
        #expect(seen == [nil, 1, 2, nil])
    }

    @Test("Past its capacity in entries the memo starts over")
    func entryBoundStartsOver() {
        let memo = VersionedMemo<String>(capacity: 3)
        let maker = Maker()
        for key in ["a", "b", "c"] { _ = memo.value(for: Self.stored(key), make: { maker.make(key) }) }
        #expect(memo.count == 3)
        _ = memo.value(for: Self.stored("d"), make: { maker.make("d") })
        #expect(memo.count == 1)
        // "a" was dropped with the rest: made again.
        _ = memo.value(for: Self.stored("a"), make: { maker.make("a") })
        #expect(maker.count == 5)
        #expect(memo.count == 2)
    }

    @Test("Past its capacity in bytes the memo starts over")
    func byteBoundStartsOver() {
        let memo = VersionedMemo<String>(capacity: 100, capacityBytes: 10)
        _ = memo.withValue(for: Self.stored("a"), make: { _ in ("a", 6) }) { $0 }
        _ = memo.withValue(for: Self.stored("b"), make: { _ in ("b", 4) }) { $0 }
        #expect(memo.count == 2)
        _ = memo.withValue(for: Self.stored("c"), make: { _ in ("c", 1) }) { $0 }
        #expect(memo.count == 1)
        // A replaced entry's bytes are given back: "c" again at 9 bytes fits beside nothing else.
        _ = memo.withValue(for: Self.stored("c", time: 1), make: { _ in ("c2", 9) }) { $0 }
        #expect(memo.count == 1)
        _ = memo.withValue(for: Self.stored("d"), make: { _ in ("d", 1) }) { $0 }
        #expect(memo.count == 2)
    }
}
