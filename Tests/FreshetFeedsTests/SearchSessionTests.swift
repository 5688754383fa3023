import DaumSearchAPI
import Foundation
import Freshet
import FreshetFeeds
import FreshetSimulator
import FreshetTestSupport
import GitHubAPI
import Synchronization
import Testing

/// The search-as-you-type pipeline, driven keystroke by keystroke on a manual clock against the
/// simulator: the simulator's request log shows exactly which queries were sent.
@Suite("Search session: debounce, drop empty, remove duplicates, switch to latest", .timeLimit(.minutes(1)))
struct SearchSessionTests {
    static let repositories = "/search/repositories"

    @Test("Typing \"swift\" with keystrokes closer together than the debounce sends one request, for \"swift\"")
    func fastTypingSendsOneRequest() async throws {
        try await withSimClient { sim, client in
            let clock = ManualClock()
            let field = ScriptedField()
            var updates = SearchSession.repositories(client: client).updates(for: field, clock: clock).makeAsyncIterator()

            await field.type("swift", keystrokesApart: .milliseconds(100), on: clock)
            clock.advance(by: .milliseconds(300))
            let searching = await updates.next()
            #expect(searching?.query == "swift")
            guard case .results(let query, let result)? = await updates.next() else {
                Issue.record("expected results")
                return
            }
            #expect(query == "swift")
            #expect(!result.items.isEmpty)
            field.finish()
            #expect(await updates.next() == nil)

            let log = try await SimControl(sim).log()
            #expect(searchQueries(log, path: Self.repositories) == ["swift"])
        }
    }

    @Test("\"sw\", a pause longer than the debounce, then \"ift\": requests for \"sw\" and \"swift\" only")
    func pauseSendsIntermediateQuery() async throws {
        try await withSimClient { sim, client in
            let clock = ManualClock()
            let field = ScriptedField()
            var updates = SearchSession.repositories(client: client).updates(for: field, clock: clock).makeAsyncIterator()

            await field.type("sw", keystrokesApart: .milliseconds(100), on: clock)
            clock.advance(by: .milliseconds(300))
            #expect(await updates.next()?.query == "sw")
            guard case .results("sw", _)? = await updates.next() else {
                Issue.record("expected the results for sw")
                return
            }
            for text in ["swi", "swif", "swift"] {
                await field.type(text)
                clock.advance(by: .milliseconds(100))
            }
            clock.advance(by: .milliseconds(300))
            #expect(await updates.next()?.query == "swift")
            guard case .results("swift", _)? = await updates.next() else {
                Issue.record("expected the results for swift")
                return
            }
            field.finish()
            #expect(await updates.next() == nil)

            let log = try await SimControl(sim).log()
            #expect(searchQueries(log, path: Self.repositories) == ["sw", "swift"])
        }
    }

    @Test("A query typed again is not requested again; a field typed and cleared searches nothing")
    func duplicatesAndBlanks() async throws {
        try await withSimClient { sim, client in
            let clock = ManualClock()
            let field = ScriptedField()
            var updates = SearchSession.repositories(client: client).updates(for: field, clock: clock).makeAsyncIterator()

            await field.type("swift", keystrokesApart: .milliseconds(50), on: clock)
            clock.advance(by: .milliseconds(300))
            #expect(await updates.next()?.query == "swift")
            guard case .results("swift", _)? = await updates.next() else {
                Issue.record("expected the results for swift")
                return
            }
            // Add a letter and take it back within the debounce: the settled query is "swift" again.
            await field.type("swiftx")
            clock.advance(by: .milliseconds(100))
            await field.type("swift")
            clock.advance(by: .milliseconds(400))
            // Trailing spaces do not make a new query.
            await field.type("swift  ")
            clock.advance(by: .milliseconds(400))
            // Typed and cleared within the debounce: nothing is searched, not even "r".
            await field.type("")
            clock.advance(by: .milliseconds(400))
            await field.type("r")
            clock.advance(by: .milliseconds(100))
            await field.type("")
            clock.advance(by: .milliseconds(400))
            field.finish()
            #expect(await updates.next() == nil, "no update after the first results")

            let log = try await SimControl(sim).log()
            #expect(searchQueries(log, path: Self.repositories) == ["swift"])
        }
    }

    @Test("A slow stale request is cancelled when a newer query starts, and its answer is never delivered")
    func staleRequestIsCancelled() async throws {
        try await withSimClient { sim, client in
            let control = SimControl(sim)
            let clock = ManualClock()
            let field = ScriptedField()
            // How each query's request ended, as the client saw it.
            let endings = Mutex<[String: APIError]>([:])
            let session = SearchSession<RepositorySearchResult> { query async throws(APIError) in
                do throws(APIError) {
                    return try await client.value(GitHub.searchRepositories(query: query, perPage: 30))
                } catch {
                    endings.withLock { $0[query] = error }
                    throw error
                }
            }
            var updates = session.updates(for: field, clock: clock).makeAsyncIterator()
            let isSW: @Sendable (SimLogEntry) -> Bool = { $0.path.hasPrefix(Self.repositories + "?q=sw&") }

            // The server holds the answer for "sw" for 120 s (the simulator's most): far longer than
            // the test, even under ThreadSanitizer's slowdown, so it cannot have answered when the
            // client gives up. Nothing waits for it: the simulator stops with the test.
            try await control.setLatency(route: Self.repositories, milliseconds: 120_000)
            await field.type("sw")
            clock.advance(by: .milliseconds(300))
            #expect(await updates.next()?.query == "sw")
            let started = try await eventually {
                try await control.log().contains { isSW($0) && !$0.finished && !$0.aborted }
            }
            #expect(started, "the request for sw reached the simulator")
            try await control.setLatency(route: Self.repositories, milliseconds: 0)

            await field.type("swift")
            clock.advance(by: .milliseconds(300))
            let next = await updates.next()
            #expect(next?.query == "swift", "the next update is about swift, not sw: \(String(describing: next))")
            guard case .results("swift", let result)? = await updates.next() else {
                Issue.record("expected the results for swift")
                return
            }
            #expect(!result.items.isEmpty)

            // The request for sw was cancelled by the client, while the server was still holding it.
            let cancelled = await eventually { endings.withLock { $0["sw"] } == .cancelled }
            #expect(cancelled, "the request for sw ended as cancelled: \(endings.withLock { $0 })")
            let log = try await control.log()
            #expect(log.first(where: isSW)?.finished == false, "the server had not answered sw when the client gave up")
            #expect(endings.withLock { $0["swift"] } == nil, "swift succeeded")
            #expect(searchQueries(log, path: Self.repositories) == ["sw", "swift"])

            field.finish()
            #expect(await updates.next() == nil, "the answer for sw is never delivered")
        }
    }

    @Test("Errors arrive as updates and the session goes on: a 422 shows GitHub's message")
    func errorsAreUpdates() async throws {
        try await withSimClient { sim, client in
            let control = SimControl(sim)
            let clock = ManualClock()
            let field = ScriptedField()
            var updates = SearchSession.repositories(client: client).updates(for: field, clock: clock).makeAsyncIterator()

            try await control.fault(route: Self.repositories, status: 422, body: """
                {"message":"Validation Failed","errors":[{"resource":"Search","field":"q","code":"invalid"}]}
                """)
            await field.type("rx")
            clock.advance(by: .milliseconds(300))
            #expect(await updates.next()?.query == "rx")
            guard case .failed("rx", let error)? = await updates.next() else {
                Issue.record("expected a failure for rx")
                return
            }
            guard case .httpStatus(422, let message, _, _) = error else {
                Issue.record("expected a 422, got \(error)")
                return
            }
            #expect(message?.contains("Validation Failed") == true)

            await field.type("rxswift")
            clock.advance(by: .milliseconds(300))
            #expect(await updates.next()?.query == "rxswift")
            guard case .results("rxswift", let result)? = await updates.next() else {
                Issue.record("expected results after the error")
                return
            }
            #expect(result.items.contains { $0.fullName == "ReactiveX/RxSwift" })
            field.finish()
            #expect(await updates.next() == nil)
        }
    }

    @Test("The search rate limit arrives as rateLimited with the reset time")
    func rateLimitIsAnUpdate() async throws {
        try await withSimClient { sim, client in
            let control = SimControl(sim)
            let reset = Int(Date().timeIntervalSince1970) + 42
            try await control.post("ratelimit", ["resource": "search", "remaining": 0, "reset": reset])
            let clock = ManualClock()
            let field = ScriptedField()
            var updates = SearchSession.repositories(client: client).updates(for: field, clock: clock).makeAsyncIterator()
            await field.type("vapor")
            clock.advance(by: .milliseconds(300))
            #expect(await updates.next()?.query == "vapor")
            guard case .failed("vapor", .rateLimited(let resetAt, _, _, _))? = await updates.next() else {
                Issue.record("expected a rate-limit failure")
                return
            }
            #expect(resetAt == Date(timeIntervalSince1970: TimeInterval(reset)))
            field.finish()
            #expect(await updates.next() == nil)
        }
    }

    @Test("Blog search runs through the same pipeline: fast typing of 스위프트 sends one request")
    func blogsShareThePipeline() async throws {
        try await withSimulator(.init()) { sim in
            let session: SearchSession<BlogSearchResult> = .blogs(client: simKakaoClient(sim), size: 10)
            let clock = ManualClock()
            let field = ScriptedField()
            var updates = session.updates(for: field, clock: clock).makeAsyncIterator()

            for text in ["ㅅ", "스", "스위", "스위프", "스위프트"] {
                await field.type(text)
                clock.advance(by: .milliseconds(120))
            }
            clock.advance(by: .milliseconds(300))
            #expect(await updates.next()?.query == "스위프트")
            guard case .results("스위프트", let result)? = await updates.next() else {
                Issue.record("expected blog results")
                return
            }
            #expect(!result.documents.isEmpty)
            #expect(result.documents.allSatisfy { $0.displayTitle.contains("스위프트") || $0.displayContents.contains("스위프트") })
            field.finish()
            #expect(await updates.next() == nil)

            let log = try await SimControl(sim).log()
            #expect(searchQueries(log, path: "/v2/search/blog") == ["스위프트"])
        }
    }

    @Test("SearchState keeps the last results while a newer query loads, and clears the error on success")
    func stateFolding() {
        var state = SearchState<[String]>()
        state.apply(.searching(query: "a"))
        #expect(state.isLoading && state.results == nil)
        state.apply(.results(query: "a", ["1"]))
        #expect(!state.isLoading && state.results == ["1"] && state.resultsQuery == "a")
        state.apply(.searching(query: "ab"))
        #expect(state.isLoading && state.results == ["1"] && state.query == "ab")
        state.apply(.failed(query: "ab", .timedOut(url: "x")))
        #expect(!state.isLoading && state.error == .timedOut(url: "x") && state.results == ["1"])
        state.apply(.searching(query: "abc"))
        #expect(state.error == nil)
    }
}
