/// A command could not do its work (the terminal could not be set up, a store could not be
/// opened); the message is for the terminal.
struct CommandFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
