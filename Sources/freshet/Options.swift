import ArgumentParser
import Foundation

/// Options shared by every data command.
struct CommonOptions: ParsableArguments {
    @Flag(name: .long, help: "Print JSON (upstream field names) on stdout instead of text.")
    var json = false

    @Flag(name: .long, help: "Exit 0 when a refresh fails but stored data was shown.")
    var allowStale = false

    @Option(name: .long, help: "HTTP transport: ahc (AsyncHTTPClient, default) or urlsession.")
    var transport: TransportChoice = .ahc
}

/// The selectable HTTP transports.
enum TransportChoice: String, ExpressibleByArgument, CaseIterable {
    case ahc
    case urlsession
}

/// Exit statuses of the CLI contract (shared/DESIGN.md §5).
enum ExitStatus {
    /// Usage or other error.
    static let failure = ExitCode(1)
    /// Nothing could be shown (network or API failure with nothing stored).
    static let nothingShown = ExitCode(2)
    /// A refresh failed and stored data was shown (without --allow-stale).
    static let staleShown = ExitCode(3)
}

/// Writes a line to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// The error a command throws when its issue has not landed: it never pretends to work.
struct NotImplemented: Error, CustomStringConvertible {
    let command: String
    var description: String { "freshet \(command) is not implemented yet." }
}

/// Says that `command` does not work yet and exits 1.
func notImplemented(_ command: String) throws -> Never {
    printError("error: freshet \(command) is not implemented yet.")
    throw ExitStatus.failure
}
