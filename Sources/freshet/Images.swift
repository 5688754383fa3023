import ArgumentParser
import Foundation
import Freshet
import FreshetFeeds
import FreshetTerminal
import HTTPTypes

/// `--images` and `--no-images`, for the commands that draw pictures inline (`user`'s avatar,
/// `blogs`' thumbnails).
struct ImageOptions: ParsableArguments {
    @Flag(name: .long, help: "Never show images (same as --images never).")
    var noImages = false

    @Option(name: .long, help: "Inline images: auto (detect the terminal), kitty, iterm2, or never.")
    var images: ImageChoice = .auto

    func validate() throws {
        if noImages, images != .auto, images != .never {
            throw ValidationError("--no-images and --images \(images.rawValue) contradict each other; give one.")
        }
    }

    /// The protocol to draw with, or `nil` for no pictures: `auto` detects the terminal (off in a
    /// pipe, in tmux and screen); a forced protocol draws even to a file.
    var drawing: InlineImageProtocol? {
        switch noImages ? .never : images {
        case .never: nil
        case .kitty: .kitty
        case .iterm2: .iterm2
        case .auto: InlineImage.detect(environment: ProcessEnvironment.values, isTerminal: Terminal.stdoutIsTTY)
        }
    }
}

/// `--images`: whether and how to draw images inline.
enum ImageChoice: String, ExpressibleByArgument, CaseIterable {
    case auto, kitty, iterm2, never
}

/// Fetches pictures all at once and waits for them at most `wait` in all (a picture is
/// decoration: the text is what was asked for). Each slot is the image's bytes, or `nil` when
/// there was no request, it failed, or it did not arrive in time.
/// - Parameter offline: the page itself came stale from the store: take the pictures from the
///   store too (`max-stale, only-if-cached`), or go without (no network wait for a picture).
func fetchImages(_ requests: [(client: APIClient, endpoint: Endpoint<Data>)?], offline: Bool, wait: Duration) async -> [Data?] {
    await withTaskGroup(of: (Int, Data?)?.self) { group in
        for (index, request) in requests.enumerated() {
            guard var request else { continue }
            if offline { request.endpoint.headers[.cacheControl] = "max-stale, only-if-cached" }
            group.addTask { [request] in (index, try? await request.client.send(request.endpoint).value) }
        }
        group.addTask {
            try? await Task.sleep(for: wait)
            return nil
        }
        var images = [Data?](repeating: nil, count: requests.count)
        var pending = requests.compactMap { $0 }.count
        while pending > 0, let next = await group.next() {
            guard let (index, data) = next else { break }
            images[index] = data
            pending -= 1
        }
        group.cancelAll()
        return images
    }
}
