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

    @Test func unknownCommandIsAUsageError() async throws {
        let result = try await runProcess(try freshet(), ["frobnicate"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("frobnicate"))
    }
}
