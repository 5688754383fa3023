import ArgumentParser
import Foundation
import Freshet
import FreshetFeeds
import GitHubAPI

struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user",
        abstract: "A GitHub user's profile.",
        discussion: """
            Name, login, bio, company, location, blog, followers, following, public repositories,
            and when the account was created and last updated. Profiles come through the HTTP
            cache: a repeat within a minute makes no request. Avatars are not shown.
            """)

    @Argument(help: "The GitHub login.")
    var login: String

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard !login.isEmpty else { throw ValidationError("the login is empty.") }
    }

    func run() async throws {
        let context = try common.makeContext()
        let response: Response<GitHubUser>
        do {
            response = try await context.gitHub().send(GitHub.user(login: login).revalidating(common.refresh))
        } catch {
            throw report(error, subject: "GitHub user \(login)")
        }
        if common.json {
            try printJSON(response.value, encoder: GitHub.encoder)
        } else {
            output(GitHubFormat.userLines(response.value).joined(separator: "\n"))
        }
        if response.cache == .stale {
            try finishStale(reason: response.staleReason ?? "the server could not be used", allowStale: common.allowStale)
        }
    }
}
