import Foundation

/// How an API explains a failure in the body of its error response.
///
/// ``APIClient`` and ``RateLimitMiddleware`` ask one for the message they put in
/// ``APIError/httpStatus(code:message:url:response:)`` and ``APIError/rateLimited(resetAt:message:url:response:)``.
/// The core knows no service: the default, ``JSONMessageErrorBody``, reads the common
/// `{"message": "…"}`; service modules bring their own (GitHubAPI's `.gitHub`, which adds the
/// validation `errors`; DaumSearchAPI's `.kakao`, for both of Kakao's shapes).
public protocol ErrorBodyReader: Sendable {
    /// The API's own explanation in `body`, if it has one.
    func message(in body: Data) -> String?
}

/// The common shape of an error body: a JSON object with a string `message` field.
public struct JSONMessageErrorBody: ErrorBodyReader {
    /// The reader.
    public init() {}

    /// The `message` of a JSON object, if `body` is one and has it.
    public func message(in body: Data) -> String? {
        Self.object(in: body)?["message"] as? String
    }

    /// `body` as a JSON object (its first 64 KiB), or `nil`: for readers of richer shapes.
    public static func object(in body: Data) -> [String: Any]? {
        guard !body.isEmpty else { return nil }
        return try? JSONSerialization.jsonObject(with: body.prefix(64 * 1024)) as? [String: Any]
    }
}

extension ErrorBodyReader where Self == JSONMessageErrorBody {
    /// `{"message": "…"}`: the default.
    public static var jsonMessage: JSONMessageErrorBody { JSONMessageErrorBody() }
}
