import ArgumentParser
import DaumSearchAPI
import Foundation
import Freshet
import FreshetFeeds
import FreshetTerminal
import HTTPTypes

struct BlogsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blogs", _superCommandName: "freshet",
        abstract: "Daum blog search (Kakao API); without a query on a terminal, search as you type.",
        discussion: """
            Needs a Kakao REST API key in KAKAO_REST_API_KEY (sent as `Authorization: KakaoAK …`; \
            it never appears in output). Without it the command exits 1 naming the variable.

            Orders: accuracy and recency are asked of the server; title (ascending) and datetime \
            (newest first) sort what arrived, on the client. --all follows pages until the last \
            (at most page 50, the API's limit).

            On a terminal that shows inline images (as for `freshet user`'s avatar: kitty, Ghostty, \
            iTerm2, WezTerm; off in a pipe, in tmux and screen, and with --json) each post's \
            thumbnail is drawn above it, fetched through the HTTP cache without the Kakao key. \
            --images kitty|iterm2 forces it. A thumbnail that does not load leaves its post as it is.

            Without QUERY on a terminal: interactive search (the same search-as-you-type pipeline \
            as `freshet repos`); Tab cycles the order without a new request, Enter prints the \
            selected post, Esc or Ctrl-C quits. Without QUERY and without a terminal: one query \
            per line from standard input (with --json: one JSON document per line).
            """)

    @Argument(help: "The search query.")
    var query: String?

    @Option(help: "Order: accuracy, recency (server side), title or datetime (client side).")
    var sort: BlogSortOption = .accuracy

    @Option(help: "The page to show (1–50).")
    var page = 1

    @Option(help: "Posts per page (1–50).")
    var size = 10

    @Flag(help: "Follow the pages (from --page) until the last one, at most page 50.")
    var all = false

    @Flag(help: "Show each post's snippet too.")
    var contents = false

    @Option(help: ArgumentHelp("Interactive mode: quiet time before a query is sent.", valueName: "ms"))
    var debounce = 300

    @OptionGroup var images: ImageOptions

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard DaumSearch.pageRange.contains(page) else { throw ValidationError("--page must be between 1 and 50.") }
        guard DaumSearch.sizeRange.contains(size) else { throw ValidationError("--size must be between 1 and 50.") }
        guard (0...10_000).contains(debounce) else { throw ValidationError("--debounce must be between 0 and 10000 ms.") }
    }

    func run() async throws {
        let context = try await common.makeContext()
        let client: APIClient
        do {
            client = try context.kakao()
        } catch {
            printError("error: \(error.description)")
            throw ExitStatus.failure
        }
        let secret = BlogSecret(key: context.configuration.kakaoAPIKey)
        if let query {
            do {
                let response = try await fetch(query, client: client)
                let pictures = await thumbnails(response.value.documents, context: context, offline: response.cache == .stale)
                show(response.value, query: query, thumbnails: pictures)
                if response.cache == .stale {
                    try finishStale(reason: secret.redact(response.staleReason?.description ?? "the server could not be used"),
                                    allowStale: common.allowStale)
                }
            } catch let error as APIError {
                printError("error: " + secret.redact(BlogFormat.explain(error)))
                throw error == .cancelled ? ExitStatus.failure : ExitStatus.nothingShown
            }
        } else if TerminalUI.isInteractive, !common.json {
            try await interactive(client: client, secret: secret)
        } else {
            try await readQueries(client: client, secret: secret)
        }
    }

    private func fetch(_ query: String, client: APIClient) async throws(APIError) -> Response<BlogSearchResult> {
        if all {
            let progress = Terminal.stderrIsTTY && !common.json
            return try await BlogSearch.allPages(
                client: client, query: query, order: sort.order, size: size, startPage: page
            ) { page, count in
                if progress { FileHandle.standardError.write(Data((ANSI.clearLine + "page \(page): \(count) posts…").utf8)) }
            }
        }
        return try await BlogSearch.page(client: client, query: query, order: sort.order, page: page, size: size)
    }

    /// Prints the page; with `thumbnails` (one escape sequence or `nil` per post), each post's
    /// picture above its rows.
    private func show(_ result: BlogSearchResult, query: String, thumbnails: [String?] = []) {
        if all, Terminal.stderrIsTTY, !common.json { FileHandle.standardError.write(Data(ANSI.clearLine.utf8)) }
        if common.json {
            try? printJSON(result.decodedForJSON, encoder: DaumSearch.encoder)
        } else if result.documents.isEmpty {
            output("no posts found for “\(query)”.")
        } else {
            var lines = [BlogFormat.summary(result, query: query, order: sort.order)]
            let posts = BlogLayout.postLines(result.documents, width: Terminal.width, bold: Terminal.colorEnabled, contents: contents)
            for (index, post) in posts.enumerated() {
                if index < thumbnails.count, let picture = thumbnails[index] { lines.append(picture) }
                lines += post
            }
            output(lines.joined(separator: "\n"))
        }
    }

    /// Each post's thumbnail as an escape sequence, when pictures are drawn (see `--images`); a
    /// thumbnail that is missing, fails or comes late is `nil` and its post is shown without one.
    /// - Parameter offline: the page came stale from the store: thumbnails from the store only.
    private func thumbnails(_ posts: [BlogPost], context: AppContext, offline: Bool) async -> [String?] {
        guard !common.json, let proto = images.drawing else { return [] }
        let requests = posts.map { post -> (client: APIClient, endpoint: Endpoint<Data>)? in
            DaumSearch.thumbnail(post.thumbnail).map { context.thumbnail($0) }
        }
        return await fetchImages(requests, offline: offline, wait: context.configuration.avatarWait).map { image in
            image.flatMap { InlineImage.escapeSequence(for: $0, using: proto, columns: 6, rows: 3) }
        }
    }

    /// One query per line of standard input; each one's posts, in order.
    private func readQueries(client: APIClient, secret: BlogSecret) async throws {
        try await SearchInput.runQueries(
            allowStale: common.allowStale, json: common.json,
            search: { query throws(APIError) in try await fetch(query, client: client) },
            show: { show($0, query: $1) },
            describe: { error, query in "“\(query)”: " + secret.redact(BlogFormat.explain(error)) },
            redact: secret.redact)
    }

    private func interactive(client: APIClient, secret: BlogSecret) async throws {
        let fetchedWith = sort.order.serverSort
        let session = SearchSession.blogs(client: client, sort: fetchedWith, size: size, debounce: .milliseconds(debounce))
        let terminal: TerminalUI
        do {
            terminal = try TerminalUI.start()
        } catch {
            printError("error: \(error)")
            throw ExitStatus.failure
        }
        var screen = SearchScreen(
            content: BlogSearchContent(order: sort.order, fetchedWith: fetchedWith, secret: secret),
            session: session, color: Terminal.colorEnabled)
        let outcome = await screen.run(on: terminal)
        terminal.restore()
        guard case .selected(let results, let index) = outcome else { return }
        let post = screen.content.order.apply(to: results.documents)[index]
        output(BlogFormat.details(post, color: Terminal.colorEnabled).joined(separator: "\n"))
    }
}

/// `--sort` values.
enum BlogSortOption: String, ExpressibleByArgument, CaseIterable {
    case accuracy, recency, title, datetime

    var order: BlogSortOrder { BlogSortOrder(rawValue: rawValue) ?? .accuracy }
}
