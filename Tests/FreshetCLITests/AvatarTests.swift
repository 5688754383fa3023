import Foundation
import FreshetTestSupport
import Testing

/// The payload of the first iTerm2 inline-image sequence in `text`, decoded.
func iTermImage(in text: String) throws -> (declaredSize: Int, bytes: Data) {
    let start = try #require(text.range(of: "\u{1B}]1337;File="), "no iTerm2 sequence in: \(text.prefix(120))")
    let rest = text[start.upperBound...]
    let colon = try #require(rest.firstIndex(of: ":"))
    let end = try #require(rest.firstIndex(of: "\u{07}"))
    let arguments = rest[..<colon].split(separator: ";")
    #expect(arguments.contains("inline=1"))
    let size = try #require(arguments.first { $0.hasPrefix("size=") }.flatMap { Int($0.dropFirst(5)) })
    let bytes = try #require(Data(base64Encoded: String(rest[rest.index(after: colon)..<end])))
    return (size, bytes)
}

let pngSignature = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])

@Suite("freshet user: the avatar inline", .timeLimit(.minutes(2)))
struct AvatarTests {
    @Test("--images iterm2: the avatar PNG, fetched without credentials, then cached; the profile follows")
    func iterm2() async throws {
        try await withFreshetCLI { cli in
            let first = try await cli.run(["user", "octocat", "--images", "iterm2"], environment: ["GITHUB_TOKEN": "tok-avatar-marker"])
            #expect(first.status == 0, "\(first.stderr)")
            let image = try iTermImage(in: first.stdout)
            #expect(image.bytes.prefix(8) == pngSignature)
            #expect(image.declaredSize == image.bytes.count)
            // The sequence comes first, then a newline, then the profile.
            let after = try #require(first.stdout.range(of: "\u{07}\n"))
            #expect(first.stdout[after.upperBound...].hasPrefix("The Octocat (octocat)"))

            let log = try await SimControl(cli.sim).log()
            #expect(log.map(\.path) == ["/users/octocat", "/avatars/u/583231?v=4&s=128"])
            let avatarRequest = try #require(log.last)
            #expect(avatarRequest.headers["authorization"] == nil, "the avatar host gets no token")

            // A second run within the avatar's max-age: the same picture, no request for it.
            try await SimControl(cli.sim).resetLog()
            let second = try await cli.run("user", "octocat", "--images", "iterm2", "--refresh")
            #expect(second.status == 0, "\(second.stderr)")
            #expect(try iTermImage(in: second.stdout).bytes == image.bytes)
            #expect(try await SimControl(cli.sim).log().map(\.path) == ["/users/octocat"])
        }
    }

    @Test("--images kitty: PNG in chunks of at most 4096 base64 bytes that reassemble to the image")
    func kitty() async throws {
        try await withFreshetCLI { cli in
            let result = try await cli.run("user", "octocat", "--images", "kitty")
            #expect(result.status == 0, "\(result.stderr)")
            let pieces = result.stdout.components(separatedBy: "\u{1B}_G").dropFirst()
            #expect(pieces.count > 1, "a 128-pixel avatar takes several chunks")
            var payload = ""
            for (index, piece) in pieces.enumerated() {
                let end = try #require(piece.range(of: "\u{1B}\\"))
                let body = piece[..<end.lowerBound]
                let semicolon = try #require(body.firstIndex(of: ";"))
                let control = body[..<semicolon].split(separator: ",")
                let chunk = body[body.index(after: semicolon)...]
                #expect(chunk.utf8.count <= 4096)
                #expect(control.contains(index == pieces.count - 1 ? "m=0" : "m=1"))
                if index == 0 { #expect(control.contains("a=T") && control.contains("f=100") && control.contains("q=2")) }
                payload += chunk
            }
            #expect(Data(base64Encoded: payload)?.prefix(8) == pngSignature)
            #expect(result.stdout.contains("\u{1B}\\\nThe Octocat (octocat)"))
        }
    }

    @Test("auto on a pipe, --no-images, and --json: no escape sequence and no avatar request")
    func off() async throws {
        try await withFreshetCLI { cli in
            let terminalEnvironment = ["TERM_PROGRAM": "iTerm.app", "TERM": "xterm-kitty", "LC_TERMINAL": "iTerm2"]
            for arguments in [["user", "octocat"], ["user", "octocat", "--no-images"],
                              ["user", "octocat", "--json", "--images", "iterm2"]] {
                let result = try await cli.run(arguments, environment: terminalEnvironment)
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
                #expect(!result.stdout.contains("\u{1B}"), "\(arguments)")
            }
            #expect(try await SimControl(cli.sim).log().allSatisfy { !$0.path.hasPrefix("/avatars") })
        }
    }

    @Test("An avatar the server fails to send leaves the profile intact (exit 0)")
    func brokenAvatar() async throws {
        try await withFreshetCLI { cli in
            try await SimControl(cli.sim).fault(route: "/avatars/u/583231", status: 500, times: 10)
            let result = try await cli.run("user", "octocat", "--images", "iterm2")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(!result.stdout.contains("\u{1B}"))
            #expect(result.stdout.hasPrefix("The Octocat (octocat)"))
        }
    }
}
