import Foundation
import Freshet
import FreshetTestSupport
import Testing

/// Partial content and `HEAD` through `freshet proxy`: what curl (or any client) gets from the
/// proxy's store without an origin request.
@Suite("freshet proxy: ranges and HEAD", .timeLimit(.minutes(2)))
struct ProxyRangeTests {
    @Test("A Range request is answered from the stored complete response: 206, Content-Range, X-Cache HIT, no origin request")
    func rangeFromStore() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            try await control.script("bytes", headers: [("Cache-Control", "public, max-age=600")], body: "0123456789A")
            try await withProxy(cli) { _, base in
                #expect(try await curl([base + "/scripted/bytes"]).header("X-Cache") == "MISS")
                let part = try await curl(["-H", "Range: bytes=2-4", base + "/scripted/bytes"])
                #expect(part.status == 206)
                #expect(part.body == "234")
                #expect(part.header("Content-Range") == "bytes 2-4/11")
                #expect(part.header("Content-Length") == "3")
                #expect(part.header("X-Cache") == "HIT")
                #expect(part.header("Age") != nil)
                let suffix = try await curl(["-H", "Range: bytes=-3", base + "/scripted/bytes"])
                #expect(suffix.body == "89A")
                #expect(try await entries(control, "/scripted/bytes").count == 1)
            }
        }
    }

    @Test("A HEAD answered 200 with the stored validators freshens the stored response for the next GET")
    func headFreshens() async throws {
        try await withFreshetCLI { cli in
            let control = SimControl(cli.sim)
            try await control.script("head", headers: [("Cache-Control", "max-age=0"), ("ETag", #""h1""#), ("X-A", "1")],
                                     body: "stored")
            try await withProxy(cli) { _, base in
                #expect(try await curl([base + "/scripted/head"]).header("X-Cache") == "MISS")
                try await control.script("head", headers: [("Cache-Control", "max-age=600"), ("ETag", #""h1""#), ("X-A", "2")],
                                         body: "stored")
                let head = try await curl(["-I", base + "/scripted/head"])
                #expect(head.status == 200)
                #expect(head.header("X-A") == "2")
                let get = try await curl([base + "/scripted/head"])
                #expect(get.header("X-Cache") == "HIT")
                #expect(get.body == "stored")
                #expect(get.header("X-A") == "2")
                #expect(try await entries(control, "/scripted/head").map(\.method) == ["GET", "HEAD"])
            }
        }
    }
}
