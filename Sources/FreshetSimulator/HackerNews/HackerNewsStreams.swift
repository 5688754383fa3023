import Foundation
import Hummingbird
import Synchronization

/// Firebase's streaming REST interface for the Hacker News paths: a `GET` with
/// `Accept: text/event-stream` is sent on with a `307` to the streaming server (here the same
/// origin, with `ns=hacker-news` as Firebase adds it), which answers with Server-Sent Events:
///
/// - `put` with `{"path": "/", "data": <the whole value>}` first, on every connection;
/// - when a list changes (`POST /_sim/hn/lists/{list}`): `put` with `{"path": "/<index>",
///   "data": <id or null>}` for one changed position, else `patch` with `{"path": "/", "data":
///   {"<index>": <id or null>, …}}` naming the changed positions (`null`: gone);
/// - `keep-alive` with `data: null` every ``SimulatorConfiguration/streamKeepAlive`` (30 s).
///
/// `POST /_sim/hn/streams/drop` ends every open stream abruptly, and
/// `POST /_sim/hn/streams/stall` makes them fall silent (a dead connection).
extension Simulator {
    /// Whether `request` asks for an event stream, and this simulator streams.
    func wantsEventStream(_ request: Request) -> Bool {
        configuration.hnStreams && request.headers[values: .accept].contains { $0.lowercased().contains("text/event-stream") }
    }

    /// The `307` to the streaming server, or the stream itself once there.
    func hackerNewsStream(_ request: Request, value: @escaping @Sendable () -> String, list: String?) -> Response {
        let query = QueryItems(request.uri.query)
        guard query["ns"] != nil else {
            let path = request.uri.path
            let rest = request.uri.query.map { "&" + $0 } ?? ""
            var headers = HackerNewsController.headers
            headers[.location] = "\(path)?ns=hacker-news\(rest)"
            return Response(status: .temporaryRedirect, headers: headers)
        }
        var headers = HackerNewsController.headers
        headers[.contentType] = "text/event-stream; charset=utf-8"
        let keepAlive = configuration.streamKeepAlive
        let body = ResponseBody { [self] writer in
            let (drops, start) = state.withLock { state in
                state.hnStreamsOpen += 1
                return (state.hnStreamDrops, state.hnListVersion)
            }
            defer { state.withLock { $0.hnStreamsOpen -= 1 } }
            var version = start
            var shown = list.map(hackerNewsList) ?? []
            try await writer.write(Self.firebaseEvent("put", #"{"path":"/","data":\#(value())}"#))
            var lastWrite = ContinuousClock.now
            while true {
                let now = state.withLock { (version: $0.hnListVersion, drops: $0.hnStreamDrops, stalled: $0.hnStreamsStalled,
                                             down: $0.shuttingDown) }
                if now.down || now.drops != drops { throw StreamAborted() }
                if !now.stalled, let list, now.version != version {
                    version = now.version
                    let current = hackerNewsList(list)
                    if let (type, path, data) = Self.listChange(from: shown, to: current) {
                        try await writer.write(Self.firebaseEvent(type, #"{"path":"\#(path)","data":\#(data)}"#))
                        lastWrite = .now
                    }
                    shown = current
                }
                if !now.stalled, ContinuousClock.now - lastWrite >= keepAlive {
                    try await writer.write(Self.firebaseEvent("keep-alive", "null"))
                    lastWrite = .now
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    /// The ids of list `name` now: as changed by the control endpoint, else the world's.
    func hackerNewsList(_ name: String) -> [Int] {
        state.withLock { $0.hnLists[name] } ?? hackerNews.lists[name] ?? []
    }

    /// The list `name` as JSON, as changed by the control endpoint.
    func hackerNewsListJSON(_ name: String) -> String? {
        if let changed = state.withLock({ $0.hnLists[name] }) { return JSON.array(changed.map(JSON.int)).rendered }
        return hackerNews.listJSON(name)
    }

    /// Replaces list `name` (`POST /_sim/hn/lists/{list}`); open streams send the change as a
    /// `patch`. `false` for a name that is not a list.
    public func setHackerNewsList(_ name: String, ids: [Int]) -> Bool {
        guard hackerNews.lists[name] != nil else { return false }
        state.withLock { state in
            state.hnLists[name] = ids
            state.hnListVersion += 1
        }
        return true
    }

    /// Moves the story lists on by one step, as the front page does over a few minutes: the
    /// newest story not yet on the top list enters it at rank `step % 5 + 1`, and the last story
    /// of the best list moves to the top of it. Deterministic (`step`, counted per simulator).
    /// The built-in demo calls it every 20 s while `hn --live` runs.
    public func advanceHackerNews() {
        let top = hackerNewsList("topstories")
        let best = hackerNewsList("beststories")
        let step = state.withLock { $0.hnListVersion }
        if let newcomer = hackerNewsList("newstories").first(where: { !top.contains($0) }) {
            var moved = top
            moved.insert(newcomer, at: min(step % 5, moved.count))
            _ = setHackerNewsList("topstories", ids: Array(moved.prefix(500)))
        }
        if let last = best.last {
            _ = setHackerNewsList("beststories", ids: [last] + best.dropLast())
        }
    }

    /// Ends every open Hacker News event stream abruptly (`POST /_sim/hn/streams/drop`).
    public func dropHackerNewsStreams() {
        state.withLock { $0.hnStreamDrops += 1 }
    }

    /// Makes open event streams fall silent, or speak again (`POST /_sim/hn/streams/stall`).
    public func stallHackerNewsStreams(_ stalled: Bool) {
        state.withLock { $0.hnStreamsStalled = stalled }
    }

    /// How many Hacker News event streams are open (`GET /_sim/hn/streams`).
    public func openHackerNewsStreams() -> Int {
        state.withLock { $0.hnStreamsOpen }
    }

    /// One Server-Sent Event as Firebase writes it.
    static func firebaseEvent(_ type: String, _ data: String) -> ByteBuffer {
        ByteBuffer(string: "event: \(type)\ndata: \(data)\n\n")
    }

    /// The event from list `old` to `new`, as Firebase sends it: one position that changed is a
    /// `put` at `/<index>` of its id (`null` when it is gone), several a `patch` at `/` naming each
    /// one; `nil` when nothing changed.
    static func listChange(from old: [Int], to new: [Int]) -> (type: String, path: String, data: String)? {
        var fields: [(String, JSON)] = []
        for index in 0..<max(old.count, new.count) {
            let before = index < old.count ? old[index] : nil
            let after = index < new.count ? new[index] : nil
            if before != after { fields.append((String(index), after.map(JSON.int) ?? .null)) }
        }
        if fields.count == 1, let (index, value) = fields.first { return ("put", "/\(index)", value.rendered) }
        return fields.isEmpty ? nil : ("patch", "/", JSON.object(fields).rendered)
    }
}
