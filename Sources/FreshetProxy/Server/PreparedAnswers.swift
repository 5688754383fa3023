import Foundation
import Freshet
import FreshetCache
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1

/// Stored responses as the proxy writes them: the client's head (``ProxyForwarder/storedHead(_:)``
/// as NIO's HTTP/1 head) and the body in a `ByteBuffer`, made once per stored response
/// (``FreshetCache/CachedResponse/Version``), and the head with `X-Cache` and `Age` once per
/// second of age — so a hit allocates nothing for its answer and converts nothing.
///
/// Shared by every connection of a server. Bounded: past ``capacity`` stored responses or
/// ``capacityBytes`` of bodies it starts over (a `VersionedMemo`, one lock per answer).
struct PreparedAnswers: Sendable {
    /// A head and body ready to write.
    struct Ready: Sendable {
        var head: HTTPResponseHead
        var body: ByteBuffer
    }

    /// One stored response, prepared, and its head for the last age and outcome asked for.
    private struct Entry: Sendable {
        var base: Ready
        var age: Int
        var outcome: CacheOutcome
        var head: HTTPResponseHead
    }

    static let capacity = 4096
    var capacityBytes: Int { memo.capacityBytes }
    private let memo: VersionedMemo<Entry>

    init(capacityBytes: Int = 16 * 1024 * 1024) {
        memo = VersionedMemo(capacity: Self.capacity, capacityBytes: capacityBytes)
    }

    /// The head (with `X-Cache: outcome` and `Age: age`) and body for `stored`.
    func answer(for stored: CachedResponse, age: Int, outcome: CacheOutcome) -> Ready {
        memo.withValue(for: stored, make: {
            let base = Ready(head: HTTPResponseHead(ProxyForwarder.storedHead(stored)), body: ByteBuffer(bytes: stored.body))
            let entry = Entry(base: base, age: age, outcome: outcome, head: Self.head(base.head, age: age, outcome: outcome))
            return (entry, stored.body.count)
        }) { entry in
            if entry.age != age || entry.outcome != outcome {
                entry.head = Self.head(entry.base.head, age: age, outcome: outcome)
                entry.age = age
                entry.outcome = outcome
            }
            return Ready(head: entry.head, body: entry.base.body)
        }
    }

    private static func head(_ base: HTTPResponseHead, age: Int, outcome: CacheOutcome) -> HTTPResponseHead {
        var head = base
        head.headers.add(name: "X-Cache", value: outcome.rawValue.uppercased())
        head.headers.add(name: "Cache-Status", value: ProxyHeaders.cacheStatus(outcome))
        head.headers.add(name: "Age", value: String(age))
        return head
    }
}
