import Foundation
import GitHubAPI

/// One event of the feed as its row shows it: what ``FeedStore`` keeps in columns, so showing a
/// stored feed reads a few strings per event and decodes no JSON.
public struct FeedEntry: Sendable, Hashable, Identifiable {
    /// The event's ID.
    public var id: String
    /// The event type (a row's colour follows it).
    public var type: GitHubEvent.Kind
    /// Who caused it: the actor's display login, else the login.
    public var actor: String
    /// The repository, `owner/name`.
    public var repository: String
    /// What happened (`GitHubEvent.activity`).
    public var activity: String
    /// When it happened.
    public var createdAt: Date

    /// The row of `event`.
    public init(_ event: GitHubEvent) {
        self.init(id: event.id, type: event.type, actor: event.actor.displayLogin ?? event.actor.login,
                  repository: event.repo.name, activity: event.activity, createdAt: event.createdAt)
    }

    /// An entry from its fields.
    public init(id: String, type: GitHubEvent.Kind, actor: String, repository: String, activity: String, createdAt: Date) {
        self.id = id
        self.type = type
        self.actor = actor
        self.repository = repository
        self.activity = activity
        self.createdAt = createdAt
    }
}
