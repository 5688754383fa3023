import Foundation
import Freshet
import HTTPTypes

/// The GitHub REST API endpoints Freshet uses, as Freshet `Endpoint` values.
///
/// Every endpoint sends `Accept: application/vnd.github+json` and
/// `X-GitHub-Api-Version: 2022-11-28`, and decodes with ``GitHub/decoder``.
/// Owner, repository and user names are passed as separate path segments, so a name like
/// `a/../b` or `x?y` can never change the request path.
///
/// ```swift
/// let client = APIClient(baseURL: GitHub.defaultBaseURL, transport: transport)
/// let events = try await client.value(GitHub.repoEvents(owner: "ReactiveX", name: "RxSwift"))
/// ```
public enum GitHub {
    /// `https://api.github.com`.
    public static let defaultBaseURL = URL(string: "https://api.github.com")!

    /// The media type sent in `Accept`: `application/vnd.github+json`.
    public static let mediaType = "application/vnd.github+json"

    /// The REST API version sent in `X-GitHub-Api-Version`: `2022-11-28`.
    public static let apiVersion = "2022-11-28"

    /// The headers every GitHub endpoint sends.
    public static var headers: HTTPFields {
        [.accept: mediaType, .gitHubAPIVersion: apiVersion]
    }

    /// The largest `per_page` GitHub accepts (100).
    public static let maxPerPage = 100

    // MARK: - Endpoints

    /// `GET /repos/{owner}/{repo}/events`: the public events of a repository, newest first.
    ///
    /// GitHub returns at most 300 events from the past 30 days. Follow the `Link` header's
    /// `next` URL to page on rather than building page numbers.
    /// - Parameters:
    ///   - owner: the account that owns the repository.
    ///   - name: the repository name.
    ///   - perPage: events per page (GitHub caps this at 100; default 30).
    ///   - page: the page number, starting at 1; `nil` leaves it out.
    public static func repoEvents(owner: String, name: String, perPage: Int = 30, page: Int? = nil)
        -> Endpoint<[GitHubEvent]>
    {
        Endpoint(
            path: ["repos", owner, name, "events"],
            query: .items(["per_page": String(perPage), "page": page.map(String.init)]), headers: headers
        ) { data, _ in
            try GitHub.decoder.decode([GitHubEvent].self, from: data)
        }
    }

    /// `GET /search/repositories?q=…`: repositories matching a search query.
    ///
    /// GitHub returns at most 1000 results per query and rejects a query over 256 characters
    /// (or with more than five `AND`/`OR`/`NOT`) with `422`.
    /// - Parameters:
    ///   - query: the search text with qualifiers, e.g. `language:swift`.
    ///   - sort: `stars`, `forks`, `help-wanted-issues` or `updated`; `nil` sorts by best match.
    ///   - order: `desc` or `asc`; only meaningful with `sort`.
    ///   - perPage: results per page (at most 100).
    ///   - page: the page number, starting at 1.
    public static func searchRepositories(
        query: String, sort: String? = nil, order: String? = nil, perPage: Int? = nil, page: Int? = nil
    ) -> Endpoint<RepositorySearchResult> {
        endpoint(
            ["search", "repositories"],
            query: .items([
                "q": query, "sort": sort, "order": order,
                "per_page": perPage.map(String.init), "page": page.map(String.init),
            ])
        )
    }

    /// `GET /users/{username}`: a user's or organization's public profile.
    public static func user(login: String) -> Endpoint<GitHubUser> {
        endpoint(["users", login])
    }

    /// `GET /repos/{owner}/{repo}`: one repository.
    public static func repository(owner: String, name: String) -> Endpoint<GitHubRepository> {
        endpoint(["repos", owner, name])
    }

    /// `https://avatars.githubusercontent.com`, where `avatar_url` values point.
    public static let defaultAvatarsURL = URL(string: "https://avatars.githubusercontent.com")!

    /// `GET` of an avatar image, for a client whose base URL is the avatars host
    /// (``defaultAvatarsURL``, or a stand-in such as the simulator's `/avatars`).
    ///
    /// Only URLs on the avatars host are accepted: `avatar_url` comes from a server, and the
    /// image must not be fetched from wherever a response says. The path and query of the URL
    /// are kept (`/u/583231?v=4`) and `s` asks for a square of `size` pixels.
    /// - Returns: the endpoint, or `nil` when `avatarURL` is not an `https` URL on
    ///   `avatars.githubusercontent.com`.
    public static func avatar(_ avatarURL: String, size: Int) -> Endpoint<Data>? {
        guard let components = URLComponents(string: avatarURL), components.scheme?.lowercased() == "https",
              components.host?.lowercased() == defaultAvatarsURL.host, components.port == nil,
              components.user == nil, components.password == nil else { return nil }
        let segments = components.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard !segments.isEmpty, !segments.contains(where: { $0 == "." || $0 == ".." }) else { return nil }
        var query = (components.queryItems ?? []).filter { $0.name != "s" && !$0.name.isEmpty }
            .map { QueryItem($0.name, $0.value) }
        query.append(QueryItem("s", String(min(max(size, 16), 460))))
        return Endpoint(path: segments, query: query, headers: [.accept: "image/png, image/*;q=0.8"]) { data, _ in data }
    }

    private static func endpoint<T: Decodable & Sendable>(_ path: [String], query: [QueryItem] = []) -> Endpoint<T> {
        Endpoint(path: path, query: query, headers: headers) { data, _ in
            try GitHub.decoder.decode(T.self, from: data)
        }
    }

    // MARK: - Coding

    /// The decoder for GitHub bodies: ISO-8601 dates (`2022-06-09T12:47:28Z`; fractional
    /// seconds are accepted too). Treat it as read-only; use ``makeDecoder()`` for a copy to change.
    public static let decoder: JSONDecoder = makeDecoder()

    /// The encoder that writes models back with GitHub's field names and date format,
    /// sorted keys and unescaped slashes. Treat it as read-only; use ``makeEncoder(prettyPrinted:)``.
    public static let encoder: JSONEncoder = makeEncoder()

    /// A new decoder configured like ``decoder``.
    public static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = parseDate(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "\"\(text)\" is not an ISO-8601 date like 2022-06-09T12:47:28Z")
            }
            return date
        }
        return decoder
    }

    /// A new encoder configured like ``encoder``, optionally pretty-printed.
    public static func makeEncoder(prettyPrinted: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = prettyPrinted
            ? [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(formatDate(date))
        }
        return encoder
    }

    /// Parses a GitHub timestamp (`2022-06-09T12:47:28Z`, with or without fractional seconds).
    public static func parseDate(_ text: String) -> Date? {
        if let date = UTCTimestamp.parse(text) { return date }
        if let date = try? Date.ISO8601FormatStyle().parse(text) { return date }
        return try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)
    }

    /// Formats a date the way GitHub does: `2022-06-09T12:47:28Z` (UTC, whole seconds).
    public static func formatDate(_ date: Date) -> String {
        UTCTimestamp.format(date) ?? Date.ISO8601FormatStyle().format(date)
    }
}

extension HTTPField.Name {
    /// `X-GitHub-Api-Version`.
    static let gitHubAPIVersion = HTTPField.Name("X-GitHub-Api-Version")!
}

/// `2022-06-09T12:47:28Z` read and written without a date formatter: the shape GitHub sends and
/// ``GitHub/encoder`` writes. Anything else (fractional seconds, offsets, out-of-range fields,
/// years before 1970) is left to `Date.ISO8601FormatStyle`.
enum UTCTimestamp {
    static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { bytes -> Date? in
            guard bytes.count == 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
                  bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
                  bytes[19] == UInt8(ascii: "Z") else { return nil }
            func number(_ start: Int, _ count: Int) -> Int? {
                var value = 0
                for index in start..<(start + count) {
                    let digit = Int(bytes[index]) - 0x30
                    guard (0...9).contains(digit) else { return nil }
                    value = value * 10 + digit
                }
                return value
            }
            guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
                  let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
                  year >= 1970, (1...12).contains(month), day >= 1, day <= CivilDate.daysIn(month: month, year: year),
                  hour < 24, minute < 60, second < 60 else { return nil }
            let seconds = CivilDate.days(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
            return Date(timeIntervalSince1970: TimeInterval(seconds))
        }
    }

    static func format(_ date: Date) -> String? {
        let interval = date.timeIntervalSince1970
        guard interval >= 0, interval < 253_402_300_800, interval == interval.rounded(.down) else { return nil }
        let total = Int(interval)
        let (year, month, day) = CivilDate.date(fromDays: total / 86_400)
        let secondOfDay = total % 86_400
        var out = [UInt8]()
        out.reserveCapacity(20)
        func append(_ value: Int, digits: Int) {
            var divisor = 1
            for _ in 1..<digits { divisor *= 10 }
            while divisor > 0 {
                out.append(UInt8(0x30 + (value / divisor) % 10))
                divisor /= 10
            }
        }
        append(year, digits: 4)
        out.append(UInt8(ascii: "-"))
        append(month, digits: 2)
        out.append(UInt8(ascii: "-"))
        append(day, digits: 2)
        out.append(UInt8(ascii: "T"))
        append(secondOfDay / 3600, digits: 2)
        out.append(UInt8(ascii: ":"))
        append(secondOfDay / 60 % 60, digits: 2)
        out.append(UInt8(ascii: ":"))
        append(secondOfDay % 60, digits: 2)
        out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }
}
