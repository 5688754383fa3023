import Foundation
import FreshetTestSupport
import Testing

/// The README, read as a newcomer reads it.
private let readme: String = {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    return (try? String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)) ?? ""
}()

/// The commands of the README's first ```sh block, comments removed.
private func firstCommands() -> [String] {
    guard let start = readme.range(of: "```sh\n"), let end = readme[start.upperBound...].range(of: "```") else { return [] }
    return readme[start.upperBound..<end.lowerBound].split(separator: "\n").map { line in
        String(line.split(separator: "#", maxSplits: 1).first ?? "").trimmingCharacters(in: .whitespaces)
    }.filter { !$0.isEmpty }
}

@Suite("The README's first commands", .timeLimit(.minutes(2)))
struct ReadmeTests {
    @Test("Two commands: the main job, then the tests")
    func twoCommands() {
        let commands = firstCommands()
        #expect(commands.count == 2, "\(commands)")
        #expect(commands.first?.hasPrefix("swift run freshet ") == true)
        #expect(commands.last == "swift test")
    }

    @Test("The first command shows the feed with no network and no FRESHET_* variable")
    func firstCommandRunsOffline() async throws {
        let command = try #require(firstCommands().first)
        let arguments = command.dropFirst("swift run freshet ".count).split(separator: " ").map(String.init)
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("freshet-readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        // A fresh machine: its own HOME, nothing but PATH and NO_COLOR besides (this machine has
        // no route to the internet, so only the built-in demo can answer).
        let result = try await runProcess(try #require(builtProduct("freshet")), arguments, environment: ["HOME": home.path])
        #expect(result.status == 0, "\(command): \(result.stderr)")
        let rows = result.stdout.split(separator: "\n")
        #expect(rows.count >= 10, "\(command) printed: \(result.stdout)")
        #expect(rows.allSatisfy { $0.contains(" ago ") || $0.contains("just now") }, "feed rows start with an age: \(result.stdout)")
    }
}
