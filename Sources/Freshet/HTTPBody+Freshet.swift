import OpenAPIRuntime

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
