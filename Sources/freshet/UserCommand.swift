import ArgumentParser
import Foundation
import Freshet
import FreshetCache
import FreshetFeeds
import FreshetTerminal
import GitHubAPI
import HTTPTypes

struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", _superCommandName: "freshet",
        abstract: "A GitHub user's profile.",
        discussion: """
            Name, login, bio, company, location, blog, followers, following, public repositories, \
            and when the account was created and last updated. Profiles come through the HTTP \
            cache: a repeat within a minute makes no request.

            On a terminal that shows inline images (kitty graphics protocol: kitty, Ghostty; \
            iTerm2 protocol: iTerm2, WezTerm) the avatar is drawn above the profile, fetched \
            through the same cache. Detection reads TERM, TERM_PROGRAM, LC_TERMINAL, \
            KITTY_WINDOW_ID, TMUX and STY only; it is off when stdout is not a terminal and inside tmux or \
            screen. kitty shows PNG avatars only (GitHub sends photos as JPEG).
            """)

    @Argument(help: "The GitHub login.")
    var login: String

    @OptionGroup var images: ImageOptions

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard !login.isEmpty else { throw ValidationError("the login is empty.") }
    }

    func run() async throws {
        let context = try await common.makeContext()
        let response: Response<GitHubUser>
        do {
            response = try await context.gitHub().sendOrStored(GitHub.user(login: login).revalidating(common.refresh))
        } catch {
            throw report(error, subject: "GitHub user \(login)")
        }
        if common.json {
            try printJSON(response.value, encoder: GitHub.encoder)
        } else {
            if let avatar = await avatar(for: response.value, context: context, offline: response.cache == .stale) {
                output(avatar)
            }
            output(GitHubFormat.userLines(response.value, color: Terminal.colorEnabled).joined(separator: "\n"))
        }
        if response.cache == .stale {
            try finishStale(reason: response.staleReason?.description ?? "the server could not be used", allowStale: common.allowStale)
        }
    }

    /// The avatar's escape sequence when images are on and the avatar could be fetched and shown;
    /// `nil` otherwise (a failed avatar never fails the command; `--verbose` logs why).
    /// - Parameter offline: the profile itself came stale from the store: take the avatar from
    ///   the store too, or go without (no network wait for a picture).
    private func avatar(for user: GitHubUser, context: AppContext, offline: Bool) async -> String? {
        guard let proto = images.drawing, let endpoint = GitHub.avatar(user.avatarURL, size: 128) else { return nil }
        // A picture gets a short wait (3 s unless FRESHET_AVATAR_WAIT says): the profile is what was asked for.
        let fetched = await fetchImages([(context.avatars(), endpoint)], offline: offline, wait: context.configuration.avatarWait)
        guard let image = fetched.first ?? nil else { return nil }
        return InlineImage.escapeSequence(for: image, using: proto, columns: 16, rows: 8)
    }
}
