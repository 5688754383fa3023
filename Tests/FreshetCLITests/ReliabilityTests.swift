import Foundation
import FreshetSimulator
import FreshetTestSupport
import GRDB
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One way the server misbehaves, as `freshet` must report it.
struct CLIFault: Sendable, CustomTestStringConvertible {
    var name: String
    /// Puts the fault on `route` for the next `times` requests.
    var inject: @Sendable (RunningSimulator, String, Int) async throws -> Void
    /// What stderr names when nothing could be shown (exit 2).
    var cause: String
    /// What stderr names when the stored data was shown instead (exit 3); `nil`: same as ``cause``.
    var staleCause: String?
    /// Whether one occurrence is absorbed by the retry (exit 0).
    var recovers: Bool

    var testDescription: String { name }

    static func status(_ code: Int, headers: [String: String] = [:], body: String? = nil)
        -> @Sendable (RunningSimulator, String, Int) async throws -> Void
    {
        { sim, route, times in
            await sim.simulator.injectFaults(Fault(route: route, status: code, times: times, headers: headers, body: body))
        }
    }

    static func mode(_ kind: FaultModeKind, bytes: Int? = nil, chunked: Bool? = nil)
        -> @Sendable (RunningSimulator, String, Int) async throws -> Void
    {
        { sim, route, times in
            await sim.simulator.injectFaultMode(FaultMode(route: route, mode: kind, times: times, bytes: bytes, chunked: chunked))
        }
    }

    /// Faults that end in an error or in stored data. (Slow answers that end well are in
    /// ``ReliabilityTests/slowButFine()``; a deadline running out is in the library's matrix.)
    static let all: [CLIFault] = [
        CLIFault(name: "5xx storm (502)", inject: status(502), cause: "HTTP 502", recovers: true),
        CLIFault(name: "500 with an HTML body", inject: status(500, headers: ["Content-Type": "text/html"], body: "<p>down</p>"),
                 cause: "HTTP 500", recovers: true),
        CLIFault(name: "503 with Retry-After: 1", inject: status(503, headers: ["Retry-After": "1"]), cause: "HTTP 503", recovers: true),
        CLIFault(name: "429 with Retry-After: 1", inject: status(429, headers: ["Retry-After": "1"]), cause: "rate limit",
                 recovers: true),
        CLIFault(name: "429 with Retry-After past the cap", inject: status(429, headers: ["Retry-After": "86400"]),
                 cause: "rate limit", recovers: false),
        CLIFault(name: "connection reset mid-body", inject: mode(.resetMidBody, bytes: 300), cause: "connection", recovers: true),
        CLIFault(name: "Content-Length longer than the body, then close", inject: mode(.shortBody, bytes: 300),
                 cause: "connection closed before the response was complete", recovers: true),
        CLIFault(name: "chunked stream cut short", inject: mode(.chunkedCut, bytes: 300),
                 cause: "connection closed before the response was complete", recovers: true),
        CLIFault(name: "malformed JSON", inject: status(200, body: #"[{"id": 1, ]"#),
                 cause: "could not be read", staleCause: "not valid JSON", recovers: false),
        CLIFault(name: "truncated JSON", inject: status(200, body: #"[{"id":"1","type":"WatchEv"#),
                 cause: "could not be read", staleCause: "not valid JSON", recovers: false),
        CLIFault(name: "50 MiB body", inject: mode(.huge), cause: "larger than the limit", recovers: false),
        CLIFault(name: "50 MiB body, chunked", inject: mode(.huge, chunked: true), cause: "larger than the limit",
                 recovers: false),
        CLIFault(name: "redirect loop", inject: { sim, route, times in
                     await sim.simulator.injectFaults(Fault(route: route, status: 302, times: times * 20, headers: ["Location": route + "?x=1"]))
                 }, cause: "redirect loop", recovers: false),
        CLIFault(name: "redirect to a host that refuses connections", inject: { sim, route, times in
                     let dead = try await closedLoopbackURL()
                     await sim.simulator.injectFaults(Fault(route: route, status: 307, times: times, headers: ["Location": dead.absoluteString + route]))
                 }, cause: "could not connect", recovers: false),
    ]
}

private let eventsRoute = "/repos/ReactiveX/RxSwift/events"
private let topRoute = "/v0/topstories.json"

/// The feed's stored events, read straight from the database file (newest first), and the
/// result of `PRAGMA integrity_check`.
private func storedFeed(_ home: URL, repo: String = "reactivex/rxswift") async throws -> (ids: [String], integrity: [String]) {
    try await offPool {
        let queue = try DatabaseQueue(path: home.appendingPathComponent("freshet.sqlite").path)
        defer { try? queue.close() }
        return try queue.read { db in
            let integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check")
            let ids = try String.fetchAll(db, sql: "SELECT id FROM feed_event WHERE repo = ? ORDER BY created_at DESC, id DESC",
                                          arguments: [repo])
            return (ids, integrity)
        }
    }
}

/// Runs blocking work (SQLite, file scans) on a thread of its own: on the cooperative pool (2 threads
/// on a 2-core machine) it would starve the in-process simulator the tests talk to.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// The exit status must be one of the CLI contract's, never a crash.
private func expectContractStatus(_ result: ProcessResult, _ context: String) {
    #expect([0, 1, 2, 3].contains(result.status), "\(context): exit \(result.status): \(result.stderr)")
    #expect(!result.stderr.contains("[test: ended by signal]"), "\(context): killed by the watchdog: \(result.stderr)")
    #expect(!result.stderr.contains("Fatal error"), "\(context): \(result.stderr)")
}

@Suite("Reliability: faults × freshet feed and freshet hn", .serialized, .timeLimit(.minutes(3)))
struct ReliabilityTests {
    @Test("feed, nothing stored: one fault is retried away (exit 0) or named (exit 2); a storm is named, exit 2", arguments: CLIFault.all)
    func feedNothingStored(fault: CLIFault) async throws {
        try await withFreshetCLI { cli in
            try await fault.inject(cli.sim, eventsRoute, 1)
            let once = try await cli.run("feed", "--limit", "10")
            expectContractStatus(once, fault.name)
            if fault.recovers {
                #expect(once.status == 0, "\(fault.name): \(once.stderr)")
                #expect(once.stdout.split(separator: "\n").count == 10)
            } else {
                #expect(once.status == 2, "\(fault.name): \(once.stderr)")
                #expect(once.stderr.contains(fault.cause), "\(fault.name): \(once.stderr)")
            }
            await cli.sim.simulator.clearFaults()
            await cli.sim.simulator.clearFaultModes()

            try await fault.inject(cli.sim, "/repos/apple/swift/events", 1000)
            let storm = try await cli.run("feed", "apple/swift", "--limit", "10")
            expectContractStatus(storm, fault.name)
            #expect(storm.status == 2, "\(fault.name): \(storm.stderr)")
            #expect(storm.stdout.isEmpty)
            #expect(storm.stderr.hasPrefix("error: "), "\(fault.name): \(storm.stderr)")
            #expect(storm.stderr.contains(fault.cause), "\(fault.name): \(storm.stderr)")
        }
    }

    @Test("feed, events stored: a failed refresh shows them with a warning naming the cause (exit 3, 0 with --allow-stale); they stay intact",
          arguments: CLIFault.all)
    func feedStored(fault: CLIFault) async throws {
        try await withFreshetCLI { cli in
            let first = try await cli.run("feed", "--limit", "20")
            #expect(first.status == 0, "\(first.stderr)")
            let before = try await storedFeed(cli.home)
            #expect(before.ids.count == 100, "one page of events is stored")

            try await fault.inject(cli.sim, eventsRoute, 1000)
            let stale = try await cli.run("feed", "--limit", "20", "--refresh")
            expectContractStatus(stale, fault.name)
            #expect(stale.status == 3, "\(fault.name): \(stale.stderr)")
            #expect(rows(stale.stdout) == rows(first.stdout), "\(fault.name): the stored events are shown")
            #expect(stale.stderr.contains("warning: showing stored data; the refresh failed"), "\(fault.name): \(stale.stderr)")
            #expect(stale.stderr.lowercased().contains((fault.staleCause ?? fault.cause).lowercased()), "\(fault.name): \(stale.stderr)")
            let allowed = try await cli.run("feed", "--limit", "20", "--refresh", "--allow-stale")
            #expect(allowed.status == 0, "\(fault.name): \(allowed.stderr)")

            let after = try await storedFeed(cli.home)
            #expect(after.integrity == ["ok"])
            #expect(after.ids == before.ids, "\(fault.name): the stored events are intact")
        }
    }

    @Test("hn, nothing stored: a broken list is named, exit 2; stored: the stored page is shown, exit 3, the cause named",
          arguments: CLIFault.all)
    func hackerNews(fault: CLIFault) async throws {
        try await withFreshetCLI { cli in
            try await fault.inject(cli.sim, topRoute, 1000)
            let nothing = try await cli.run("hn", "--limit", "5")
            expectContractStatus(nothing, fault.name)
            #expect(nothing.status == 2, "\(fault.name): \(nothing.stderr)")
            #expect(nothing.stdout.isEmpty)
            #expect(nothing.stderr.contains(fault.cause), "\(fault.name): \(nothing.stderr)")
            await cli.sim.simulator.clearFaults()
            await cli.sim.simulator.clearFaultModes()

            let shown = try await cli.run("hn", "--limit", "5", "--json")
            #expect(shown.status == 0, "\(shown.stderr)")
            try await fault.inject(cli.sim, topRoute, 1000)
            let refresh = try await cli.run("hn", "--limit", "5", "--json", "--refresh")
            expectContractStatus(refresh, fault.name)
            // Stored: the stored page is shown, also when the failure arose outside the cache (the
            // retry giving up on a long Retry-After, a redirect loop, the body limit).
            #expect(refresh.status == 3, "\(fault.name): \(refresh.stderr)")
            #expect(refresh.stdout == shown.stdout)
            #expect(refresh.stderr.contains("warning: showing stored data"), "\(fault.name): \(refresh.stderr)")
            #expect(refresh.stderr.lowercased().contains((fault.staleCause ?? fault.cause).lowercased()), "\(fault.name): \(refresh.stderr)")
            // The stored page survived: once the server is fine, it is served again without a request.
            await cli.sim.simulator.clearFaults()
            await cli.sim.simulator.clearFaultModes()
            let again = try await cli.run("hn", "--limit", "5", "--json")
            #expect(again.status == 0, "\(fault.name): \(again.stderr)")
            #expect(again.stdout == shown.stdout)
        }
    }

    @Test("hn: every item failing leaves nothing to show, exit 2, the failures named")
    func everyItemFails() async throws {
        try await withFreshetCLI { cli in
            await cli.sim.simulator.injectFaultMode(FaultMode(route: "/v0/item/", mode: .resetMidBody, times: 1000, bytes: 10))
            let result = try await cli.run("hn", "--limit", "3")
            expectContractStatus(result, "items reset")
            #expect(result.status == 2, "\(result.stderr)")
            #expect(result.stderr.contains("could not load item"), "\(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
    }

    @Test("Slow but answering: a delay before the headers and a slowly dripped body end well")
    func slowButFine() async throws {
        try await withFreshetCLI { cli in
            await cli.sim.simulator.injectFaultMode(FaultMode(route: eventsRoute, mode: .delay, delayMs: 1500))
            let delayed = try await cli.run("feed", "--limit", "5")
            #expect(delayed.status == 0, "\(delayed.stderr)")
            await cli.sim.simulator.injectFaultMode(FaultMode(route: eventsRoute, mode: .drip, chunk: 32 * 1024, intervalMs: 100))
            let dripped = try await cli.run("feed", "--limit", "5", "--refresh")
            #expect(dripped.status == 0, "\(dripped.stderr)")
            #expect(rows(dripped.stdout) == rows(delayed.stdout))
            await cli.sim.simulator.injectFaultMode(FaultMode(route: topRoute, mode: .drip, chunk: 512, intervalMs: 50))
            let hn = try await cli.run("hn", "--limit", "3")
            #expect(hn.status == 0, "\(hn.stderr)")
            let log = await cli.sim.simulator.requestLog()
            #expect(log.filter { $0.path.hasPrefix(eventsRoute) }.count == 2, "no retry was needed")
        }
    }

    // MARK: - Crash safety

    /// Each kill moment is chosen by what the server saw, not by a sleep: during the request is
    /// while the server holds it (the child is past start-up and waiting for its answer); after
    /// the response is once the server finished sending it (the child is decoding and merging,
    /// or has already exited — either may happen, and both must leave the database whole).
    @Test("SIGKILL during the request and right after the response, 12 times: the database stays whole and the next run shows the feed")
    func killMidWrite() async throws {
        let freshet = try #require(builtProduct("freshet"))
        try await withFreshetCLI { cli in
            #expect(try await cli.run("feed", "--limit", "5").status == 0)
            let environment = cli.baseEnvironment
            var killedDuringRequest = 0
            for round in 0..<12 {
                // New events, so each refresh has rows to write.
                await cli.sim.simulator.addEvents(repo: "ReactiveX/RxSwift", count: 1 + (round * 7) % 20)
                await cli.sim.simulator.resetLog()
                let duringRequest = round % 2 == 0
                if duringRequest { await cli.sim.simulator.hold(route: eventsRoute) }
                let child = try await Child(freshet, ["feed", "--limit", "5", "--refresh"], environment: environment)
                if duringRequest {
                    let held = await eventually(within: 20) {
                        await cli.sim.simulator.requestLog().contains { $0.path.hasPrefix(eventsRoute) }
                    }
                    #expect(held, "round \(round): the request reached the server")
                } else {
                    let answered = await eventually(within: 20) {
                        await cli.sim.simulator.requestLog().contains { $0.path.hasPrefix(eventsRoute) && $0.finished }
                    }
                    #expect(answered, "round \(round): the response left the server")
                }
                child.sigkill()
                let ending = await child.ending()
                await cli.sim.simulator.release(route: eventsRoute)
                switch ending {
                case .killed: if duringRequest { killedDuringRequest += 1 }
                case .exited(let status):
                    #expect(!duringRequest && status == 0, "round \(round): the run ended by itself with \(status)")
                }
                let stored = try await storedFeed(cli.home)
                #expect(stored.integrity == ["ok"], "round \(round): \(stored.integrity)")
                #expect((100...300).contains(stored.ids.count), "round \(round): \(stored.ids.count) events")
            }
            #expect(killedDuringRequest == 6, "every held run was killed waiting for its answer")
            let next = try await cli.run("feed", "--limit", "5", "--refresh")
            #expect(next.status == 0, "\(next.stderr)")
            #expect(next.stdout.split(separator: "\n").count == 5)
            #expect(!next.stderr.contains("moved aside"), "the database was never found corrupt: \(next.stderr)")
            let files = try FileManager.default.contentsOfDirectory(atPath: cli.home.path)
            #expect(!files.contains { $0.contains("corrupt") }, "\(files)")
        }
    }

    @Test("Two processes refreshing the same database at once both succeed, from a fresh home and over existing data")
    func concurrentProcesses() async throws {
        try await withFreshetCLI { cli in
            // Both requests are held at the server until both have arrived, so both processes
            // have opened the database and then merge and write at once.
            for round in 0..<3 {
                if round > 0 { await cli.sim.simulator.addEvents(repo: "ReactiveX/RxSwift", count: 5) }
                await cli.sim.simulator.resetLog()
                await cli.sim.simulator.hold(route: "/repos/")
                async let a = cli.run("feed", "--limit", "10", "--refresh")
                async let b = cli.run("feed", "ReactiveX/RxSwift", "--limit", "10", "--refresh", "--json")
                let both = await eventually(within: 30) {
                    await cli.sim.simulator.requestLog().filter { $0.path.hasPrefix("/repos/") }.count >= 2
                }
                #expect(both, "round \(round): both requests in flight together")
                await cli.sim.simulator.release(route: "/repos/")
                let (first, second) = try await (a, b)
                #expect(first.status == 0, "round \(round): \(first.stderr)")
                #expect(second.status == 0, "round \(round): \(second.stderr)")
                #expect(first.stdout.split(separator: "\n").count == 10)
                let json = try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [[String: Any]]
                #expect(json?.count == 10)
            }
            let stored = try await storedFeed(cli.home)
            #expect(stored.integrity == ["ok"])
            #expect(stored.ids.count == 110, "the first page plus the ten events added")
            #expect(Set(stored.ids).count == stored.ids.count, "no duplicates")
        }
    }
}

/// A `freshet` child whose output is discarded, for killing at a chosen moment.
private struct Child: Sendable {
    enum Ending: Equatable { case exited(Int32), killed }

    let pid: pid_t
    private let exit: OneShot<ChildExit>

    init(_ executable: URL, _ arguments: [String], environment: [String: String]) async throws {
        struct NotStarted: Error {}
        guard let (pid, exit) = await spawnQuietly(executable, arguments, environment: environment) else { throw NotStarted() }
        self.pid = pid
        self.exit = exit
    }

    func sigkill() {
        _ = kill(pid, SIGKILL)
    }

    /// How the child ended (waits for it; it was killed or is about to end).
    func ending() async -> Ending {
        let ended = await exit.value()
        return ended.signalled ? .killed : .exited(ended.status)
    }
}

// MARK: - Hostile arguments

/// A logged request target split into its path segments (still encoded) and decoded query items.
private func parseTarget(_ target: String) -> (segments: [Substring], query: [String: String?]) {
    let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
    let segments = parts[0].split(separator: "/", omittingEmptySubsequences: false).dropFirst()
    var query: [String: String?] = [:]
    if parts.count > 1 {
        for item in parts[1].split(separator: "&") {
            let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            query[String(pair[0])] = pair.count > 1 ? percentDecoded(pair[1]) : nil
        }
    }
    return (Array(segments), query)
}

@Suite("Hostile arguments: rejected or encoded, never a different request target", .serialized, .timeLimit(.minutes(3)))
struct HostileArgumentTests {
    /// Names and queries that try to leave their path segment or query value.
    static let hostile: [String] = [
        "../../etc/passwd", "a/../b", "..", ".", "x?y=1", "x#frag", "%00", "a%2Fb", "%2e%2e", "a b", "a\\b", "a;b=c",
        "a&q=evil", "스위프트", "🦉\u{202E}", "\u{FEFF}x", String(repeating: "a", count: 20_000),
    ]

    @Test("feed and repo: every hostile OWNER/REPO is a usage error (exit 1) before any request")
    func repositoryNames() async throws {
        try await withFreshetCLI(.init(enforceRateLimits: false)) { cli in
            for name in Self.hostile {
                for repository in [name, "\(name)/x", "x/\(name)", "\(name)/\(name)"] {
                    for command in ["feed", "repo"] {
                        let result = try await cli.run(command, repository)
                        #expect(result.status == 1, "\(command) \(repository.prefix(60).debugDescription): \(result.stderr.prefix(300))")
                        #expect(result.stderr.contains("expected OWNER/REPO"), "\(command) \(repository.prefix(60).debugDescription)")
                    }
                }
            }
            #expect(await cli.sim.simulator.requestLog().isEmpty)
        }
    }

    @Test("hn: a hostile list or item ID is a usage error (exit 1) before any request")
    func hackerNewsArguments() async throws {
        try await withFreshetCLI(.init(enforceRateLimits: false)) { cli in
            for name in Self.hostile + ["1/../2", "1?x", "1#2", "0x10", "-1", "99999999999999999999999"] {
                let list = try await cli.run("hn", name)
                #expect(list.status == 1, "hn \(name.prefix(60).debugDescription): \(list.stderr.prefix(300))")
                let item = try await cli.run("hn", "item", name)
                #expect(item.status == 1, "hn item \(name.prefix(60).debugDescription): \(item.stderr.prefix(300))")
            }
            #expect(await cli.sim.simulator.requestLog().isEmpty)
        }
    }

    @Test("user: a hostile login is sent as one encoded path segment, exactly as given")
    func userLogins() async throws {
        try await withFreshetCLI(.init(enforceRateLimits: false)) { cli in
            for login in Self.hostile {
                await cli.sim.simulator.resetLog()
                let result = try await cli.run("user", login)
                #expect(result.status == 2, "user \(login.prefix(60).debugDescription): \(result.stderr.prefix(300))")
                #expect(result.stderr.contains("not found"), "user \(login.prefix(60).debugDescription): \(result.stderr.prefix(300))")
                let log = await cli.sim.simulator.requestLog()
                #expect(log.count == 1, "user \(login.prefix(60).debugDescription)")
                for entry in log {
                    let (segments, _) = parseTarget(entry.path)
                    #expect(segments.count == 2 && segments.first == "users", "\(login.prefix(60).debugDescription) → \(entry.path.prefix(200))")
                    #expect(segments.last.flatMap(percentDecoded) == login, "\(login.prefix(60).debugDescription) → \(entry.path.prefix(200))")
                }
            }
        }
    }

    @Test("repos and blogs: a hostile query is one encoded query value on the search path")
    func searchQueries() async throws {
        try await withFreshetCLI(.init(enforceRateLimits: false)) { cli in
            for query in Self.hostile {
                for (command, path, name) in [("repos", ["search", "repositories"], "q"), ("blogs", ["v2", "search", "blog"], "query")] {
                    await cli.sim.simulator.resetLog()
                    let result = try await cli.run(command, query, "--json")
                    #expect([0, 2].contains(result.status), "\(command) \(query.prefix(60).debugDescription): \(result.stderr.prefix(300))")
                    let log = await cli.sim.simulator.requestLog()
                    #expect(log.count == 1, "\(command) \(query.prefix(60).debugDescription): one query, one request")
                    for entry in log {
                        let target = parseTarget(entry.path)
                        #expect(target.segments == path.map { Substring($0) }, "\(command) \(query.prefix(60).debugDescription) → \(entry.path.prefix(200))")
                        #expect(target.query[name] == query, "\(command) \(query.prefix(60).debugDescription) → \(entry.path.prefix(200))")
                    }
                }
            }
        }
    }

    @Test("Arguments that are not UTF-8 are rejected or sent as U+FFFD, never as raw bytes")
    func nonUTF8Arguments() async throws {
        let freshet = try #require(builtProduct("freshet"))
        try await withFreshetCLI(.init(enforceRateLimits: false)) { cli in
            // The shell passes printf's raw bytes as the last argument.
            func run(_ arguments: [String], bytes: String) async throws -> ProcessResult {
                try await runProcess(URL(fileURLWithPath: "/bin/sh"),
                                     ["-c", "exec \"$0\" \"$@\" \"$(printf '\(bytes)')\"", freshet.path] + arguments,
                                     environment: cli.baseEnvironment)
            }
            for bytes in ["\\377\\376", "a/\\377", "\\303\\050/x", "x/\\355\\240\\200"] {
                let feed = try await run(["feed"], bytes: bytes)
                #expect(feed.status == 1, "feed \(bytes): \(feed.stderr)")
                let item = try await run(["hn", "item"], bytes: bytes)
                #expect(item.status == 1, "hn item \(bytes): \(item.stderr)")
            }
            #expect(await cli.sim.simulator.requestLog().isEmpty)

            let user = try await run(["user"], bytes: "\\377\\376")
            #expect(user.status == 2, "\(user.stderr)")
            let log = await cli.sim.simulator.requestLog()
            #expect(log.map(\.path) == ["/users/%EF%BF%BD%EF%BF%BD"], "each invalid byte became U+FFFD, encoded")
        }
    }
}
