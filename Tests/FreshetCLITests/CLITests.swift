import Foundation
import FreshetTestSupport
import Testing

@Suite("freshet executable")
struct CLITests {
    func freshet() throws -> URL {
        try #require(builtProduct("freshet"), "the freshet executable was not built next to the tests")
    }

    @Test func helpListsEveryCommand() async throws {
        let result = try await runProcess(try freshet(), ["--help"])
        #expect(result.status == 0)
        for command in ["feed", "hn", "user", "repo", "repos", "blogs", "proxy", "cache"] {
            #expect(result.stdout.contains("  \(command) "), "--help does not list \(command)")
        }
    }

    @Test("A command's help and usage errors name it under freshet, as ArgumentParser's walk from the root does",
          arguments: ["feed", "hn", "user", "repo", "repos", "blogs", "proxy"])
    func commandHelpNamesFreshet(command: String) async throws {
        let help = try await runProcess(try freshet(), [command, "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("USAGE: freshet \(command)"), "\(help.stdout)")
        let wrong = try await runProcess(try freshet(), [command, "--no-such-option"])
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("Usage: freshet \(command)"), "\(wrong.stderr)")
    }

    #if os(Linux)
    @Test("On Linux freshet loads no FoundationNetworking (libcurl and its libraries), and --transport urlsession says why")
    func noFoundationNetworkingOnLinux() async throws {
        let binary = try freshet()
        let libraries = try await runProcess(URL(fileURLWithPath: "/usr/bin/ldd"), [binary.path])
        #expect(libraries.status == 0)
        #expect(libraries.stdout.contains("libFoundation.so"), "ldd lists the libraries: \(libraries.stdout)")
        #expect(!libraries.stdout.contains("libFoundationNetworking") && !libraries.stdout.contains("libcurl"),
                "\(libraries.stdout)")
        let result = try await runProcess(binary, ["repo", "apple/swift", "--demo", "--transport", "urlsession"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("--transport urlsession is not built into freshet on Linux"), "\(result.stderr)")
    }
    #endif

    @Test func unknownCommandIsAUsageError() async throws {
        let result = try await runProcess(try freshet(), ["frobnicate"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("frobnicate"))
    }

    @Test("FRESHET_LOG: an unknown level is an error naming it; debug adds the validators and rate-limit fields, trace every field")
    func logLevels() async throws {
        try await withFreshetCLI { cli in
            let bogus = try await cli.run("repo", "apple/swift", environment: ["FRESHET_LOG": "bogus"])
            #expect(bogus.status == 1)
            #expect(bogus.stderr.contains("FRESHET_LOG must be one of info, debug or trace"), "\(bogus.stderr)")
            let info = try await cli.run("repo", "apple/swift", "--refresh", environment: ["FRESHET_LOG": "info"])
            #expect(info.status == 0 && info.stderr.contains("GET ") && !info.stderr.contains("etag"), "\(info.stderr)")
            let debug = try await cli.run("repo", "apple/swift", "--refresh", environment: ["FRESHET_LOG": "debug"])
            #expect(debug.status == 0)
            #expect(debug.stderr.contains("validators and limits"), "\(debug.stderr)")
            #expect(debug.stderr.contains("request=cache-control: max-age=0") && debug.stderr.contains("etag: ")
                    && debug.stderr.contains("x-ratelimit-remaining: "), "\(debug.stderr)")
            #expect(!debug.stderr.contains("response headers"), "all fields only at trace")
            let trace = try await cli.run("repo", "apple/swift", "--refresh", environment: ["FRESHET_LOG": "trace"])
            #expect(trace.stderr.contains("response headers") && trace.stderr.contains("content-type"), "\(trace.stderr)")
        }
    }

    @Test("An unusable FRESHET_HOME: the system's reason and what to do, not Foundation's error dump")
    func unusableHome() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("freshet-file-\(UUID().uuidString)")
        try Data().write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try await runProcess(try freshet(), ["hn", "--demo", "--limit", "1"],
                                          environment: ["FRESHET_HOME": file.appendingPathComponent("sub").path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("Not a directory") && result.stderr.contains("Set FRESHET_HOME"), "\(result.stderr)")
        #expect(!result.stderr.contains("NSCocoaErrorDomain"), "\(result.stderr)")
    }

    @Test("Options that contradict each other are a usage error that names them, not one dropped in silence",
          arguments: [
              (["feed", "--top-swift", "3", "apple/swift"], "not both"),
              (["user", "octocat", "--no-images", "--images", "iterm2"], "--no-images and --images iterm2"),
              (["blogs", "x", "--no-images", "--images", "kitty"], "--no-images and --images kitty"),
          ])
    func contradictions(arguments: [String], named: String) async throws {
        let result = try await runProcess(try freshet(), arguments)
        #expect(result.status == 1, "\(arguments)")
        #expect(result.stderr.contains(named), "\(arguments): \(result.stderr)")
    }

    @Test("Help reads well: every discussion is paragraphs, each one line, for ArgumentParser to wrap once")
    func discussionsWrapOnce() async throws {
        let result = try await runProcess(try freshet(), ["--experimental-dump-help"])
        #expect(result.status == 0)
        let dump = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        var checked = 0
        func walk(_ command: [String: Any], _ path: String) {
            if let discussion = command["discussion"] as? String, !discussion.isEmpty {
                checked += 1
                for paragraph in discussion.components(separatedBy: "\n\n") {
                    #expect(!paragraph.contains("\n"), "`\(path) --help`: a line break inside a paragraph: \(paragraph)")
                }
            }
            for sub in command["subcommands"] as? [[String: Any]] ?? [] {
                walk(sub, path + " " + (sub["commandName"] as? String ?? "?"))
            }
        }
        walk(try #require(dump["command"] as? [String: Any]), "freshet")
        #expect(checked >= 8, "the commands with discussions were found")
    }

    @Test("The options a warm feed or hn parses declare no default for ArgumentParser to describe, and their help still names it",
          arguments: [
            ("feed", ["--limit": "(default: 50)"]),
            ("hn", ["--limit": "(default: 30)", "--sort": "(default: rank)", "--concurrency": "(default: 32)",
                    "--interval": "(default: 30)", "<list>": "(default: top)"]),
          ])
    func warmCommandsDeclareNoDefaults(command: String, defaults: [String: String]) async throws {
        // ArgumentParser describes a declared default through generic printing and dynamic casts,
        // each reading every conformance record of the process the first time (OptionDefault).
        let dump = try await runProcess(try freshet(), [command, "--experimental-dump-help"])
        #expect(dump.status == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        let arguments = try #require((json["command"] as? [String: Any])?["arguments"] as? [[String: Any]])
        #expect(arguments.count > 5)
        for argument in arguments {
            #expect(argument["defaultValue"] == nil, "`freshet \(command)` declares a default: \(argument)")
        }
        let help = try await runProcess(try freshet(), [command, "--help"])
        let lines = help.stdout.components(separatedBy: "\n")
        for (name, note) in defaults {
            // The option's help may wrap: its note is on its line or the next two.
            let start = try #require(lines.firstIndex { $0.hasPrefix("  \(name) ") }, "\(help.stdout)")
            let text = lines[start..<min(start + 3, lines.count)].joined(separator: " ")
            #expect(text.contains(note), "`freshet \(command) --help` on \(name): \(text)")
        }
        let words = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(words.contains("(values: ahc, urlsession)"))
    }
}
