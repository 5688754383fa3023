import ArgumentParser
import Foundation
import HTTPTypes
import Freshet
import FreshetFeeds
import FreshetTerminal
import FreshetTransports
#if canImport(Darwin)
import FreshetURLSession
#endif
import Logging
import OpenAPIRuntime
import Synchronization

/// Options shared by every data command.
struct CommonOptions: ParsableArguments {
    @Flag(name: .long, help: "Print JSON (upstream field names) on stdout instead of text.")
    var json = false

    @Flag(name: .long, help: "Exit 0 when a refresh fails but stored data was shown.")
    var allowStale = false

    @Flag(name: .long, help: "Ignore what is fresh in the cache: revalidate with the server now.")
    var refresh = false

    /// `--transport` as given; ``transport`` is the one used. Like the other options of `feed`
    /// and `hn` that a warm run parses, it declares no default value (see ``OptionDefault``).
    @Option(name: .customLong("transport"), help: ArgumentHelp(
        "HTTP transport: ahc (AsyncHTTPClient, default; through HTTP_PROXY/HTTPS_PROXY/ALL_PROXY except NO_PROXY) or urlsession (Apple platforms).",
        valueName: "transport"))
    var transportOption: TransportChoice?

    /// The HTTP transport: `--transport`, or AsyncHTTPClient.
    var transport: TransportChoice { transportOption ?? .ahc }

    @Flag(name: [.short, .long], help: "Log every HTTP exchange to stderr (FRESHET_LOG=debug|trace for more).")
    var verbose = false

    @Flag(name: .long, help: ArgumentHelp(
        "Try it offline: simulated GitHub, Hacker News and Kakao served in this process (also FRESHET_DEMO=1).",
        discussion: "No network, token or key is used; the demo keeps its own database."))
    var demo = false

    /// The app context: configuration from the environment (or the built-in demo), the
    /// database, the clients.
    func makeContext() async throws -> AppContext {
        var configuration = try startConfiguration()
        let logger = try logger()
        var transport = try defaultTransport()
        if Demo.isRequested(flag: demo) {
            // The demo's server is in this process: reached directly, never through a proxy.
            let direct = try defaultTransport(proxies: .direct)
            do {
                let demo = try await Demo.start(configuration)
                configuration = demo.configuration
                transport = demo.transport(over: direct)
            } catch {
                printError("error: \(error.description)")
                throw ExitStatus.failure
            }
        }
        // AsyncHTTPClient hands bodies on as they came: the chain asks for gzip and decodes above
        // the cache. URLSession decodes on its own.
        let decompression: (any ClientMiddleware)? = self.transport == .ahc ? DecompressionMiddleware() : nil
        return try openContext(configuration, transport: transport, logger: logger, decompression: decompression)
    }

    /// The `--transport` chosen; AsyncHTTPClient trusts the roots `SSL_CERT_FILE` and
    /// `SSL_CERT_DIR` name, when set, in place of the system's, and goes through the forward
    /// proxies `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` name except for `NO_PROXY`'s hosts (or
    /// `proxies`, when given). URLSession keeps the platform's trust and proxies. A malformed
    /// variable is reported and ends the command (exit 1).
    func defaultTransport(proxies given: ProxySettings? = nil) throws -> any ClientTransport {
        guard transport == .ahc else { return try urlSessionTransport() }
        do {
            let environment = ProcessEnvironment.values
            let proxies = try given ?? ProxySettings.fromEnvironment(environment)
            // The roots themselves are read when the first request is sent: a run the cache
            // answers reads no certificate. What can be told without reading one is told now.
            if let problem = TLSTrust.environmentProblem(environment) { throw problem }
            return Transports.asyncHTTPClient(trustingEnvironment: environment, proxies: proxies)
        } catch {
            printError("error: \(error)")
            throw ExitStatus.failure
        }
    }

    /// URLSession, where freshet has it (Apple platforms). On Linux it is not built in: linking
    /// FoundationNetworking loads libcurl and some 30 libraries at every start of every command
    /// (`freshet --version` took 24 ms with them and 15 ms without, on a 2-core machine).
    private func urlSessionTransport() throws -> any ClientTransport {
        #if canImport(Darwin)
        return Transports.urlSession()
        #else
        printError("error: --transport urlsession is not built into freshet on Linux (FoundationNetworking would load libcurl and some 30 libraries at every start); use --transport ahc, the default. A Swift program of your own can take URLSession from the FreshetURLSession library.")
        throw ExitStatus.failure
        #endif
    }

    /// A stderr logger when asked for (`--verbose` or `FRESHET_LOG`), else none.
    /// - Throws: ``ExitStatus/failure`` (after saying why) when `FRESHET_LOG` names no level.
    func logger() throws -> Logger? {
        let environment = ProcessEnvironment.values
        var level: Logger.Level?
        if let text = environment["FRESHET_LOG"], !text.isEmpty {
            guard let named = Logger.Level(rawValue: text.lowercased()) else {
                printError("error: FRESHET_LOG must be one of info, debug or trace (or notice, warning, error, critical), not '\(text.prefix(40))'")
                throw ExitStatus.failure
            }
            level = named
        }
        guard verbose || level != nil else { return nil }
        var logger = Logger(label: "freshet.http") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = level ?? .info
        return logger
    }
}

/// Options of the commands that only read or empty the local store (`cache stats|clear`): no
/// request is made, so there is nothing to refresh, log or choose a transport for.
struct StoreOptions: ParsableArguments {
    @Flag(name: .long, help: "Print JSON on stdout instead of text.")
    var json = false

    @Flag(name: .long, help: "The built-in demo's store (demo/ in the usual folder; also FRESHET_DEMO=1). No server is started.")
    var demo = false

    /// The app context over the store (the user's, or the demo's folder), with no server started.
    func makeContext() throws -> AppContext {
        var configuration = try startConfiguration()
        if Demo.isRequested(flag: demo) { configuration.home = Demo.folder(in: configuration.home) }
        return try openContext(configuration, transport: Transports.asyncHTTPClient(), logger: nil)
    }
}

/// The process's environment, read once: Foundation builds the whole dictionary at every read
/// (some 350k instructions with a few dozen variables), and a command asked for it ten times.
enum ProcessEnvironment {
    static let values = ProcessInfo.processInfo.environment
}

/// The terminal set up and the configuration read from the environment; a bad variable is
/// reported and ends the command (exit 1).
func startConfiguration() throws -> AppConfiguration {
    Terminal.configure()
    do {
        return try AppConfiguration.from(ProcessEnvironment.values)
    } catch {
        printError("error: \(error.description)")
        throw ExitStatus.failure
    }
}

/// Opens the app context (its database) for `configuration`, registered to be closed at exit;
/// a database that cannot be opened is reported with the reason and what to do.
func openContext(_ configuration: AppConfiguration, transport: any ClientTransport, logger: Logger?,
                 decompression: (any ClientMiddleware)? = nil) throws -> AppContext {
    do {
        let context = try AppContext(configuration: configuration, transport: transport, logger: logger,
                                     decompression: decompression, warn: { printError("warning: \($0)") })
        OpenContexts.shared.add(context)
        return context
    } catch {
        printError("error: could not open the database in \(configuration.home.path): \(readableReason(error)). "
                   + "Set FRESHET_HOME to a folder this user can write to.")
        throw ExitStatus.failure
    }
}

/// The app contexts this process opened, closed once when the command ends (however it ends),
/// so what the HTTP cache kept in memory is on disk for the next run and the database's log is
/// folded into it (a log left behind is read whole by every later start).
final class OpenContexts: Sendable {
    static let shared = OpenContexts()
    private let contexts = Mutex<[AppContext]>([])

    func add(_ context: AppContext) {
        contexts.withLock { $0.append(context) }
    }

    /// Closes (flushing first) and forgets every context.
    func closeAll() async {
        for context in contexts.withLock({ list in defer { list = [] }; return list }) {
            await context.close()
        }
    }
}

/// The selectable HTTP transports.
enum TransportChoice: String, ExpressibleByArgument, CaseIterable {
    case ahc
    case urlsession

    // What ArgumentParser's defaults for a `CaseIterable` `RawRepresentable` type give, said
    // directly: its default makes them through generic code at every parse (`reduce(into:)` into
    // a dictionary, a first-time conformance scan of ~0.5M instructions).
    static var allValueStrings: [String] { allCases.map(\.rawValue) }
    static var allValueDescriptions: [String: String] { [:] }
}

/// Why the options a warm `feed` or `hn` parses declare no default value, and say it in their
/// help instead: ArgumentParser describes a declared default by casting it to
/// `CaseIterable & RawRepresentable` and printing it through `String(describing:)`, generic code
/// whose dynamic casts each read every protocol conformance record of the process the first time
/// they meet a type (~0.5M instructions each; four for the first `Int`, three for the first
/// `String`). An optional with no value skips all of it. A warm `feed` ran 53.8M → 50.8M
/// instructions with its `--limit` and `--transport` so (bench/RESULTS.md, Profiles).
enum OptionDefault {
    /// The help text's note of a default, as ArgumentParser writes its own.
    static func note(_ value: some CustomStringConvertible) -> String { " (default: \(value))" }
}

/// Exit statuses of the CLI contract (docs/ARCHITECTURE.md §5).
enum ExitStatus {
    /// Usage or other error.
    static let failure = ExitCode(1)
    /// Nothing could be shown (network or API failure with nothing stored).
    static let nothingShown = ExitCode(2)
    /// A refresh failed and stored data was shown (without --allow-stale).
    static let staleShown = ExitCode(3)
}

/// Writes a line to standard output, at once, so progress and results interleave correctly.
func output(_ text: String) {
    FileHandle.standardOutput.write(Data(utf8: text + "\n"))
}

/// A file-system error in words: the system's reason under Foundation's wrapper ("Not a
/// directory (/tmp/x)") rather than its `NSCocoaErrorDomain` dump; other errors as they describe
/// themselves.
func readableReason(_ error: any Error) -> String {
    let posix: (any Error)?
    let path: String?
    if let cocoa = error as? CocoaError {
        (posix, path) = (cocoa.underlying, cocoa.filePath ?? cocoa.url?.path)
    } else if (error as NSError).domain == NSPOSIXErrorDomain {
        (posix, path) = (error, nil)
    } else {
        return "\(error)"
    }
    let code = posix.map { ($0 as NSError).code } ?? 0
    let reason = code > 0 ? String(cString: strerror(Int32(code))) : (error as NSError).localizedDescription
    return path.map { "\(reason) (\($0))" } ?? reason
}

/// Writes a line to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data(utf8: message + "\n"))
}

/// Says that `command` does not work yet and exits 1.
func notImplemented(_ command: String) throws -> Never {
    printError("error: freshet \(command) is not implemented yet.")
    throw ExitStatus.failure
}

/// Reports a failure that left nothing to show, in words that say what to do, and returns
/// the exit status 2. `subject` names what was asked for ("repository a/b").
func report(_ error: APIError, subject: String, configuration: AppConfiguration? = nil) -> ExitCode {
    printError("error: " + explain(error, subject: subject))
    return error == .cancelled ? ExitStatus.failure : ExitStatus.nothingShown
}

/// A person's explanation of `error`.
func explain(_ error: APIError, subject: String) -> String {
    switch error {
    case .httpStatus(404, _, _, _):
        return "\(subject) not found."
    case .httpStatus(401, let message, _, _):
        return "the server refused the credentials\(message.map { " (\($0))" } ?? ""). Check GITHUB_TOKEN / KAKAO_REST_API_KEY."
    case .rateLimited(let resetAt, let message, let url, let response):
        var text = "rate limit reached"
        if let said = message.flatMap(firstSentence) { text += ": " + said }
        if let resetAt {
            text += (text.hasSuffix(".") ? " It" : "; it")
                + " resets at \(resetAt.formatted(date: .omitted, time: .shortened)), \(TextLayout.relativeTime(resetAt))"
        }
        text += text.hasSuffix(".") ? "" : "."
        let environment = ProcessEnvironment.values
        // GitHub's budgets: the search API has its own, by the minute.
        if let resource = response?.head.headerFields[HTTPField.Name("X-RateLimit-Resource")!]
            ?? (URL(string: url)?.path.hasPrefix("/search/") == true ? "search" : nil),
           environment["GITHUB_TOKEN"] == nil, environment["GH_TOKEN"] == nil {
            text += resource == "search"
                ? " Set GITHUB_TOKEN to raise GitHub's search limit from 10 to 30 requests a minute."
                : " Set GITHUB_TOKEN to raise GitHub's limit from 60 to 5000 requests an hour."
        }
        return text
    case .unreachable(let url, _):
        return "could not connect to \(url) (\(error.reason ?? "")). Check the network, or FRESHET_*_URL if you set one"
            + (Demo.isRunning ? "." : "; --demo runs the command against the built-in simulated APIs.")
    case .timedOut(let url, _):
        return "\(url) did not answer in time. Check the network, or FRESHET_*_URL if you set one"
            + (Demo.isRunning ? "." : "; --demo runs the command against the built-in simulated APIs.")
    default:
        return error.description
    }
}

/// The first sentence of a server's message, whole (GitHub's rate-limit message goes on with a
/// parenthesised aside about authenticated requests); at most about 160 characters, cut between
/// words. `nil` for an empty message.
func firstSentence(_ message: String) -> String? {
    let text = TextLayout.singleLine(message).trimmingCharacters(in: .whitespaces)
    guard !text.isEmpty else { return nil }
    var end = text.endIndex
    if let stop = text.range(of: ". ") { end = text.index(after: stop.lowerBound) }
    var sentence = String(text[..<end])
    if sentence.count > 160 {
        let cut = sentence.prefix(160)
        sentence = String(cut[..<(cut.lastIndex(of: " ") ?? cut.endIndex)]) + "…"
    }
    return sentence
}

/// After stored or cached data was shown although the refresh failed: warns on stderr with the
/// cause and exits 3, or returns when `--allow-stale` was given.
func finishStale(reason: String, allowStale: Bool) throws {
    printError("warning: showing stored data; the refresh failed: \(reason)")
    if !allowStale { throw ExitStatus.staleShown }
}

/// Prints `value` as JSON on stdout.
func printJSON<T: Encodable>(_ value: T, encoder: JSONEncoder) throws {
    let data = try encoder.encode(value)
    FileHandle.standardOutput.write(data + Data(utf8: "\n"))
}
