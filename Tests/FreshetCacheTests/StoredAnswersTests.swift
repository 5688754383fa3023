import Foundation
import Freshet
import FreshetCache
import FreshetSimulator
import FreshetTestSupport
import GRDB
import HTTPTypes
import OpenAPIRuntime
import Synchronization
import Testing

@Suite("APIClient.storedAnswers: the cache's fresh answers without a trip through the chain")
struct StoredAnswersTests {
    static func endpoint(_ name: String) -> Endpoint<String> {
        Endpoint(path: ["scripted", name]) { data, _ in String(decoding: data, as: UTF8.self) }
    }

    /// Scripts `names` on the simulator: each fresh for five minutes, its body naming it.
    static func script(_ names: [String], on control: SimControl) async throws {
        for name in names {
            try await control.script(name, headers: [("Cache-Control", "max-age=300")], body: #"{"n":"\#(name)"}"#)
        }
    }

    /// A cache database in `directory` holding the answers to `names`, fetched from `baseURL`
    /// through a cache over it, flushed and closed.
    static func store(_ names: [String], in directory: URL, from baseURL: URL) async throws {
        let database = try cacheDatabase(in: directory)
        defer { try? database.close() }
        let store = SQLiteCacheStore(writer: database)
        let client = APIClient(baseURL: baseURL, transport: liveTransport, middlewares: [CacheMiddleware(store: store)])
        for name in names { _ = try await client.send(Self.endpoint(name)) }
        try await store.flush()
    }

    /// The offsets `client.fanOutStoredFirst` hands over for `names`, in that order, each answer
    /// expected to come as `outcome`.
    static func fanOutStoredFirst(_ names: [String], through client: APIClient, each outcome: CacheOutcome) async -> [Int] {
        var offsets: [Int] = []
        await client.fanOutStoredFirst(names.map(endpoint), maxConcurrent: 4) { done in
            #expect((try? done.result.get())?.cache == outcome)
            offsets.append(done.offset)
        }
        return offsets
    }

    @Test("Fresh successful answers come from the store; stale, absent and failed ones are left to send")
    func freshOnly() async throws {
        try await withSimulator(.init()) { sim in
            let control = SimControl(sim)
            try await control.script("fresh-a", headers: [("Cache-Control", "max-age=300")], body: #"{"n":"a"}"#)
            try await control.script("fresh-b", headers: [("Cache-Control", "max-age=300")], body: #"{"n":"b"}"#)
            try await control.script("stale-c", headers: [("Cache-Control", "max-age=0")], body: #"{"n":"c"}"#)
            try await control.script("gone-e", status: 404, headers: [("Cache-Control", "max-age=300")], body: #"{"n":"e"}"#)
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport,
                                   middlewares: [RedirectMiddleware(), RetryMiddleware(), CoalescingMiddleware(),
                                                 CacheMiddleware(store: MemoryCacheStore())])
            for name in ["fresh-a", "fresh-b", "stale-c", "gone-e"] { _ = try? await client.send(Self.endpoint(name)) }
            let before = try await control.stats().requests

            let answers = await client.storedAnswers(["fresh-a", "fresh-b", "stale-c", "absent-d", "gone-e"].map(Self.endpoint))

            #expect(answers.count == 5)
            #expect(answers[0]?.value == #"{"n":"a"}"#)
            #expect(answers[0]?.cache == .hit)
            #expect(answers[0]?.status == .ok)
            #expect(answers[1]?.value == #"{"n":"b"}"#)
            #expect(answers[2] == nil, "a stale answer must be validated first")
            #expect(answers[3] == nil, "nothing stored")
            #expect(answers[4] == nil, "a 404 goes through the chain, which makes it an error")
            #expect(try await control.stats().requests == before, "storedAnswers sent a request")
        }
    }

    @Test("The middlewares storedAnswers tells apart by type are neither a stored-response source nor an adapter")
    func plainHopsConformToNeither() {
        let plain: [any ClientMiddleware] = [RedirectMiddleware(), RetryMiddleware(), CoalescingMiddleware(), RateLimitMiddleware()]
        for middleware in plain {
            #expect(APIClient.isPlainHop(middleware))
            #expect(!(middleware is any StoredResponseSource), "\(type(of: middleware))")
            #expect(!(middleware is any StoredResponseAdapter), "\(type(of: middleware))")
        }
        #expect(!APIClient.isPlainHop(CacheMiddleware(store: MemoryCacheStore())))
    }

    @Test("Any other middleware above the cache turns it off: what it would see is never skipped")
    func onlyTransparentMiddlewares() async throws {
        try await withSimulator(.init()) { sim in
            let control = SimControl(sim)
            try await control.script("seen", headers: [("Cache-Control", "max-age=300")], body: #"{"n":1}"#)
            let seen = Counting()
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport,
                                   middlewares: [seen, CacheMiddleware(store: MemoryCacheStore())])
            _ = try await client.send(Self.endpoint("seen"))
            let answers = await client.storedAnswers([Self.endpoint("seen")])
            #expect(answers.count == 1 && answers[0] == nil)
            #expect(try await client.send(Self.endpoint("seen")).cache == .hit)
            #expect(seen.count == 2, "every answer went through the middleware")
        }
    }

    @Test("fanOutStoredFirst: the stored answers first, without a request; the rest sent; every offset once")
    func storedFirst() async throws {
        try await withSimulator(.init()) { sim in
            let control = SimControl(sim)
            let names = (0..<6).map { "item-\($0)" }
            try await Self.script(names, on: control)
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport,
                                   middlewares: [RetryMiddleware(), CacheMiddleware(store: MemoryCacheStore())])
            for name in names where name != "item-1" && name != "item-4" { _ = try await client.send(Self.endpoint(name)) }
            let before = try await control.stats().requests

            var seen: [(offset: Int, cache: CacheOutcome?)] = []
            for await done in client.fanOutStoredFirst(names.map(Self.endpoint), maxConcurrent: 4) {
                let response = try done.result.get()
                #expect(response.value == #"{"n":"\#(names[done.offset])"}"#)
                seen.append((done.offset, response.cache))
            }

            #expect(seen.map(\.offset).sorted() == Array(0..<6))
            #expect(seen.prefix(4).map(\.offset) == [0, 2, 3, 5], "the stored answers come first, in order")
            #expect(seen.prefix(4).allSatisfy { $0.cache == .hit })
            #expect(Set(seen.suffix(2).map(\.offset)) == [1, 4])
            #expect(try await control.stats().requests == before + 2, "only the two not stored were sent")
        }
    }

    @Test("fanOutStoredFirst with a handler reads a long list in parts side by side: the stored answers first, in order, without a request; the rest sent; every offset once")
    func storedFirstInParts() async throws {
        try await withSimulator(.init()) { sim in
            let control = SimControl(sim)
            let names = (0..<200).map { "part-\($0)" }
            try await Self.script(names, on: control)
            // Some at the parts' boundaries (a part is at least 64 long), one at the end.
            let unstored: Set<Int> = [10, 66, 67, 140, 199]
            let temporary = try StoreTemporaryDirectory()
            defer { temporary.remove() }
            try await Self.store(names.enumerated().filter { !unstored.contains($0.offset) }.map(\.element),
                                 in: temporary.url, from: sim.baseURL)
            let (database, lookups) = try countingLookups(in: temporary.url)
            defer { try? database.close() }
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport,
                                   middlewares: [RetryMiddleware(), CacheMiddleware(store: SQLiteCacheStore(writer: database))])
            let before = try await control.stats().requests

            var seen: [(offset: Int, cache: CacheOutcome?)] = []
            await client.fanOutStoredFirst(names.map(Self.endpoint), maxConcurrent: 4) { done in
                let response = try? done.result.get()
                #expect(response?.value == #"{"n":"\#(names[done.offset])"}"#)
                seen.append((done.offset, response?.cache))
            }

            #expect(seen.map(\.offset).sorted() == Array(0..<200))
            let stored = (0..<200).filter { !unstored.contains($0) }
            #expect(seen.prefix(stored.count).map(\.offset) == stored, "the stored answers come first, in order")
            #expect(seen.prefix(stored.count).allSatisfy { $0.cache == .hit })
            #expect(Set(seen.suffix(unstored.count).map(\.offset)) == unstored)
            #expect(try await control.stats().requests == before + unstored.count, "only those not stored were sent")
            let parts = APIClient.readParts(names.count)
            #expect(parts.count > 1 || ProcessInfo.processInfo.activeProcessorCount == 1)
            #expect(lookups.total == parts.count, "one read per part, and none again for what was read")
        }
    }

    @Test("fanOutStoredFirst on a cold store: all sent, and the chain's lookups answer from what was read ahead")
    func coldStoreReadAhead() async throws {
        try await withSimulator(.init()) { sim in
            let control = SimControl(sim)
            let names = (0..<200).map { "cold-\($0)" }
            try await Self.script(names, on: control)
            let temporary = try StoreTemporaryDirectory()
            defer { temporary.remove() }
            try cacheDatabase(in: temporary.url).close()
            let (database, lookups) = try countingLookups(in: temporary.url)
            defer { try? database.close() }
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport,
                                   middlewares: [RetryMiddleware(), CacheMiddleware(store: SQLiteCacheStore(writer: database))])
            let before = try await control.stats().requests

            let offsets = await Self.fanOutStoredFirst(names, through: client, each: .miss)

            #expect(offsets.sorted() == Array(0..<200))
            #expect(try await control.stats().requests == before + 200)
            let parts = APIClient.readParts(names.count)
            #expect(lookups.total == parts.count, "one read per part, none per request")
        }
    }

    @Test("The parts of a read ahead: every endpoint in one, in order, at least 64 each, at most four")
    func readParts() {
        for count in [0, 1, 63, 64, 127, 128, 200, 500, 1000] {
            let parts = APIClient.readParts(count)
            #expect(parts.flatMap { Array($0) } == Array(0..<count), "\(count)")
            #expect(parts.count <= 4)
            #expect(parts.count == 1 || parts.allSatisfy { $0.count >= 64 }, "\(count): \(parts)")
        }
        #expect(APIClient.readParts(500).count == min(4, 2 * ProcessInfo.processInfo.activeProcessorCount))
    }

    @Test("fanOutStoredFirst under a middleware that must see every answer: all go through the chain, read ahead once per part")
    func readAheadWhenNotHandedOut() async throws {
        try await withSimulator(.init()) { sim in
            let control = SimControl(sim)
            let names = (0..<200).map { "seen-\($0)" }
            try await Self.script(names, on: control)
            let temporary = try StoreTemporaryDirectory()
            defer { temporary.remove() }
            try await Self.store(names, in: temporary.url, from: sim.baseURL)
            let (database, lookups) = try countingLookups(in: temporary.url)
            defer { try? database.close() }
            let seen = Counting()
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport,
                                   middlewares: [seen, CacheMiddleware(store: SQLiteCacheStore(writer: database))])
            let before = try await control.stats().requests

            let offsets = await Self.fanOutStoredFirst(names, through: client, each: .hit)

            #expect(offsets.sorted() == Array(0..<200))
            #expect(seen.count == 200, "every answer went through the middleware")
            #expect(try await control.stats().requests == before, "all were stored")
            #expect(lookups.total == APIClient.readParts(names.count).count, "one read per part, none per request")
        }
    }

    @Test("fanOutStoredFirst on a store holding only a later one: it comes first, the rest are sent")
    func storedLaterFirst() async throws {
        try await withSimulator(.init()) { sim in
            let control = SimControl(sim)
            let names = ["cold-0", "cold-1", "warm-2"]
            try await Self.script(names, on: control)
            let client = APIClient(baseURL: sim.baseURL, transport: liveTransport,
                                   middlewares: [CacheMiddleware(store: MemoryCacheStore())])
            _ = try await client.send(Self.endpoint("warm-2"))
            let before = try await control.stats().requests
            var seen: [(offset: Int, cache: CacheOutcome?)] = []
            for await done in client.fanOutStoredFirst(names.map(Self.endpoint), maxConcurrent: 1) {
                seen.append((done.offset, (try? done.result.get())?.cache))
            }
            // No first look at the first few decides that the store is cold: the stored one is
            // answered from the store ahead of the two it does not hold, which are sent.
            #expect(seen.map(\.offset) == [2, 0, 1])
            #expect(seen.map(\.cache) == [.hit, .miss, .miss])
            #expect(try await control.stats().requests == before + 2)
        }
    }

    /// Counts the requests it passes on.
    final class Counting: ClientMiddleware {
        private let seen = Mutex(0)
        var count: Int { seen.withLock { $0 } }

        func intercept(
            _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
            next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
        ) async throws -> (HTTPResponse, HTTPBody?) {
            seen.withLock { $0 += 1 }
            return try await next(request, body, baseURL)
        }
    }
}
