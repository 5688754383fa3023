@testable import FreshetPostgres
import Testing

/// `LocalWrites`: when a lookup of `PostgresCacheStore` may keep what it read from the server,
/// in each order a read and this instance's writes can take. (The store beside a real server:
/// FreshetCacheTests' `PostgresLookupTests`.) Mutating calls stay out of `#expect`, whose
/// expansion takes its operands as constants.
@Suite("PostgreSQL store: which reads may be kept beside this instance's writes")
struct LocalWritesTests {
    @Test("A read with no write of its key going or begun meanwhile is kept; other keys' writes do not matter")
    func quiet() throws {
        var writes = LocalWrites()
        writes.begin("other")
        let beganRead = writes.beginRead(of: "k")
        let began = try #require(beganRead)
        writes.begin("other")
        writes.end("other")
        let kept = writes.endRead(of: "k", began: began)
        #expect(kept)
    }

    @Test("A read begun while a write of its key is going is not kept, nor tracked")
    func writeGoing() {
        var writes = LocalWrites()
        writes.begin("k")
        let during = writes.beginRead(of: "k")
        #expect(during == nil)
        writes.end("k")
        let after = writes.beginRead(of: "k")
        #expect(after != nil)
    }

    /// A write of the key read, or of keys not known (a URL's, everything: `nil`), which concerns
    /// every key: a read of another key cannot begin while it is going.
    @Test("A write begun during the read is not missed, even when it ended first", arguments: ["k", nil] as [String?])
    func writeBegunDuringRead(of written: String?) throws {
        var writes = LocalWrites()
        let beganRead = writes.beginRead(of: "k")
        let began = try #require(beganRead)
        writes.begin(written)
        let otherKey = writes.beginRead(of: "j")
        #expect((otherKey == nil) == (written == nil))
        writes.end(written)
        let kept = writes.endRead(of: "k", began: began)
        #expect(!kept)
        // Once no read that began before it is going, the ended write no longer counts.
        let nextRead = writes.beginRead(of: "k")
        let next = try #require(nextRead)
        let keptNext = writes.endRead(of: "k", began: next)
        #expect(keptNext)
    }

    @Test("Two reads begun at the same count are both counted; the earlier one still sees a later write")
    func overlappingReads() throws {
        var writes = LocalWrites()
        let firstRead = writes.beginRead(of: "k")
        let first = try #require(firstRead)
        let secondRead = writes.beginRead(of: "k")
        let second = try #require(secondRead)
        #expect(first == second)
        writes.begin("k")
        writes.end("k")
        let keptSecond = writes.endRead(of: "k", began: second)
        let keptFirst = writes.endRead(of: "k", began: first)
        #expect(!keptSecond && !keptFirst)
    }
}
