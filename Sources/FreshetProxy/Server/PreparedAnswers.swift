import Foundation
import Freshet
import FreshetCache
import NIOCore
import NIOHTTP1
import Synchronization
import NIOHTTPTypesHTTP1

/// Stored responses as the proxy writes them: the client's head (``ProxyForwarder/storedHead(_:)``
/// as NIO's HTTP/1 head) and the body in a `ByteBuffer`, made once per stored response
/// (``FreshetCache/CachedResponse/Version``), and the head with `X-Cache` and `Age` once per
/// second of age — so a hit allocates nothing for its answer and converts nothing.
///
/// Shared by every connection of a server. Bounded: past ``capacity`` stored responses or
/// ``capacityBytes`` of bodies it starts over.
final class PreparedAnswers: Sendable {
    /// A head and body ready to write.
    struct Ready: Sendable {
        var head: HTTPResponseHead
        var body: ByteBuffer
    }

    private struct Entry {
        var version: CachedResponse.Version
        var base: Ready
        var age: Int
        var outcome: CacheOutcome
        var head: HTTPResponseHead
    }

    private struct Key: Hashable {
        var key: String
        var variant: String
    }

    static let capacity = 4096
    let capacityBytes: Int
    private let state = Mutex<(entries: [Key: Entry], bytes: Int)>(([:], 0))

    init(capacityBytes: Int = 16 * 1024 * 1024) {
        self.capacityBytes = capacityBytes
    }

    /// The head (with `X-Cache: outcome` and `Age: age`) and body for `stored`.
    func answer(for stored: CachedResponse, age: Int, outcome: CacheOutcome) -> Ready {
        let key = Key(key: stored.key, variant: stored.variant)
        let version = stored.version
        return state.withLock { state in
            if var entry = state.entries[key], entry.version == version {
                if entry.age != age || entry.outcome != outcome {
                    entry.head = Self.head(entry.base.head, age: age, outcome: outcome)
                    entry.age = age
                    entry.outcome = outcome
                    state.entries[key] = entry
                }
                return Ready(head: entry.head, body: entry.base.body)
            }
            let base = Ready(head: HTTPResponseHead(ProxyForwarder.storedHead(stored)),
                             body: ByteBuffer(bytes: stored.body))
            let entry = Entry(version: version, base: base, age: age, outcome: outcome,
                              head: Self.head(base.head, age: age, outcome: outcome))
            if state.entries.count >= Self.capacity || state.bytes + stored.body.count > capacityBytes {
                state = ([:], 0)
            }
            if let old = state.entries.updateValue(entry, forKey: key) { state.bytes -= old.base.body.readableBytes }
            state.bytes += stored.body.count
            return Ready(head: entry.head, body: base.body)
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
