import Freshet
@testable import FreshetTransports
import HTTPTypes
import NIOHTTP1
import Testing

/// NIO's header lines as HTTP types' fields: common names spelled the usual way come as HTTP
/// types' constants (no validation and lowercasing per field), and are the same names the usual
/// way makes; every other line keeps its spelling.
@Suite("NIO header lines as fields")
struct NIOHTTPFieldsTests {
    static let common = ["Age", "Date", "ETag", "Vary", "Link", "Server", "Expires", "Location", "Connection",
                         "Set-Cookie", "Content-Type", "Cache-Control", "Last-Modified", "Accept-Ranges",
                         "Content-Length", "Content-Encoding", "X-RateLimit-Used", "Transfer-Encoding",
                         "X-RateLimit-Limit", "X-RateLimit-Reset", "X-RateLimit-Resource", "X-RateLimit-Remaining"]

    @Test("Each common spelling is its constant, equal to the name made the usual way, spelled as sent")
    func commonNames() throws {
        for spelled in Self.common {
            let constant = try #require(HTTPField.Name.common(spelled: spelled), "\(spelled)")
            let usual = try #require(HTTPField.Name(spelled))
            #expect(constant == usual && constant.rawName == spelled && constant.canonicalName == usual.canonicalName)
        }
        // Another spelling, or a name of the same length, is not taken: it is made the usual way.
        for other in ["date", "DATE", "Etag", "X-Cache", "content-type", "Cache-Contrul", "X-Ratelimit-Limit", ""] {
            #expect(HTTPField.Name.common(spelled: other) == nil, "\(other)")
        }
    }

    @Test("Lines become fields in order, as spelled, repeats kept, common or not")
    func linesAsFields() {
        let headers = HTTPHeaders([("Date", "one"), ("date", "two"), ("X-Custom", "3"), ("ETag", "\"e\""),
                                   ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")])
        let fields = HTTPFields(nioHeaders: headers)
        #expect(fields.map { "\($0.name.rawName): \($0.value)" }
                    == ["Date: one", "date: two", "X-Custom: 3", "ETag: \"e\"", "Set-Cookie: a=1", "Set-Cookie: b=2"])
        #expect(fields[values: .date] == ["one", "two"])
    }
}
