import Foundation
import Freshet

/// A repository's `OWNER/NAME`, validated the way GitHub names are: the owner is 1–39 letters,
/// digits or hyphens; the name is 1–100 letters, digits, `.`, `_` or `-`, and not `.` or `..`.
public struct RepositoryName: Sendable, Hashable, CustomStringConvertible, Codable {
    /// The owner (user or organization).
    public var owner: String
    /// The repository's name.
    public var name: String

    /// Parses `OWNER/NAME`; `nil` when it is not a valid repository name.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let owner = String(parts[0])
        let name = String(parts[1])
        let ownerOK = (1...39).contains(owner.count)
            && owner.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-" }
        let nameOK = (1...100).contains(name.count) && name != "." && name != ".."
            && name.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0)
            }
        guard ownerOK, nameOK else { return nil }
        self.owner = owner
        self.name = name
    }

    /// `OWNER/NAME`.
    public var description: String { "\(owner)/\(name)" }
}

extension GitHub {
    /// `GET /repos/{owner}/{repo}/events` for a parsed repository name.
    public static func repoEvents(_ repository: RepositoryName, perPage: Int = 30, page: Int? = nil) -> Endpoint<[GitHubEvent]> {
        repoEvents(owner: repository.owner, name: repository.name, perPage: perPage, page: page)
    }
}
