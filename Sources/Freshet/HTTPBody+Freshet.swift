import Foundation
import OpenAPIRuntime

extension HTTPBody {
    /// A body of `data`, held whole, noted as such in the exchange's report
    /// (``ExchangeReport/current``): when it is the body the chain hands back (a cache hit, a
    /// shared answer, a decoded one), ``APIClient`` takes `data` as it is instead of reading it
    /// again chunk by chunk. A middleware that wraps or replaces it changes nothing: the note
    /// names this body only.
    package static func whole(_ data: Data) -> HTTPBody {
        let body = HTTPBody(data)
        ExchangeReport.current?.recordWhole(body, data: data)
        return body
    }

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

extension HTTPBody {
    /// The same bytes, pulled on demand, watched: `onPass` as each iteration begins, `check`
    /// before each chunk is asked for (what it throws fails the body), `onChunk` with each chunk's
    /// size, `onEnd` when the body ends (`nil`) or fails (the error thrown on). An error of the
    /// body itself is thrown on as `mapError` makes it (as it is by default); one `check` throws,
    /// as it is.
    ///
    /// The one wrapper of a body's chunks that passes them through: transfer progress and tracing
    /// watch with it, and the transports' error classification and body deadline use it.
    package func observed(
        onPass: @escaping @Sendable () -> Void = {}, check: (@Sendable () throws -> Void)? = nil,
        onChunk: (@Sendable (Int) -> Void)? = nil, mapError: (@Sendable (any Error) -> any Error)? = nil,
        onEnd: (@Sendable ((any Error)?) -> Void)? = nil
    ) -> HTTPBody {
        let chunks = ObservedChunks(base: self, onPass: onPass, check: check, onChunk: onChunk, mapError: mapError,
                                    onEnd: onEnd)
        return HTTPBody(chunks, length: length, iterationBehavior: iterationBehavior)
    }
}

/// A body's chunks, passed through and watched as they are pulled (see
/// ``HTTPBody/observed(onPass:check:onChunk:mapError:onEnd:)``).
private struct ObservedChunks: AsyncSequence, Sendable {
    typealias Element = HTTPBody.ByteChunk
    let base: HTTPBody
    let onPass: @Sendable () -> Void
    let check: (@Sendable () throws -> Void)?
    let onChunk: (@Sendable (Int) -> Void)?
    let mapError: (@Sendable (any Error) -> any Error)?
    let onEnd: (@Sendable ((any Error)?) -> Void)?

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: HTTPBody.AsyncIterator
        let check: (@Sendable () throws -> Void)?
        let onChunk: (@Sendable (Int) -> Void)?
        let mapError: (@Sendable (any Error) -> any Error)?
        let onEnd: (@Sendable ((any Error)?) -> Void)?

        mutating func next() async throws -> HTTPBody.ByteChunk? {
            do {
                try check?()
            } catch {
                onEnd?(error)
                throw error
            }
            do {
                guard let chunk = try await base.next() else {
                    onEnd?(nil)
                    return nil
                }
                onChunk?(chunk.count)
                return chunk
            } catch {
                let failure = mapError?(error) ?? error
                onEnd?(failure)
                throw failure
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        onPass()
        return AsyncIterator(base: base.makeAsyncIterator(), check: check, onChunk: onChunk, mapError: mapError,
                             onEnd: onEnd)
    }
}
