import Foundation
import Freshet
import FreshetCache
import HTTPTypes

/// One request as the proxy answered it: what `freshet proxy --log` prints, as a line of text
/// (``text``) or a JSON object (``json``). It holds no secret: the path has token-like query
/// values replaced (`Redaction`), and the credential is known by its label alone
/// (`RequestCredential.label`, 12 hex digits of a SHA-256).
public struct ProxyLogEntry: Sendable, Equatable {
    /// When the answer was sent (or given up).
    public var time: Date
    /// The request's method, as sent.
    public var method: String
    /// The request target with secret query values replaced by `REDACTED`.
    public var path: String
    /// The status sent to the client.
    public var status: Int
    /// How the cache answered; `nil` for an answer the proxy made itself (`400`, `429`, `502`, `504`).
    public var outcome: CacheOutcome?
    /// From the request's head to the end of the answer.
    public var duration: Duration
    /// The label of the request's credential (`Authorization`, `Cookie`); `nil` without one.
    public var credential: String?
    /// The origin's `X-RateLimit-Remaining` in the answer; `nil` when it has none or the answer
    /// came from the store alone (a `hit` or `stale` answer carries the count of the time it was stored).
    public var rateLimitRemaining: Int?
    /// The answer could not be sent to the end (the origin failed mid-body or the client left).
    public var aborted: Bool

    /// An entry for `request` (the credential hashed, the target redacted here).
    init(_ request: HTTPRequest, status: Int, outcome: CacheOutcome?, duration: Duration,
         answer: HTTPFields? = nil, aborted: Bool = false) {
        time = Date()
        method = request.method.rawValue
        path = ProxyLogLine.redacted(request.path ?? "")
        self.status = status
        self.outcome = outcome
        self.duration = duration
        credential = RequestCredential(request.headerFields)?.label
        rateLimitRemaining = outcome == .hit || outcome == .stale
            ? nil : answer?[.xRateLimitRemaining].flatMap { Int($0.trimmingOWS()) }
        self.aborted = aborted
    }

    /// Today's `--log` line: `GET /repos/a/b 200 hit 1.2ms` (see ``ProxyServer/log``).
    public var text: String {
        ProxyLogLine.format(method: method, target: path, status: status, outcome: outcome, duration: duration,
                            aborted: aborted, redact: false)
    }

    /// One JSON object on one line, its keys in this order: `time` (ISO 8601, UTC, milliseconds),
    /// `method`, `path`, `status`, `cache` (outcome or `null`), `duration_ms`, `credential` (label
    /// or `null`), `ratelimit_remaining` (number or `null`), and `aborted` (only when `true`).
    public var json: String {
        var text = "{\"time\":\"\(time.formatted(Self.iso8601))\",\"method\":\(Self.quoted(method)),"
        text += "\"path\":\(Self.quoted(path)),\"status\":\(status),"
        text += "\"cache\":\(outcome.map { Self.quoted($0.rawValue) } ?? "null"),"
        text += "\"duration_ms\":\(ProxyLogLine.milliseconds(duration, places: 3)),"
        text += "\"credential\":\(credential.map(Self.quoted) ?? "null"),"
        text += "\"ratelimit_remaining\":\(rateLimitRemaining.map(String.init) ?? "null")"
        return text + (aborted ? ",\"aborted\":true}" : "}")
    }

    private static let iso8601 = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// `value` as a JSON string.
    static func quoted(_ value: String) -> String {
        var text = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        return text + "\""
    }
}

/// The `--log` line of `freshet proxy`: one per request, on standard error.
enum ProxyLogLine {
    /// `METHOD TARGET STATUS OUTCOME DURATIONms`, e.g. `GET /repos/a/b 200 hit 1.2ms`.
    ///
    /// `OUTCOME` is how the cache answered — `hit`, `revalidated`, `miss` (from the origin; every
    /// unsafe method) or `stale` — or `-` for an answer the proxy made itself (`400`, `429`,
    /// `502`, `504`). ` aborted` is appended when the response could not be sent to the end.
    /// Token-like query values in the target are replaced by `REDACTED` (unless `redact` is
    /// false: the target is redacted already).
    static func format(method: String, target: String, status: Int, outcome: CacheOutcome?,
                       duration: Duration, aborted: Bool = false, redact: Bool = true) -> String {
        let shown = redact ? redacted(target) : target
        return "\(method) \(shown) \(status) \(outcome?.rawValue ?? "-") \(milliseconds(duration, places: 1))ms"
            + (aborted ? " aborted" : "")
    }

    /// `duration` in milliseconds, rounded to `places` decimals.
    static func milliseconds(_ duration: Duration, places: Int) -> Double {
        let milliseconds = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        let scale = places == 1 ? 10.0 : 1000.0
        return (milliseconds * scale).rounded() / scale
    }

    /// `target` with secret query values replaced (see `Redaction`).
    static func redacted(_ target: String) -> String {
        guard target.utf8.contains(UInt8(ascii: "?")), let url = URL(string: "http://proxy" + target) else { return target }
        let text = Redaction.redact(url)
        return text.hasPrefix("http://proxy") ? String(text.dropFirst("http://proxy".count)) : target
    }
}
