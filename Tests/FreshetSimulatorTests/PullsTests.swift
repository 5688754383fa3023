import Foundation
@testable import FreshetSimulator
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// `GET /repos/{owner}/{repo}/pulls`: GitHub's list of open pull requests, through the same door
/// as the other GitHub routes (ETag, rate limit, `304`, `Link`).
@Suite("FreshetSimulator: open pull requests")
struct PullsTests {
    @Test("Pulls: open pull requests newest first, per_page/page with Link, an ETag per token, a free 304, 404 for an unknown repository")
    func pullsArePagedAndConditional() async throws {
        let simulator = Simulator(configuration: SimulatorConfiguration(hnStoryCount: 1))
        let app = Application(responder: simulator.makeResponder())
        try await app.test(.router) { client in
            let token: HTTPFields = [.authorization: "Bearer tokenA"]
            let remaining = HTTPField.Name("X-RateLimit-Remaining")!
            let linkField = HTTPField.Name("Link")!
            let first = try await client.execute(uri: "/repos/vapor/vapor/pulls?per_page=2", method: .get, headers: token)
            #expect(first.status == .ok)
            #expect(first.headers[.cacheControl] == "private, max-age=60, s-maxage=60")
            #expect(first.headers[remaining] == "4999")
            let link = try #require(first.headers[linkField])
            #expect(link.contains("/repos/vapor/vapor/pulls?per_page=2&page=2>; rel=\"next\""))
            #expect(link.contains("rel=\"last\""))
            let pulls = try #require(try JSONSerialization.jsonObject(with: Data(first.body.readableBytesView)) as? [[String: Any]])
            #expect(pulls.count == 2)
            for pull in pulls {
                #expect(pull["state"] as? String == "open")
                #expect((pull["title"] as? String)?.isEmpty == false)
                #expect(((pull["user"] as? [String: Any])?["login"] as? String)?.isEmpty == false)
                let number = try #require(pull["number"] as? Int)
                #expect(pull["html_url"] as? String == "https://github.com/vapor/vapor/pull/\(number)")
            }
            let created = pulls.compactMap { $0["created_at"] as? String }
            #expect(created.count == 2 && created[0] > created[1], "newest first")

            // Page 2 goes on where page 1 stopped; the same list every time.
            let page2 = try await client.execute(uri: "/repos/vapor/vapor/pulls?per_page=2&page=2", method: .get, headers: token)
            let next = try #require(try JSONSerialization.jsonObject(with: Data(page2.body.readableBytesView)) as? [[String: Any]])
            #expect((next.first?["number"] as? Int ?? .max) < (pulls.last?["number"] as? Int ?? 0))
            #expect(page2.headers[linkField]?.contains("rel=\"prev\"") == true)
            let past = try await client.execute(uri: "/repos/vapor/vapor/pulls?page=99", method: .get, headers: token)
            #expect(past.status == .ok)
            #expect(String(buffer: past.body) == "[]")

            // The ETag revalidates for free; another token has its own.
            let etag = try #require(first.headers[.eTag])
            var conditional = token
            conditional[.ifNoneMatch] = etag
            let notModified = try await client.execute(uri: "/repos/vapor/vapor/pulls?per_page=2", method: .get, headers: conditional)
            #expect(notModified.status == .notModified)
            #expect(notModified.headers[remaining] == "4997", "three 200s spent, the 304 refunded")
            let other = try await client.execute(uri: "/repos/vapor/vapor/pulls?per_page=2", method: .get,
                                                 headers: [.authorization: "Bearer tokenB", .ifNoneMatch: etag])
            #expect(other.status == .ok)
            #expect(other.body == first.body)

            let unknown = try await client.execute(uri: "/repos/nobody/nothing/pulls", method: .get)
            #expect(unknown.status == .notFound)
            #expect(Simulator.routes.contains("GET /repos/{owner}/{repo}/pulls?per_page=&page= (the open pull requests)"))
        }
    }
}
