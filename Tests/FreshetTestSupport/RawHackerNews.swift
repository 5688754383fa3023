import Foundation
import Freshet
import FreshetSimulator

/// Reads the simulator's Hacker News data raw (no models), to check what the apps show against
/// what the server really serves.
public struct RawHackerNews: Sendable {
    /// A plain client on the simulator.
    public let client: APIClient

    /// Reads from `sim`.
    public init(_ sim: RunningSimulator) {
        client = APIClient(baseURL: sim.baseURL, transport: liveTransport)
    }

    struct NotAList: Error {}

    /// The ids of `/v0/<name>stories.json`.
    public func list(_ name: String) async throws -> [Int] {
        let data = try await client.value(Endpoint<Data>.raw("v0", "\(name)stories.json"))
        guard let ids = try JSONSerialization.jsonObject(with: data) as? [Int] else { throw NotAList() }
        return ids
    }

    /// The item as a JSON object, or `nil` for the literal `null`.
    public func item(_ id: Int) async throws -> [String: Any]? {
        let data = try await client.value(Endpoint<Data>.raw("v0", "item", "\(id).json"))
        return try JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed) as? [String: Any]
    }

    /// Whether the item should be skipped: null, deleted or dead.
    public func isSkipped(_ id: Int) async throws -> Bool {
        guard let object = try await item(id) else { return true }
        return object["deleted"] as? Bool == true || object["dead"] as? Bool == true
    }

    /// Whether the item should be shown (not null, deleted or dead).
    public func isShown(_ id: Int) async throws -> Bool {
        try await !isSkipped(id)
    }

    /// The replies below `kids`, depth first, as (id, depth): visible ones, and deleted or dead
    /// ones with a visible reply below them.
    public func thread(_ kids: [Int], depth: Int = 0) async throws -> [(id: Int, depth: Int)] {
        var out: [(id: Int, depth: Int)] = []
        for kid in kids {
            guard let object = try await item(kid) else { continue }
            let below = try await thread(object["kids"] as? [Int] ?? [], depth: depth + 1)
            let visible = object["deleted"] as? Bool != true && object["dead"] as? Bool != true
            if visible || !below.isEmpty {
                out.append((kid, depth))
                out += below
            }
        }
        return out
    }
}
