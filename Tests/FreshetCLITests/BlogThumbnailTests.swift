import Foundation
import FreshetTestSupport
import Testing

@Suite("freshet blogs: thumbnails inline", .timeLimit(.minutes(2)))
struct BlogThumbnailTests {
    /// The posts of `blogs QUERY --size N --json`: thumbnail URL and URL, in order.
    func posts(_ cli: FreshetCLI, _ query: String, size: Int) async throws -> [(thumbnail: String, url: String)] {
        let json = try await cli.run("blogs", query, "--size", "\(size)", "--json")
        let body = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let documents = try #require(body["documents"] as? [[String: Any]])
        return documents.map { ($0["thumbnail"] as? String ?? "", $0["url"] as? String ?? "") }
    }

    @Test("--images iterm2: each post's thumbnail above its rows, fetched without the key, then cached")
    func iterm2() async throws {
        try await withFreshetCLI { cli in
            let expected = try await posts(cli, "RxSwift", size: 8)
            #expect(expected.contains { $0.thumbnail.isEmpty } && expected.contains { !$0.thumbnail.isEmpty },
                    "the page has posts with and without thumbnails")
            let control = SimControl(cli.sim)
            try await control.resetLog()
            let result = try await cli.run("blogs", "RxSwift", "--size", "8", "--images", "iterm2")
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            for post in expected {
                let urlLine = try #require(lines.firstIndex { $0.hasSuffix(post.url) }, "the post \(post.url) is shown")
                let above = urlLine >= 2 ? lines[urlLine - 2] : ""
                if post.thumbnail.isEmpty {
                    #expect(!above.hasPrefix("\u{1B}"), "no picture for a post without a thumbnail")
                } else {
                    let image = try iTermImage(in: above)
                    #expect(image.bytes.prefix(8) == pngSignature && image.declaredSize == image.bytes.count)
                }
            }
            let fetched = try await control.log().filter { $0.path.hasPrefix("/thumbnails/") }
            let wanted = expected.compactMap { post -> String? in
                guard let url = URLComponents(string: post.thumbnail), let host = url.host else { return nil }
                return "/thumbnails/" + host + url.path
            }
            #expect(Set(fetched.map(\.path)) == Set(wanted))
            #expect(fetched.allSatisfy { $0.headers["authorization"] == nil }, "the image hosts get no Kakao key")

            // Again within the thumbnails' max-age: the same pictures, none fetched.
            try await control.resetLog()
            let second = try await cli.run("blogs", "RxSwift", "--size", "8", "--images", "iterm2")
            #expect(second.stdout == result.stdout)
            #expect(try await control.log().allSatisfy { !$0.path.hasPrefix("/thumbnails/") })
        }
    }

    @Test("auto on a pipe, --no-images, and --json: no escape sequence and no thumbnail request")
    func off() async throws {
        try await withFreshetCLI { cli in
            let terminalEnvironment = ["TERM_PROGRAM": "iTerm.app", "TERM": "xterm-kitty", "LC_TERMINAL": "iTerm2"]
            for arguments in [["blogs", "RxSwift"], ["blogs", "RxSwift", "--no-images"],
                              ["blogs", "RxSwift", "--json", "--images", "iterm2"]] {
                let result = try await cli.run(arguments, environment: terminalEnvironment)
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
                #expect(!result.stdout.contains("\u{1B}"), "\(arguments)")
            }
            #expect(try await SimControl(cli.sim).log().allSatisfy { !$0.path.hasPrefix("/thumbnails") })
        }
    }

    @Test("A thumbnail the server fails to send leaves its post as it is; the others are drawn (exit 0)")
    func brokenThumbnail() async throws {
        try await withFreshetCLI { cli in
            let expected = try await posts(cli, "RxSwift", size: 8).filter { !$0.thumbnail.isEmpty }
            let broken = try #require(expected.first)
            let url = try #require(URLComponents(string: broken.thumbnail))
            try await SimControl(cli.sim).fault(route: "/thumbnails/\(url.host ?? "")\(url.path)", status: 500, times: 10)
            let result = try await cli.run("blogs", "RxSwift", "--size", "8", "--images", "iterm2")
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let urlLine = try #require(lines.firstIndex { $0.hasSuffix(broken.url) })
            #expect(!lines[urlLine - 2].hasPrefix("\u{1B}"), "the broken thumbnail's post has no picture")
            #expect(lines.filter { $0.hasPrefix("\u{1B}]1337;") }.count == expected.count - 1)
        }
    }
}
