import ArgumentParser
import Foundation
import Freshet
import FreshetCache
import FreshetFeeds
import FreshetTerminal
import GitHubAPI

struct RepoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "repo", _superCommandName: "freshet",
        abstract: "One GitHub repository.",
        discussion: """
            Description, stars, forks, open issues, language, license, topics, default branch, \
            and when it was created and last pushed to, through the HTTP cache.
            """)

    @Argument(help: "The repository as OWNER/REPO.")
    var repository: String

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard RepositoryName(repository) != nil else {
            throw ValidationError("'\(repository)' is not a repository; expected OWNER/REPO, like ReactiveX/RxSwift.")
        }
    }

    func run() async throws {
        let context = try await common.makeContext()
        let name = RepositoryName(repository)!
        try await Self.show(name, client: context.gitHub(), common: common)
    }

    /// Fetches and prints one repository (also used by `freshet repos` when Enter picks one).
    static func show(_ name: RepositoryName, client: APIClient, common: CommonOptions) async throws {
        let response: Response<GitHubRepository>
        do {
            response = try await client.sendOrStored(
                GitHub.repository(owner: name.owner, name: name.name).revalidating(common.refresh))
        } catch {
            throw report(error, subject: "repository \(name)")
        }
        if common.json {
            try printJSON(response.value, encoder: GitHub.encoder)
        } else {
            output(GitHubFormat.repositoryLines(response.value, color: Terminal.colorEnabled).joined(separator: "\n"))
        }
        if response.cache == .stale {
            try finishStale(reason: response.staleReason?.description ?? "the server could not be used", allowStale: common.allowStale)
        }
    }
}
