import Foundation
import Freshet

/// GitHub's error bodies: `{"message": "…", "documentation_url": "…"}`, and for a failed
/// validation an `errors` list, whose entries are appended (`Validation Failed: Search q missing`).
public struct GitHubErrorBody: ErrorBodyReader {
    /// The reader.
    public init() {}

    /// The message, with the validation errors appended.
    public func message(in body: Data) -> String? {
        guard let object = JSONMessageErrorBody.object(in: body) else { return nil }
        var message = object["message"] as? String
        if let errors = object["errors"] as? [[String: Any]], !errors.isEmpty {
            let details = errors.compactMap { error -> String? in
                if let text = error["message"] as? String { return text }
                let parts = [error["resource"], error["field"], error["code"]].compactMap { $0 as? String }
                return parts.isEmpty ? nil : parts.joined(separator: " ")
            }
            if !details.isEmpty { message = (message.map { $0 + ": " } ?? "") + details.joined(separator: "; ") }
        }
        return message
    }
}

extension ErrorBodyReader where Self == GitHubErrorBody {
    /// GitHub's error bodies (``GitHubErrorBody``).
    public static var gitHub: GitHubErrorBody { GitHubErrorBody() }
}
