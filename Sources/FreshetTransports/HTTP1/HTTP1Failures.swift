/// The channel closed while an exchange was under way.
struct ConnectionClosed: Error {}

/// The request body was longer or shorter than its announced length.
struct BodyLengthMismatch: Error {}

/// A failed exchange, with what is known about how it failed.
struct StaleConnection: Error {
    /// The error that ended it.
    var underlying: any Error
    /// The head or read deadline ended it.
    var timedOut: Bool
    /// The connection closed (or was reset) before any of the response arrived: on a reused
    /// connection, most likely the origin closed it as idle before it read the request.
    var replayable = false
}
