import Foundation
import Freshet
import FreshetCache
import GitHubAPI
import HackerNewsAPI
import DaumSearchAPI

/// Where the apps' APIs live and which credentials they use, read from the environment
/// (docs/ARCHITECTURE.md §5). Flags override it by setting the properties.
public struct AppConfiguration: Sendable {
    /// GitHub REST API base (`FRESHET_GITHUB_URL`, default `https://api.github.com`).
    public var gitHubURL: URL
    /// Hacker News API base (`FRESHET_HN_URL`, default `https://hacker-news.firebaseio.com/v0`).
    public var hackerNewsURL: URL
    /// Kakao API base (`FRESHET_KAKAO_URL`, default `https://dapi.kakao.com`).
    public var kakaoURL: URL
    /// Where GitHub avatar images are fetched (`FRESHET_AVATARS_URL`, default
    /// `https://avatars.githubusercontent.com`; the simulator serves them under `/avatars`).
    public var avatarsURL: URL = GitHub.defaultAvatarsURL
    /// Where blog thumbnails are fetched (`FRESHET_THUMBNAILS_URL`): when set, a thumbnail
    /// `https://HOST/PATH` is fetched from `FRESHET_THUMBNAILS_URL/HOST/PATH` (the simulator serves
    /// them under `/thumbnails`); when not, from its own host.
    public var thumbnailsURL: URL?
    /// How long `freshet user` waits for an avatar before showing the profile without it
    /// (`FRESHET_AVATAR_WAIT`, in seconds; default 3).
    public var avatarWait: Duration = .seconds(3)
    /// `GITHUB_TOKEN`, else `GH_TOKEN`.
    public var gitHubToken: String?
    /// `KAKAO_REST_API_KEY`.
    public var kakaoAPIKey: String?
    /// The folder of the database (`FRESHET_HOME`, else `$XDG_CACHE_HOME/freshet`, else `~/.cache/freshet`).
    public var home: URL

    /// A setting that cannot be used.
    public struct Invalid: Error, CustomStringConvertible {
        /// What is wrong and how to fix it.
        public var description: String
    }

    /// Reads the configuration from `environment`.
    public static func from(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws(Invalid)
        -> AppConfiguration
    {
        func url(_ name: String) throws(Invalid) -> URL? {
            guard let text = environment[name], !text.isEmpty else { return nil }
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
                  url.host != nil else {
                throw Invalid(description: "\(name) must be an http(s) URL, got \"\(text.prefix(200))\"")
            }
            return url
        }
        func url(_ name: String, default fallback: URL) throws(Invalid) -> URL {
            try url(name) ?? fallback
        }
        func nonEmpty(_ name: String) -> String? {
            environment[name].flatMap { $0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : $0 }
        }
        var avatarWait = Duration.seconds(3)
        if let text = nonEmpty("FRESHET_AVATAR_WAIT") {
            guard let seconds = Double(text.trimmingCharacters(in: .whitespaces)), seconds.isFinite, seconds >= 0,
                  seconds <= 3600 else {
                throw Invalid(description: "FRESHET_AVATAR_WAIT must be a number of seconds from 0 to 3600, got \"\(text.prefix(50))\"")
            }
            avatarWait = .milliseconds(Int64(seconds * 1000))
        }
        return AppConfiguration(
            gitHubURL: try url("FRESHET_GITHUB_URL", default: GitHub.defaultBaseURL),
            hackerNewsURL: try url("FRESHET_HN_URL", default: HackerNews.defaultBaseURL),
            kakaoURL: try url("FRESHET_KAKAO_URL", default: DaumSearch.defaultBaseURL),
            avatarsURL: try url("FRESHET_AVATARS_URL", default: GitHub.defaultAvatarsURL),
            thumbnailsURL: try url("FRESHET_THUMBNAILS_URL"),
            avatarWait: avatarWait,
            gitHubToken: nonEmpty("GITHUB_TOKEN") ?? nonEmpty("GH_TOKEN"),
            kakaoAPIKey: nonEmpty("KAKAO_REST_API_KEY"),
            home: AppDatabase.defaultDirectory(environment: environment))
    }
}
