import Foundation
@testable import FreshetCache
import HTTPTypes
import Testing

/// The primary key is what rows on disk are found by: a store written by an earlier build must
/// still be read, so its text is pinned here, digest for digest.
@Suite("Cache keys: the primary key's format on disk")
struct CacheKeyTests {
    static func request(_ fields: [(HTTPField.Name, String)]) -> HTTPRequest {
        var request = HTTPRequest(method: .get, scheme: "https", authority: "example.com", path: "/")
        for (name, value) in fields { request.headerFields.append(HTTPField(name: name, value: value)) }
        return request
    }

    @Test("SHA-256 of \"GET <url>\\0\", then in a private cache the credentials' lines joined by \\n, \\0 between")
    func primaryKeyText() throws {
        let item = try #require(URL(string: "https://example.com/v0/item/1.json"))
        let user = try #require(URL(string: "https://example.com/user?page=2"))
        // sha256("GET https://example.com/v0/item/1.json\0")
        #expect(CacheKey.primary(url: item, request: Self.request([]), mode: .shared)
            == "c3c969440b26ed2d07fbae259c64ec2d5d3d7402a99fb69a7cc6b6ae6a088b1d")
        // sha256("GET https://example.com/v0/item/1.json\0\0")
        #expect(CacheKey.primary(url: item, request: Self.request([]), mode: .private)
            == "b7fcbd13e97b538a25368311bcfa8b24893f38a50a5fef43cfb9a3dca8455f17")
        // sha256("GET https://example.com/user?page=2\0token one\ntoken two\0a=1\nb=2")
        let both = Self.request([(.authorization, "token one"), (.cookie, "a=1"), (.authorization, "token two"), (.cookie, "b=2")])
        #expect(CacheKey.primary(url: user, request: both, mode: .private)
            == "1e2954ff79d49d627d5006ad60f06a5003e8ca66f466d84e663af35588fd6b1a")
        // sha256("GET https://example.com/user?page=2\0\0a=1")
        #expect(CacheKey.primary(url: user, request: Self.request([(.cookie, "a=1")]), mode: .private)
            == "ce80c801726f164643c87b2bb6de7eb4d9f16896472d755c2749d6fd3b44499d")
        // The credential alone, as the proxy labels it: sha256("token one\ntoken two\0a=1\nb=2").
        #expect(RequestCredential(both.headerFields)?.hash
            == "2d8ebb471aafee94b8bb3e4d6245a3870fcafc99174a02a3c4c6e27a6f66f155")
        // A shared cache keys on the URL alone, credentials or not.
        #expect(CacheKey.primary(url: item, request: both, mode: .shared)
            == CacheKey.primary(url: item, request: Self.request([]), mode: .shared))
    }
}
