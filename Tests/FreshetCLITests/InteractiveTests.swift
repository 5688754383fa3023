import Foundation
import FreshetSimulator
import FreshetTestSupport
import Testing

/// The first executable called `name` on the PATH.
func executableOnPath(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return (path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/local/bin", "/opt/homebrew/bin"])
        .map { $0 + "/" + name }
        .first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// tmux, if installed: it gives the interactive UI a real pseudo-terminal and renders the screen.
let tmuxPath = executableOnPath("tmux")

/// python3 starts the tmux server with every inherited descriptor closed: Foundation's `Process`
/// learns that a child ended when a socket the child inherited closes, and a daemonized tmux
/// server would otherwise hold that socket (and the `Process`) open forever.
let python3Path = executableOnPath("python3")

/// One tmux server of its own (a private socket) running one command in a 100×24 window.
struct TmuxSession: Sendable {
    let socket = "freshet-test-\(UUID().uuidString.prefix(8))"
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("freshet-tty-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    @discardableResult
    func tmux(_ arguments: String...) async throws -> ProcessResult {
        let tmux = try #require(tmuxPath)
        return try await runProcess(URL(fileURLWithPath: tmux), ["-L", socket, "-f", "/dev/null"] + arguments,
                                    environment: tmuxEnvironment, timeout: 20)
    }

    /// tmux keeps its socket in the session's own directory, removed at the end.
    var tmuxEnvironment: [String: String] { ["TMUX_TMPDIR": directory.path] }

    /// Starts `freshet ARGUMENTS` inside a shell that records the terminal settings before and
    /// after it, prints its exit status (once the settings after are written: a test that sees
    /// `exit=` may read them), and stays open so the screen can be read afterwards.
    func start(_ cli: FreshetCLI, _ arguments: [String]) async throws {
        try await start(environment: cli.baseEnvironment, arguments)
    }

    /// Starts `freshet ARGUMENTS` with `environment` (and a terminal's `TERM`, no colour unless
    /// `colour`) only.
    func start(environment: [String: String], _ arguments: [String], colour: Bool = false) async throws {
        let freshet = try #require(builtProduct("freshet")).path
        var environment = environment
        environment["TERM"] = "xterm-256color"
        environment["NO_COLOR"] = colour ? nil : "1"
        let assignments = environment
            .map { "\($0.key)=\(quote($0.value))" }.sorted().joined(separator: " ")
        let dir = directory.path
        let inner = "echo $$ > \(quote(dir + "/pid")); exec \(quote(freshet)) \(arguments.map(quote).joined(separator: " "))"
        let script = """
            stty -g > \(quote(dir + "/before")); echo BEFORE-UI; \
            env -u NO_COLOR \(assignments) sh -c \(quote(inner)); \
            code=$?; stty -g > \(quote(dir + "/after")); echo "exit=$code"; exec sleep 120
            """
        let tmux = try #require(tmuxPath)
        let python = try #require(python3Path)
        let closeAndExec = "import os, sys; os.closerange(3, 65536); os.execv(sys.argv[1], sys.argv[1:])"
        let started = try await runProcess(URL(fileURLWithPath: python), [
            "-c", closeAndExec, tmux, "-L", socket, "-f", "/dev/null",
            "new-session", "-d", "-x", "100", "-y", "24", "-s", "ui", "sh -c \(quote(script))",
        ], environment: tmuxEnvironment, timeout: 20)
        #expect(started.status == 0, "tmux: \(started.stderr)")
    }

    /// The visible screen, as text.
    func screen() async throws -> String {
        try await tmux("capture-pane", "-p", "-t", "ui").stdout
    }

    /// The visible screen with the escape sequences of its cells' attributes (colours, dim).
    func styledScreen() async throws -> String {
        try await tmux("capture-pane", "-p", "-e", "-t", "ui").stdout
    }

    /// Waits (bounded) until the screen shows `text`.
    func waitFor(_ text: String, within seconds: Double = 20) async throws -> Bool {
        try await eventually(within: seconds) { try await screen().contains(text) }
    }

    func send(_ keys: String...) async throws {
        try await tmux(["send-keys", "-t", "ui"] + keys)
    }

    func type(_ text: String) async throws {
        try await tmux("send-keys", "-t", "ui", "-l", text)
    }

    /// The terminal settings before the UI started and after it ended.
    func settings() throws -> (before: String, after: String) {
        (try String(contentsOf: directory.appendingPathComponent("before"), encoding: .utf8),
         try String(contentsOf: directory.appendingPathComponent("after"), encoding: .utf8))
    }

    /// The pid of the running `freshet`.
    func pid() throws -> Int32? {
        Int32(try String(contentsOf: directory.appendingPathComponent("pid"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines))
    }

    func stop() async {
        _ = try? await tmux("kill-session", "-t", "ui")
        _ = try? await tmux("kill-server")
        try? FileManager.default.removeItem(at: directory)
    }

    private func quote(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    @discardableResult
    private func tmux(_ arguments: [String]) async throws -> ProcessResult {
        let tmux = try #require(tmuxPath)
        return try await runProcess(URL(fileURLWithPath: tmux), ["-L", socket, "-f", "/dev/null"] + arguments,
                                    environment: tmuxEnvironment, timeout: 20)
    }
}

/// Runs `body` with a fresh tmux session, always stopping it.
func withTmux(_ body: @Sendable (TmuxSession) async throws -> Void) async throws {
    let session = try TmuxSession()
    do {
        try await body(session)
    } catch {
        await session.stop()
        throw error
    }
    await session.stop()
}

@Suite("Interactive search in a pseudo-terminal (tmux)", .enabled(if: tmuxPath != nil && python3Path != nil, "needs tmux and python3 on PATH (.ci/run installs both)"), .timeLimit(.minutes(2)))
struct InteractiveTests {
    @Test("repos: typing shows results, ↓ and Enter print the selected repository, the terminal is restored")
    func reposSelectAndEnter() async throws {
        try await withFreshetCLI { cli in
            try await withTmux { tmux in
                try await tmux.start(cli, ["repos", "--debounce", "150"])
                #expect(try await tmux.waitFor("type to search"), "the prompt appears")
                try await tmux.type("rxswiftz")
                try await tmux.send("BSpace")
                let results = try await tmux.waitFor("match “rxswift”")
                let shown = try await tmux.screen()
                #expect(results, "results appear: \(shown)")
                let screen = try await tmux.screen()
                let lines = screen.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
                #expect(lines.first?.hasPrefix("repos› rxswift") == true)
                #expect(lines.count > 3 && lines[2].hasPrefix("› ") && lines[2].contains("ReactiveX/RxSwift"), "\(screen)")
                let second = try #require(lines[3].split(separator: " ").first { $0.contains("/") }.map(String.init))

                try await tmux.send("Down")
                let moved = try await eventually {
                    let lines = try await tmux.screen().split(separator: "\n", omittingEmptySubsequences: false)
                    return lines.count > 3 && lines[3].hasPrefix("› ") && lines[2].hasPrefix("  ")
                }
                #expect(moved, "↓ moves the selection to the second row")
                try await tmux.send("Enter")
                #expect(try await tmux.waitFor("exit=0"))
                let after = try await tmux.screen()
                #expect(after.contains("BEFORE-UI"), "back on the main screen")
                #expect(!after.contains("repos›"), "the UI is gone")
                #expect(after.contains("\(second)\n"), "the selected repository's details: \(after)")
                #expect(after.contains("license"))
                let settings = try tmux.settings()
                #expect(settings.before == settings.after, "the terminal settings are restored")

                let searches = try await SimControl(cli.sim).log().filter { $0.path.hasPrefix("/search/") }
                #expect(searches.count <= 2, "debounced: not one request per keystroke (\(searches.map(\.path)))")
                #expect(searches.last.map { loggedQueryItems($0.path)["q"] } == "rxswift")
            }
        }
    }

    @Test("blogs: Tab re-sorts what is shown without a new request; Esc quits and restores the terminal")
    func blogsSortKeyAndEscape() async throws {
        try await withFreshetCLI { cli in
            try await withTmux { tmux in
                try await tmux.start(cli, ["blogs", "--debounce", "100"])
                #expect(try await tmux.waitFor("type to search"))
                try await tmux.type("냉면")
                let results = try await tmux.waitFor("sorted by accuracy")
                let shown = try await tmux.screen()
                #expect(results, "results appear: \(shown)")
                let before = try await SimControl(cli.sim).log().count
                let rowTitles = { (screen: String) in
                    screen.split(separator: "\n").dropFirst(2).map { BlogRow.title(String($0.dropFirst(2))) }
                }
                let unsorted = rowTitles(shown)
                try await tmux.send("Tab")
                #expect(try await tmux.waitFor("sorted by title"))
                let titles = rowTitles(try await tmux.screen())
                #expect(titles.count == 10)
                #expect(titles.allSatisfy { !$0.isEmpty }, "every row shows a title: \(titles)")
                #expect(titles.sorted() == unsorted.sorted(), "the same ten posts, re-sorted: \(unsorted) → \(titles)")
                for (a, b) in zip(titles, titles.dropFirst()) {
                    #expect(a.compare(b, options: [.caseInsensitive, .numeric, .widthInsensitive]) != .orderedDescending, "\(a) before \(b)")
                }
                try await tmux.send("Tab")
                #expect(try await tmux.waitFor("sorted by datetime"))
                #expect(try await SimControl(cli.sim).log().count == before, "re-sorting made no request")

                try await tmux.send("Escape")
                #expect(try await tmux.waitFor("exit=0"))
                let settings = try tmux.settings()
                #expect(settings.before == settings.after)
                #expect(!(try await tmux.screen()).contains("blogs›"))
            }
        }
    }

    @Test("Styles on a terminal, none with NO_COLOR or in a pipe", arguments: [true, false])
    func colourFollowsTheTerminal(colour: Bool) async throws {
        try await withTmux { tmux in
            try await tmux.start(environment: ["FRESHET_HOME": tmux.directory.appendingPathComponent("home").path],
                                 ["hn", "--demo", "--limit", "3"], colour: colour)
            #expect(try await tmux.waitFor("exit=0"))
            let screen = try await tmux.styledScreen()
            // The demo's notice is dim (SGR 2) on a colour terminal.
            #expect(screen.contains("\u{1B}[2m") == colour, "\(screen)")
            #expect(screen.contains("\u{1B}[") == colour, "\(screen)")
        }
        // In a pipe, never, whatever the environment says.
        try await withFreshetCLI { cli in
            let piped = try await cli.run(["hn", "--demo", "--limit", "3"], environment: ["TERM": "xterm-256color"])
            #expect(piped.status == 0)
            #expect(!(piped.stdout + piped.stderr).contains("\u{1B}["), "\(piped.stdout)\(piped.stderr)")
        }
    }

    @Test("Ctrl-C quits (exit 0) and restores the terminal")
    func controlCQuits() async throws {
        try await withFreshetCLI { cli in
            try await withTmux { tmux in
                try await tmux.start(cli, ["blogs"])
                #expect(try await tmux.waitFor("type to search"))
                try await tmux.send("C-c")
                #expect(try await tmux.waitFor("exit=0"))
                let settings = try tmux.settings()
                #expect(settings.before == settings.after)
                #expect(try await SimControl(cli.sim).log().isEmpty, "nothing was typed, nothing was searched")
            }
        }
    }

    @Test("SIGTERM while the UI runs: the terminal is restored and the process ends by the signal")
    func sigtermRestores() async throws {
        try await withFreshetCLI { cli in
            try await withTmux { tmux in
                try await tmux.start(cli, ["repos"])
                #expect(try await tmux.waitFor("type to search"))
                let pid = try #require(try tmux.pid())
                #expect(kill(pid, SIGTERM) == 0)
                let ended = try await tmux.waitFor("exit=143")
                let shown = try await tmux.screen()
                #expect(ended, "the shell saw the signal: \(shown)")
                let settings = try tmux.settings()
                #expect(settings.before == settings.after, "raw mode was undone")
                let screen = try await tmux.screen()
                #expect(screen.contains("BEFORE-UI") && !screen.contains("repos›"), "the alternate screen was left")
            }
        }
    }
}
