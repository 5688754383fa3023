// freshet-bench-client — the Swift side of bench/run's client-throughput case.
//
//   freshet-bench-client --mode freshet|ahc|urlsession|transport --url URL --requests N --concurrency C
//                        [--warmup W] [--timeout SECONDS] [--chain LIST] [--pool P]
//
// Sends W untimed warm-up GETs (default 2×C, to open the keep-alive connections), then N timed
// GETs with at most C in flight (C workers taking the next index from a shared counter). Request i
// goes to URL + `&n=i` (or `?n=i`) so that no two requests are identical: Freshet's coalescing
// middleware cannot merge them, and every client makes N real exchanges.
//
// Modes:
//   freshet     APIClient.live: the shipped AsyncHTTPClient transport (Transports.sharedHTTPClient)
//               and the full standard middleware chain (redirect, retry, rate limit, coalescing);
//               no cache. Bodies are read as raw bytes (Endpoint.raw), not decoded.
//               --chain picks the middlewares instead (diagnostics): a comma-separated subset of
//               redirect,retry,ratelimit,coalescing in that order, `none` for APIClient with only
//               the decompression middleware APIClient.live adds, or `bare` for APIClient alone.
//   transport   Transports.asyncHTTPClient() alone (diagnostics): the request sent and its body
//               collected, no APIClient. With BENCH_RAW_TRANSPORT set, HTTPClientTransport without
//               the failure classification; with BENCH_HTTP1 set, Freshet's own HTTP1Transport
//               (the pinned-TLS transport) instead of AsyncHTTPClient.
//   ahc         AsyncHTTPClient directly, configured exactly like Freshet's shared client
//               (Transports.sharedHTTPClient: same timeouts, no redirects or decompression, the
//               same HTTP/1.1 connections per host, Transports.maxConnectionsPerHost), body
//               collected; --pool P sets that limit to P instead (diagnostics).
//   urlsession  URLSession (FoundationNetworking on Linux), httpMaximumConnectionsPerHost = C.
//
// Prints one JSON line: {"mode":…,"requests":N,"ok":…,"errors":…,"seconds":…,"rps":…}.
// Exits 1 on a usage error, 2 when any request failed. The whole run is bounded by --timeout
// (default 300 s): past it the process exits 3.

import AsyncHTTPClient
import Foundation
import Freshet
import FreshetTransports
import HTTPTypes
import NIOHTTP1
import NIOCore
import NIOPosix
import OpenAPIRuntime
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct Options {
    var mode = ""
    var url = ""
    var requests = 20_000
    var concurrency = 32
    var warmup: Int?
    var timeout = 300.0
    var chain: [String]?
    var pool: Int?
    var bare = false

    static func parse(_ arguments: [String]) -> Options? {
        var options = Options()
        var index = 0
        func value() -> String? {
            index += 1
            return index < arguments.count ? arguments[index] : nil
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--mode": guard let v = value() else { return nil }; options.mode = v
            case "--url": guard let v = value() else { return nil }; options.url = v
            case "--requests": guard let v = value().flatMap(Int.init), v > 0 else { return nil }; options.requests = v
            case "--concurrency": guard let v = value().flatMap(Int.init), v > 0 else { return nil }; options.concurrency = v
            case "--warmup": guard let v = value().flatMap(Int.init), v >= 0 else { return nil }; options.warmup = v
            case "--timeout": guard let v = value().flatMap(Double.init), v > 0 else { return nil }; options.timeout = v
            case "--pool": guard let v = value().flatMap(Int.init), v > 0 else { return nil }; options.pool = v
            case "--chain":
                guard let v = value() else { return nil }
                let names = v == "none" || v == "bare" ? [] : v.split(separator: ",").map(String.init)
                guard names.allSatisfy(["redirect", "retry", "ratelimit", "coalescing"].contains) else { return nil }
                options.chain = names
                options.bare = v == "bare"
            default: return nil
            }
            index += 1
        }
        guard ["freshet", "ahc", "urlsession", "transport"].contains(options.mode), URL(string: options.url)?.host != nil else {
            return nil
        }
        return options
    }
}

/// One GET: returns true on a 200 with a body.
typealias Fetch = @Sendable (_ url: String) async -> Bool

/// `scheme://host[:port]` of a URL, as text and parsed.
struct OriginOf {
    var text: String
    var url: URL
    init(_ string: String) {
        let components = URLComponents(string: string)!
        text = "\(components.scheme!)://\(components.host!)" + (components.port.map { ":\($0)" } ?? "")
        url = URL(string: text)!
    }
}

func makeFetch(mode: String, url: String, concurrency: Int, chain: [String]?, bare: Bool, pool: Int?) -> Fetch {
    switch mode {
    case "freshet":
        var middlewares = Middlewares.standard()
        if let chain {
            middlewares = []
            if chain.contains("redirect") { middlewares.append(RedirectMiddleware()) }
            if chain.contains("retry") { middlewares.append(RetryMiddleware()) }
            if chain.contains("ratelimit") { middlewares.append(RateLimitMiddleware()) }
            if chain.contains("coalescing") { middlewares.append(CoalescingMiddleware()) }
        }
        let client = APIClient.live(baseURL: URL(string: "http://unused.invalid")!, middlewares: middlewares,
                                    decompressing: !bare)
        return { url in
            guard let absolute = URL(string: url) else { return false }
            let endpoint = Endpoint<Data>(path: [], absoluteURL: absolute) { data, _ in data }
            do {
                let response = try await client.send(endpoint)
                return response.status.code == 200 && !response.value.isEmpty
            } catch {
                return false
            }
        }
    case "transport":
        // Every URL has the same origin (--url's): only the target is cut off per request.
        let environment = ProcessInfo.processInfo.environment
        let transport: any ClientTransport = environment["BENCH_HTTP1"] != nil ? HTTP1Transport()
            : environment["BENCH_RAW_TRANSPORT"] != nil
            ? HTTPClientTransport(headTimeout: .seconds(30)) : Transports.asyncHTTPClient()
        let origin = OriginOf(url)
        return { url in
            let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: String(url.dropFirst(origin.text.count)),
                                      headerFields: [.accept: "application/json"])
            do {
                let (response, body) = try await transport.send(request, body: nil, baseURL: origin.url, operationID: "")
                guard let body else { return false }
                let data = try await Data(collecting: body, upTo: 10 * 1024 * 1024)
                return response.status.code == 200 && !data.isEmpty
            } catch {
                return false
            }
        }
    case "ahc":
        // The same configuration as Transports.sharedHTTPClient (keep the two in step).
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(10), read: .seconds(30)),
            connectionPool: .init(idleTimeout: .seconds(60)),
            decompression: .disabled
        )
        configuration.httpVersion = .automatic
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = pool ?? Transports.maxConnectionsPerHost
        let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
        return { url in
            var request = HTTPClientRequest(url: url)
            request.headers.add(name: "Accept", value: "application/json")
            do {
                let response = try await client.execute(request, timeout: .seconds(30))
                let body = try await response.body.collect(upTo: 10 * 1024 * 1024)
                return response.status.code == 200 && body.readableBytes > 0
            } catch {
                return false
            }
        }
    default:
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = concurrency
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.timeoutIntervalForRequest = 30
        let session = URLSession(configuration: configuration)
        return { url in
            guard let url = URL(string: url) else { return false }
            var request = URLRequest(url: url)
            request.setValue("application/json", forHTTPHeaderField: "Accept")
            return await withCheckedContinuation { continuation in
                let task = session.dataTask(with: request) { data, response, error in
                    let code = (response as? HTTPURLResponse)?.statusCode ?? 0
                    continuation.resume(returning: error == nil && code == 200 && !(data ?? Data()).isEmpty)
                }
                task.resume()
            }
        }
    }
}

/// The index of the next request, shared by the workers.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    func next() -> Int { value.wrappingAdd(1, ordering: .relaxed).oldValue }
}

/// Sends `count` GETs with at most `concurrency` in flight; returns the number that failed.
func run(_ fetch: @escaping Fetch, base: String, first: Int, count: Int, concurrency: Int) async -> Int {
    let counter = Counter()
    let separator = base.contains("?") ? "&" : "?"
    return await withTaskGroup(of: Int.self) { group in
        for _ in 0..<min(concurrency, count) {
            group.addTask {
                var failures = 0
                while true {
                    let i = counter.next()
                    guard i < count else { break }
                    if await !fetch("\(base)\(separator)n=\(first + i)") { failures += 1 }
                }
                return failures
            }
        }
        return await group.reduce(0, +)
    }
}

guard let options = Options.parse(Array(CommandLine.arguments.dropFirst())) else {
    FileHandle.standardError.write(Data("""
        usage: freshet-bench-client --mode freshet|ahc|urlsession|transport --url URL --requests N --concurrency C \
        [--warmup W] [--timeout SECONDS] [--chain redirect,retry,ratelimit,coalescing|none|bare] [--pool P]\n
        """.utf8))
    exit(1)
}

// Bound the whole run.
let deadline = options.timeout
Thread.detachNewThread {
    Thread.sleep(forTimeInterval: deadline)
    FileHandle.standardError.write(Data("freshet-bench-client: gave up after \(deadline) s\n".utf8))
    exit(3)
}

let fetch = makeFetch(mode: options.mode, url: options.url, concurrency: options.concurrency, chain: options.chain,
                      bare: options.bare, pool: options.pool)
let warmup = options.warmup ?? 2 * options.concurrency
let warmupFailures = await run(fetch, base: options.url, first: 1_000_000_000, count: warmup, concurrency: options.concurrency)
let clock = ContinuousClock()
let start = clock.now
let failures = await run(fetch, base: options.url, first: 0, count: options.requests, concurrency: options.concurrency)
let elapsed = clock.now - start
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
let line = "{\"mode\":\"\(options.mode)\",\"requests\":\(options.requests),\"ok\":\(options.requests - failures),"
    + "\"errors\":\(failures),\"warmupErrors\":\(warmupFailures),\"seconds\":\(String(format: "%.4f", seconds)),"
    + "\"rps\":\(String(format: "%.1f", Double(options.requests) / seconds))}\n"
FileHandle.standardOutput.write(Data(line.utf8))
exit(failures == 0 && warmupFailures == 0 ? 0 : 2)
