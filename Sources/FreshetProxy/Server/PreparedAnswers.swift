import Foundation
import Freshet
import FreshetCache
import FreshetTransports
import HTTPTypes
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// Stored responses as the proxy writes them: the client's head (``storedHead(_:)``) and the
/// body in a `ByteBuffer`, made once per stored response (``FreshetCache/CachedResponse/Version``),
/// and the head with `X-Cache` and `Age` once per second of age — so a hit allocates nothing for
/// its answer and converts nothing. The head is kept in the form it was asked for: as NIO's head
/// for its encoder, or as the bytes that encoder would write, for the raw hit path
/// (``RawHitHandler``) that writes below it (made straight from the lines, no NIO head between). A
/// new version of a response held (each `304` of `--revalidate always` makes one) keeps the
/// body's copy when its bytes did not change.
///
/// Shared by every connection of a server. Bounded: past ``capacity`` stored responses or
/// ``capacityBytes`` of bodies it starts over (a `VersionedMemo`, one lock per answer).
struct PreparedAnswers: Sendable {
    /// A head and body ready to write.
    struct Ready: Sendable {
        var head: HTTPResponseHead
        var body: ByteBuffer
    }

    /// One stored response, prepared, and its head for the last age and outcome asked for, in
    /// each form once it was asked for.
    private struct Entry: Sendable {
        /// The stored head without `Age`, `X-Cache` and `Cache-Status`.
        var base: Base
        var age: Int
        var outcome: CacheOutcome
        var body: ByteBuffer
        var head: HTTPResponseHead?
        /// The head as HTTP/1.1 bytes, its closing empty line included.
        var headBytes: ByteBuffer?
    }

    /// A stored response's head as a client gets it, before `X-Cache`, `Cache-Status` and `Age`
    /// (``storedHead(_:)``'s rule): its status and lines, as NIO's head takes them.
    struct Base: Sendable {
        var status: HTTPResponseStatus
        var lines: [(String, String)]
    }

    static let capacity = 4096
    var capacityBytes: Int { memo.capacityBytes }
    private let memo: VersionedMemo<Entry>

    init(capacityBytes: Int = 16 * 1024 * 1024) {
        memo = VersionedMemo(capacity: Self.capacity, capacityBytes: capacityBytes)
    }

    /// The head (with `X-Cache: outcome` and `Age: age`) and body for `stored`.
    func answer(for stored: CachedResponse, age: Int, outcome: CacheOutcome) -> Ready {
        prepared(stored, age: age, outcome: outcome) { entry in
            let head = entry.head ?? Self.head(entry)
            entry.head = head
            return Ready(head: head, body: entry.body)
        }
    }

    /// ``answer(for:age:outcome:)`` as bytes: the head's, and the body.
    func rawAnswer(for stored: CachedResponse, age: Int, outcome: CacheOutcome) -> (head: ByteBuffer, body: ByteBuffer) {
        prepared(stored, age: age, outcome: outcome) { entry in
            let bytes = entry.headBytes ?? Self.bytes(status: entry.base.status, lines: Self.lines(entry))
            entry.headBytes = bytes
            return (bytes, entry.body)
        }
    }

    /// `body` run on the answer for `stored` with `age` and `outcome`, in the memo. A new version
    /// of a response the memo holds (revalidated) keeps the body already copied when its bytes
    /// are the same; its head is made again (made from the old head's changed lines instead, it
    /// measured no cheaper: comparing the fields pairwise copies each of them twice).
    private func prepared<Result: Sendable>(_ stored: CachedResponse, age: Int, outcome: CacheOutcome,
                                            _ body: (inout Entry) -> Result) -> Result {
        memo.withValue(for: stored, make: { previous in
            let kept = previous.flatMap { Self.sameBytes($0.body, stored.body) ? $0.body : nil }
            let entry = Entry(base: Self.base(stored), age: age, outcome: outcome, body: kept ?? ByteBuffer(data: stored.body))
            return (entry, stored.body.count)
        }) { entry in
            if entry.age != age || entry.outcome != outcome {
                entry.head = nil
                entry.headBytes = nil
                entry.age = age
                entry.outcome = outcome
            }
            return body(&entry)
        }
    }

    /// Whether `buffer` holds `data`'s bytes.
    private static func sameBytes(_ buffer: ByteBuffer, _ data: Data) -> Bool {
        buffer.readableBytes == data.count && buffer.withUnsafeReadableBytes { held in
            data.withUnsafeBytes { stored in
                held.count == 0 || memcmp(held.baseAddress!, stored.baseAddress!, held.count) == 0
            }
        }
    }

    /// The head a client gets for a stored response sent whole
    /// (``ProxyForwarder/MemoryAnswer/stored(_:age:outcome:)``), without `Age` and `X-Cache`,
    /// which change from answer to answer: its forwardable fields
    /// (``ProxyHeaders/forwardable(_:)``'s rule), a `Content-Length` of the stored body where the
    /// stored one was, and `Via`.
    static func storedHead(_ stored: CachedResponse) -> HTTPResponseHead {
        let base = base(stored)
        return HTTPResponseHead(version: .http1_1, status: base.status, headers: HTTPHeaders(base.lines))
    }

    /// ``storedHead(_:)``'s lines, made in one pass.
    static func base(_ stored: CachedResponse) -> Base {
        let connection = stored.headers[values: .connection]
        let listed = connection.isEmpty ? [] : ProxyHeaders.listed(in: connection)
        // Lines made whole into NIO's headers: `HTTPHeaders.add` checks each name byte by byte,
        // and these are `HTTPField.Name`s, valid already.
        var lines: [(String, String)] = []
        lines.reserveCapacity(stored.headers.count + 5)
        var length: String? = String(stored.body.count)
        for field in stored.headers {
            let name = field.name.canonicalName
            // By length first: most names are neither of these, and a name past 15 bytes is
            // compared on a slower path.
            let count = name.utf8.count
            if (count == 3 && name == "age") || (count == 7 && name == "x-cache") || ProxyHeaders.isHopByHop(name)
                || (!listed.isEmpty && listed.contains(name)) { continue }
            if count == 14, name == "content-length" {
                if let value = length { lines.append((field.name.rawName, value)) }
                length = nil
                continue
            }
            lines.append((field.name.rawName, field.value))
        }
        if let length { lines.append(("Content-Length", length)) }
        lines.append(("Via", ProxyHeaders.via))
        let status = HTTPResponse.Status(code: stored.status)
        return Base(status: .init(statusCode: status.code, reasonPhrase: status.reasonPhrase), lines: lines)
    }

    /// The lines of `entry`'s head: the stored ones, `X-Cache`, `Cache-Status` and `Age`.
    private static func lines(_ entry: Entry) -> [(String, String)] {
        var lines = entry.base.lines
        lines.append(("X-Cache", ProxyHeaders.xCache(entry.outcome)))
        lines.append(("Cache-Status", ProxyHeaders.cacheStatus(entry.outcome)))
        lines.append(("Age", String(entry.age)))
        return lines
    }

    private static func head(_ entry: Entry) -> HTTPResponseHead {
        // One array, whole into NIO's headers: `add` would check each added name byte by byte.
        HTTPResponseHead(version: .http1_1, status: entry.base.status, headers: HTTPHeaders(lines(entry)))
    }

    /// `head` as NIO's HTTP/1 encoder writes it when its fields already frame the body (a stored
    /// response's head carries its `Content-Length`): status line, fields, empty line.
    static func bytes(of head: HTTPResponseHead) -> ByteBuffer {
        bytes(status: head.status, lines: head.headers.map { ($0.name, $0.value) }, version: head.version)
    }

    /// ``bytes(of:)`` for a head of `status` and `lines`, made without NIO's head.
    private static func bytes(status: HTTPResponseStatus, lines: [(String, String)],
                              version: HTTPVersion = .http1_1) -> ByteBuffer {
        let statusLine = version == .http1_1 && status == .ok
            ? "HTTP/1.1 200 OK\r\n"
            : "HTTP/\(version.major).\(version.minor) \(status.code) \(status.reasonPhrase)\r\n"
        return ByteBuffer(headStartLine: statusLine, lines: lines)
    }
}
