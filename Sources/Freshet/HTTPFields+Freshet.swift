import Foundation
import HTTPTypes
import OpenAPIRuntime

extension HTTPField.Name {
    /// `X-RateLimit-Limit`.
    public static let xRateLimitLimit = HTTPField.Name("X-RateLimit-Limit")!
    /// `X-RateLimit-Remaining`.
    public static let xRateLimitRemaining = HTTPField.Name("X-RateLimit-Remaining")!
    /// `X-RateLimit-Reset` (UTC epoch seconds).
    public static let xRateLimitReset = HTTPField.Name("X-RateLimit-Reset")!
    /// `X-RateLimit-Used`.
    public static let xRateLimitUsed = HTTPField.Name("X-RateLimit-Used")!
    /// `X-RateLimit-Resource` (`core`, `search`, …).
    public static let xRateLimitResource = HTTPField.Name("X-RateLimit-Resource")!
    /// `X-Poll-Interval` (seconds).
    public static let xPollInterval = HTTPField.Name("X-Poll-Interval")!
    /// `Link` (RFC 8288).
    public static let link = HTTPField.Name("Link")!
}

extension HTTPRequest {
    /// The absolute URL of this request when sent relative to `baseURL` (as transports do).
    public func url(relativeTo baseURL: URL) -> URL? {
        let base = baseURL.absoluteString.hasSuffix("/") ? String(baseURL.absoluteString.dropLast()) : baseURL.absoluteString
        return URL(string: base + (path ?? "/"))
    }

    /// Whether a `Cache-Control` line of the request contains `directive` (lowercase; compared
    /// case-insensitively).
    func cacheControlMentions(_ directive: String) -> Bool {
        headerFields[values: .cacheControl].contains { $0.lowercased().contains(directive) }
    }

    /// Whether the method is idempotent (RFC 9110 §9.2.2) and so safe to retry.
    public var isIdempotent: Bool {
        [.get, .head, .options, .put, .delete, .trace].contains(method)
    }
}

/// Splits an absolute URL into the origin (a transport's `baseURL`) and the request target.
enum URLTarget {
    static func split(_ url: URL) -> (origin: URL, target: String)? {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              let scheme = components.scheme, let host = components.host else { return nil }
        var origin = URLComponents()
        origin.scheme = scheme
        origin.host = host
        origin.port = components.port
        guard let originURL = origin.url else { return nil }
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        return (originURL, path + (components.percentEncodedQuery.map { "?\($0)" } ?? ""))
    }
}

extension HTTPBody {
    /// Reads and drops a body so its connection can be reused. Past `limit` bytes it stops and
    /// the connection is abandoned instead. Errors are ignored: the body is being thrown away.
    public static func discard(_ body: HTTPBody?, limit: Int = 1 << 20) async {
        guard let body else { return }
        var seen = 0
        do {
            for try await chunk in body {
                seen += chunk.count
                if seen > limit { return }
            }
        } catch {}
    }
}

extension URL {
    /// Whether scheme, host and port are all equal (default ports filled in): the same origin.
    public func isSameOrigin(as other: URL) -> Bool {
        func origin(_ url: URL) -> (String, String, Int) {
            let scheme = url.scheme?.lowercased() ?? ""
            return (scheme, url.host?.lowercased() ?? "", url.port ?? (scheme == "https" ? 443 : 80))
        }
        return origin(self) == origin(other)
    }
}

extension Substring {
    /// The text without leading and trailing spaces and tabs (HTTP's optional whitespace).
    /// Works on UTF-8 bytes, with no Foundation bridging: it runs on every cache hit.
    package func trimmingOWS() -> String {
        let bytes = utf8
        var start = startIndex
        var end = endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start = bytes.index(after: start) }
        while start < end {
            let before = bytes.index(before: end)
            guard bytes[before] == 0x20 || bytes[before] == 0x09 else { break }
            end = before
        }
        return String(self[start..<end])
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs (HTTP's optional whitespace).
    package func trimmingOWS() -> String { String(self)[...].trimmingOWS() }
}

extension HTTPField.Name {
    /// The hop-by-hop fields (RFC 9110 §7.6.1), lowercased: they concern one connection, so a
    /// cache never stores them and a proxy never forwards them (nor the fields `Connection` lists).
    public static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
    ]
}

extension HTTPBody {
    /// The same bytes, pulled on demand, watched: `onPass` as each iteration begins, `onChunk`
    /// with each chunk's size, `onEnd` when the body ends (`nil`) or fails (the error, which is
    /// thrown on as it is).
    func observed(
        onPass: @escaping @Sendable () -> Void = {}, onChunk: @escaping @Sendable (Int) -> Void = { _ in },
        onEnd: @escaping @Sendable ((any Error)?) -> Void = { _ in }
    ) -> HTTPBody {
        HTTPBody(ObservedChunks(base: self, onPass: onPass, onChunk: onChunk, onEnd: onEnd), length: length,
                 iterationBehavior: iterationBehavior)
    }
}

/// A body's chunks, reported as they are pulled (see ``HTTPBody/observed(onPass:onChunk:onEnd:)``).
private struct ObservedChunks: AsyncSequence, Sendable {
    typealias Element = HTTPBody.ByteChunk
    let base: HTTPBody
    let onPass: @Sendable () -> Void
    let onChunk: @Sendable (Int) -> Void
    let onEnd: @Sendable ((any Error)?) -> Void

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: HTTPBody.AsyncIterator
        let onChunk: @Sendable (Int) -> Void
        let onEnd: @Sendable ((any Error)?) -> Void

        mutating func next() async throws -> HTTPBody.ByteChunk? {
            do {
                guard let chunk = try await base.next() else {
                    onEnd(nil)
                    return nil
                }
                onChunk(chunk.count)
                return chunk
            } catch {
                onEnd(error)
                throw error
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        onPass()
        return AsyncIterator(base: base.makeAsyncIterator(), onChunk: onChunk, onEnd: onEnd)
    }
}
