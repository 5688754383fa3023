import Foundation
import FreshetFeeds
import GitHubAPI
@preconcurrency import Rainbow

/// How GitHub users and repositories look in the terminal.
public enum GitHubFormat {
    /// The width of the label column in profiles.
    public static let labelWidth = 13

    // MARK: - Users

    /// `freshet user`: name and login, then one labelled line per field that is set.
    public static func userLines(_ user: GitHubUser, now: Date = Date(), color: Bool) -> [String] {
        var heading = user.name.map { "\($0) (\(user.login))" } ?? user.login
        if user.isOrganization { heading += " · organization" }
        var lines = [color ? heading.bold : heading]
        func add(_ label: String, _ value: String?) {
            guard let value, !value.isEmpty else { return }
            lines.append(labelled(label, value, color: color))
        }
        add("bio", user.bio.map(TextLayout.singleLine))
        add("company", user.company)
        add("location", user.location)
        add("blog", user.blog)
        add("email", user.email)
        add("followers", "\(number(user.followers)) · following \(number(user.following)) · public repos \(number(user.publicRepos))")
        add("joined", dateAndAge(user.createdAt, now: now))
        add("updated", dateAndAge(user.updatedAt, now: now))
        add("profile", user.htmlURL)
        return lines
    }

    // MARK: - Repositories

    /// `freshet repo`: the repository's facts, one labelled line each.
    public static func repositoryLines(_ repo: GitHubRepository, now: Date = Date(), color: Bool) -> [String] {
        var lines = [color ? repo.fullName.bold : repo.fullName]
        if let description = repo.description, !description.isEmpty { lines.append(TextLayout.singleLine(description)) }
        func add(_ label: String, _ value: String?) {
            guard let value, !value.isEmpty else { return }
            lines.append(labelled(label, value, color: color))
        }
        add("stars", "\(number(repo.stargazersCount)) · forks \(number(repo.forksCount)) · open issues \(number(repo.openIssuesCount))")
        add("language", repo.language ?? "—")
        add("license", repo.license.map { license in
            license.spdxID.map { $0 == "NOASSERTION" || $0 == license.name ? license.name : "\(license.name) (\($0))" } ?? license.name
        } ?? "none")
        add("topics", repo.topics.joined(separator: ", "))
        add("branch", repo.defaultBranch)
        add("created", dateAndAge(repo.createdAt, now: now))
        add("pushed", repo.pushedAt.map { dateAndAge($0, now: now) } ?? "never")
        if repo.isFork { add("fork", "yes") }
        add("url", repo.htmlURL)
        return lines
    }

    /// One search result on one line: stars, name, language, description, cut to `width`.
    public static func searchRows(_ repos: [GitHubRepository], width: Int) -> [String] {
        let rows = repos.map { repo in
            ["★ " + compact(repo.stargazersCount), repo.fullName, repo.language ?? "", TextLayout.singleLine(repo.description ?? "")]
        }
        return TextLayout.columns(rows, widths: [8, 38, 12, nil], alignRight: [0]).map {
            TextLayout.truncate($0, to: width)
        }
    }

    /// "1,234 repositories match "swift"" (or "no repositories match …").
    public static func searchSummary(_ result: RepositorySearchResult, query: String, shown: Int? = nil) -> String {
        guard result.totalCount > 0 else { return "no repositories match “\(query)”" }
        let noun = result.totalCount == 1 ? "repository matches" : "repositories match"
        var text = "\(number(result.totalCount)) \(noun) “\(query)”"
        if let shown, shown < result.totalCount { text += " (showing \(shown))" }
        if result.incompleteResults { text += " — incomplete: the search timed out" }
        return text
    }

    // MARK: - Pieces

    /// One line of a profile: `label` padded to ``labelWidth`` columns (dimmed when `color`), then `value`.
    public static func labelled(_ label: String, _ value: String, color: Bool) -> String {
        let padded = TextLayout.pad(label, to: labelWidth)
        return (color ? padded.dim : padded) + value
    }

    /// `12,345`, without depending on the locale.
    public static func number(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (index, character) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(character)
        }
        return (value < 0 ? "-" : "") + out
    }

    /// `999`, `1.2k`, `41.0k`, `1.3m`.
    public static func compact(_ value: Int) -> String {
        switch value {
        case ..<1000: return String(value)
        case ..<1_000_000: return String(format: "%.1fk", Double(value) / 1000)
        default: return String(format: "%.1fm", Double(value) / 1_000_000)
        }
    }

    /// "2011-01-25, 13 years ago" (the day in the local time zone).
    public static func dateAndAge(_ date: Date, now: Date = Date(), timeZone: TimeZone = .current) -> String {
        "\(day(date, timeZone: timeZone)), \(age(date, now: now))"
    }

    /// `yyyy-MM-dd` in `timeZone`, independent of the locale.
    public static func day(_ date: Date, timeZone: TimeZone = .current) -> String {
        String(BlogText.dateTime(date, timeZone: timeZone).prefix(10))
    }

    /// "just now", "5 minutes ago", "3 hours ago", "2 days ago", "4 months ago", "13 years ago".
    public static func age(_ date: Date, now: Date = Date()) -> String {
        let seconds = Int(now.timeIntervalSince(date))
        guard seconds >= 60 else { return seconds > -60 ? "just now" : "in the future" }
        func unit(_ count: Int, _ name: String) -> String { "\(count) \(name)\(count == 1 ? "" : "s") ago" }
        switch seconds {
        case ..<3600: return unit(seconds / 60, "minute")
        case ..<86_400: return unit(seconds / 3600, "hour")
        case ..<(86_400 * 30): return unit(seconds / 86_400, "day")
        case ..<(86_400 * 365): return unit(seconds / (86_400 * 30), "month")
        default: return unit(seconds / (86_400 * 365), "year")
        }
    }
}
