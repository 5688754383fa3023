import Foundation
import Freshet
import HTTPTypes

/// Queries typed or piped one per line, for the non-interactive mode of `repos` and `blogs`.
enum SearchInput {
    /// The lines of standard input, read on a dedicated thread: a blocking read must never
    /// occupy a thread of Swift's cooperative pool.
    static func lines() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        let thread = Thread {
            while let line = readLine(strippingNewline: true) {
                continuation.yield(line)
            }
            continuation.finish()
        }
        thread.name = "freshet.stdin"
        thread.start()
        return stream
    }
}

extension Endpoint {
    /// The endpoint, made to revalidate a fresh cached answer when `force` is set (`--refresh`).
    func revalidating(_ force: Bool) -> Endpoint {
        var endpoint = self
        if force { endpoint.headers[.cacheControl] = "max-age=0" }
        return endpoint
    }
}

extension SearchInput {
    /// Runs one search per non-empty line of standard input and shows each answer in order (a
    /// blank line between answers in text mode). A failed query is reported on stderr and makes
    /// the run exit 2 at the end; answers served stale end it with the stale warning (exit 3, or 0
    /// with `--allow-stale`). `redact` scrubs secrets from the stale reasons.
    static func runQueries<Value: Sendable>(
        allowStale: Bool, json: Bool,
        search: (String) async throws(APIError) -> Response<Value>,
        show: (Value, String) -> Void,
        describe: (APIError, String) -> String,
        redact: (String) -> String = { $0 }
    ) async throws {
        var failed = false
        var staleReasons: [String] = []
        var first = true
        for await line in lines() {
            let query = line.trimmingCharacters(in: .whitespaces)
            guard !query.isEmpty else { continue }
            do throws(APIError) {
                let response = try await search(query)
                if !first, !json { output("") }
                first = false
                show(response.value, query)
                if response.cache == .stale { staleReasons.append(response.staleReason?.description ?? "the server could not be used") }
            } catch {
                failed = true
                printError("error: " + describe(error, query))
            }
        }
        if failed { throw ExitStatus.nothingShown }
        if !staleReasons.isEmpty {
            try finishStale(reason: redact(staleReasons.joined(separator: "; ")), allowStale: allowStale)
        }
    }
}

