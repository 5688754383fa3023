import DaumSearchAPI
import Foundation
import Freshet
import FreshetFeeds
import FreshetTerminal

extension BlogFormat {
    /// A person's explanation of a failed blog search: both Kakao error shapes arrive as the
    /// API's message in ``APIError/httpStatus(code:message:url:response:)``.
    static func explain(_ error: APIError) -> String {
        switch error {
        case .httpStatus(401, let message, _, _), .httpStatus(403, let message, _, _):
            return "Kakao refused the API key\(message.map { ": \($0)" } ?? ""). Check KAKAO_REST_API_KEY."
        case .httpStatus(let code, let message?, _, _) where (400..<500).contains(code):
            return "the Kakao API refused the search (HTTP \(code)): \(message)."
        default:
            return freshet.explain(error, subject: "the blog search")
        }
    }
}

/// Keeps the Kakao key out of anything printed, even if an error message were to echo it.
struct BlogSecret {
    let key: String?

    func redact(_ text: String) -> String {
        guard let key, key.count >= 4 else { return text }
        return text.replacingOccurrences(of: key, with: "REDACTED")
    }
}

/// The interactive blog list: the same screen and pipeline as `repos`; Tab cycles the order
/// over what arrived (server order, title, datetime) without a new request.
struct BlogSearchContent: SearchScreenContent {
    var order: BlogSortOrder
    let fetchedWith: BlogSort
    let secret: BlogSecret

    var prompt: String { "blogs" }

    var keyHelp: String { "Tab sort (\(order.rawValue))" }

    func count(_ results: BlogSearchResult) -> Int { results.documents.count }

    func rows(_ results: BlogSearchResult, width: Int, color: Bool) -> [String] {
        let posts = order.apply(to: results.documents)
        let blogWidth = BlogLayout.blogWidth(posts)
        return posts.map { BlogLayout.row($0, blogWidth: blogWidth, width: width, bold: color) }
    }

    func summary(_ results: BlogSearchResult, query: String) -> String {
        results.documents.isEmpty ? "no posts found for “\(query)”" : BlogFormat.summary(results, query: query, order: order)
    }

    func explain(_ error: APIError) -> String {
        secret.redact(TextLayout.singleLine(BlogFormat.explain(error)))
    }

    mutating func handle(_ key: Key) -> Bool {
        guard key == .tab else { return false }
        order = order.next(fetchedWith: fetchedWith)
        return true
    }
}
