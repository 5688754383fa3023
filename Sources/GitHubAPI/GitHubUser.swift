import Foundation

/// A public profile from `GET /users/{username}`.
///
/// `name`, `company`, `location`, `email` and `bio` may be `null`; `blog` is often `""`.
public struct GitHubUser: Codable, Sendable, Hashable, Identifiable {
    /// The login.
    public var login: String
    /// The account ID.
    public var id: Int
    /// The avatar image URL.
    public var avatarURL: String
    /// The profile's web page.
    public var htmlURL: String
    /// `User` or `Organization`.
    public var type: String
    /// The display name.
    public var name: String?
    /// The company.
    public var company: String?
    /// The website, as typed by the user (often `""`).
    public var blog: String?
    /// The location.
    public var location: String?
    /// The public e-mail address.
    public var email: String?
    /// The biography.
    public var bio: String?
    /// The number of public repositories.
    public var publicRepos: Int
    /// The number of followers.
    public var followers: Int
    /// The number of accounts followed.
    public var following: Int
    /// When the account was created.
    public var createdAt: Date
    /// When the profile last changed.
    public var updatedAt: Date

    enum CodingKeys: String, CodingKey {
        case login, id
        case avatarURL = "avatar_url"
        case htmlURL = "html_url"
        case type, name, company, blog, location, email, bio
        case publicRepos = "public_repos"
        case followers, following
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    /// Whether the account is an organization.
    public var isOrganization: Bool { type == "Organization" }

    /// Creates a user.
    public init(
        login: String, id: Int, avatarURL: String, htmlURL: String, type: String = "User",
        name: String? = nil, company: String? = nil, blog: String? = nil, location: String? = nil,
        email: String? = nil, bio: String? = nil, publicRepos: Int = 0, followers: Int = 0,
        following: Int = 0, createdAt: Date, updatedAt: Date
    ) {
        self.login = login
        self.id = id
        self.avatarURL = avatarURL
        self.htmlURL = htmlURL
        self.type = type
        self.name = name
        self.company = company
        self.blog = blog
        self.location = location
        self.email = email
        self.bio = bio
        self.publicRepos = publicRepos
        self.followers = followers
        self.following = following
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}
