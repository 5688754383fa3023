import Foundation
import HTTPTypes

/// Keeps secrets out of anything a person or a log file can see.
public enum Redaction {
    /// Query parameter names whose values are replaced by `REDACTED` (compared case-insensitively).
    public static let secretQueryNames: Set<String> = [
        "access_token", "token", "api_key", "apikey", "key", "client_secret", "secret",
        "password", "sig", "signature", "auth", "code", "refresh_token", "id_token",
        // Presigned object-store URLs (S3, Google Cloud Storage): downloads often follow them.
        "x-amz-signature", "x-amz-credential", "x-amz-security-token", "awsaccesskeyid",
        "x-goog-signature", "x-goog-credential",
    ]

    /// Header names whose values are secrets.
    public static let secretHeaders: [HTTPField.Name] = [.authorization, .proxyAuthorization, .cookie, .setCookie]

    /// The URL as text, without user info and with secret query values replaced.
    public static func redact(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return "<unprintable URL>"
        }
        if components.user != nil || components.password != nil {
            components.user = nil
            components.password = nil
        }
        if let items = components.percentEncodedQueryItems {
            components.percentEncodedQueryItems = items.map { item in
                secretQueryNames.contains(item.name.lowercased()) && item.value != nil
                    ? URLQueryItem(name: item.name, value: "REDACTED") : item
            }
        }
        return components.string ?? "<unprintable URL>"
    }

    /// A copy of `fields` with every secret header value replaced by `REDACTED`.
    public static func redact(_ fields: HTTPFields) -> HTTPFields {
        var copy = fields
        for name in secretHeaders where copy[name] != nil {
            copy[name] = "REDACTED"
        }
        return copy
    }
}
