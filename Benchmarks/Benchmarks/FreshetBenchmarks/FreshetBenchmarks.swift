import Benchmark
import Foundation
import Freshet
import FreshetCache
import GRDB
import GitHubAPI
import HackerNewsAPI
import HTTPTypes
import OpenAPIRuntime

/// A GitHub events page as the API writes it: 50 events of mixed types.
let eventsPage: Data = {
    let types = ["WatchEvent", "PushEvent", "IssuesEvent", "ForkEvent", "ReleaseEvent"]
    let events = (0..<50).map { index -> String in
        let type = types[index % types.count]
        return """
            {"id":"\(22249084947 + index)","type":"\(type)","actor":{"id":583231,"login":"octocat","display_login":"octocat",\
            "gravatar_id":"","url":"https://api.github.com/users/octocat","avatar_url":"https://avatars.githubusercontent.com/u/583231?"},\
            "repo":{"id":1296269,"name":"octocat/Hello-World","url":"https://api.github.com/repos/octocat/Hello-World"},\
            "payload":{"action":"started","ref":"refs/heads/main","size":3,"commits":[{"sha":"abc","message":"Fix the thing"}],\
            "issue":{"number":42,"title":"Crash on launch"},"release":{"tag_name":"v6.8.0"},"forkee":{"full_name":"x/y"}},\
            "public":true,"created_at":"2022-06-09T12:47:28Z"}
            """
    }
    return Data("[\(events.joined(separator: ","))]".utf8)
}()

/// A Hacker News top-stories list: 500 ids.
let storyIDs = Data("[\((0..<500).map { String(40_000_000 + $0) }.joined(separator: ","))]".utf8)

let cacheControlValue = #"private, max-age=60, s-maxage=60, must-revalidate, ext="a, b=c", stale-while-revalidate=30"#

/// A transport that answers at once, to measure the client and middleware overhead alone.
struct InstantTransport: ClientTransport {
    func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws
        -> (HTTPResponse, HTTPBody?)
    {
        (HTTPResponse(status: .ok, headerFields: [.cacheControl: "max-age=60"]), HTTPBody("{}"))
    }
}

struct Empty: Decodable, Sendable {}

func storedResponse(key: String) -> CachedResponse {
    CachedResponse(key: key, variant: "", url: "https://api.github.com/repos/a/b/events", status: 200,
                   headers: [.cacheControl: "max-age=60", .eTag: #"W/"abc""#, .contentType: "application/json"],
                   body: eventsPage, requestTime: Date(), responseTime: Date())
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration.metrics = [.wallClock, .mallocCountTotal, .throughput]
    Benchmark.defaultConfiguration.maxDuration = .seconds(2)

    Benchmark("Endpoint: build and encode a GitHub events target") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try GitHub.repoEvents(owner: "ReactiveX", name: "Rx Swift/..", perPage: 100).encodedTarget())
        }
    }

    Benchmark("JSON: decode a 50-event GitHub page") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try GitHub.decoder.decode([GitHubEvent].self, from: eventsPage))
        }
    }

    Benchmark("JSON: decode a 500-id Hacker News list") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try JSONDecoder().decode([Int].self, from: storyIDs))
        }
    }

    Benchmark("Cache-Control: parse a response field") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(CacheControl(parsing: cacheControlValue).maxAge)
        }
    }

    Benchmark("Cache lookup: memory store (50-event entry)") { benchmark in
        let store = MemoryCacheStore()
        try await store.save(storedResponse(key: "k"))
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try await store.variants(forKey: "k"))
        }
    }

    Benchmark("Cache lookup: SQLite store (50-event entry)") { benchmark in
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("freshet-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let database = try DatabasePool(path: directory.appendingPathComponent("cache.sqlite").path)
        try SQLiteCacheStore.migrate(database)
        let store = SQLiteCacheStore(writer: database)
        try await store.save(storedResponse(key: "k"))
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try await store.variants(forKey: "k"))
        }
    }

    Benchmark("Client: send through no middleware (instant transport)") { benchmark in
        let client = APIClient(baseURL: URL(string: "https://example.com")!, transport: InstantTransport())
        for _ in benchmark.scaledIterations {
            blackHole(try await client.value(Endpoint<Empty>.get("x")))
        }
    }

    Benchmark("Client: send through coalescing (instant transport)") { benchmark in
        let client = APIClient(baseURL: URL(string: "https://example.com")!, transport: InstantTransport(),
                               middlewares: [CoalescingMiddleware()])
        for _ in benchmark.scaledIterations {
            blackHole(try await client.value(Endpoint<Empty>.get("x")))
        }
    }

    Benchmark("Client: cache hit from the memory store") { benchmark in
        let cache = CacheMiddleware(store: MemoryCacheStore())
        let client = APIClient(baseURL: URL(string: "https://example.com")!, transport: InstantTransport(),
                               middlewares: [cache])
        _ = try await client.value(Endpoint<Empty>.get("x"))
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try await client.value(Endpoint<Empty>.get("x")))
        }
    }
}
