import AsyncAlgorithms
import OpenAPIRuntime

/// Reads a client's request body in a task the proxy owns and hands it on, chunk by chunk, with
/// back pressure (one chunk in flight), as an `HTTPBody` the transport streams to the origin.
///
/// The server's body stream then has exactly one reader, whose end the proxy controls: after the
/// answer, ``finish()`` stops the reading (when the origin answered without reading everything)
/// and waits for it, so the server may go on with the connection.
public final class ProxyBodyRelay: Sendable {
    /// The body to forward (iterable once).
    public let body: HTTPBody
    private let pump: Task<Void, Never>

    /// Starts reading `source`.
    /// - Parameters:
    ///   - source: the body of the client's request, as the server receives it.
    ///   - length: the `Content-Length` of the request, if it has one.
    public init<Source: AsyncSequence & Sendable>(_ source: Source, length: Int?) where Source.Element == ArraySlice<UInt8> {
        let channel = AsyncThrowingChannel<ArraySlice<UInt8>, any Error>()
        pump = Task {
            do {
                for try await chunk in source {
                    try Task.checkCancellation()
                    await channel.send(chunk)
                }
                channel.finish()
            } catch {
                channel.fail(error)
            }
        }
        body = HTTPBody(channel, length: length.map { .known(Int64($0)) } ?? .unknown, iterationBehavior: .single)
    }

    /// Stops reading the client's body if that is still going on, and waits until it has stopped.
    public func finish() async {
        pump.cancel()
        await pump.value
    }
}
