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
