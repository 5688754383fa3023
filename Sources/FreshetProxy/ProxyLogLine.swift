import Foundation
import Freshet
import FreshetCache

/// The `--log` line of `freshet proxy`: one per request, on standard error.
enum ProxyLogLine {
    /// `METHOD TARGET STATUS OUTCOME DURATIONms`, e.g. `GET /repos/a/b 200 hit 1.2ms`.
    ///
    /// `OUTCOME` is how the cache answered — `hit`, `revalidated`, `miss` (from the origin; every
    /// unsafe method) or `stale` — or `-` for an answer the proxy made itself (`400`, `429`,
    /// `502`, `504`). ` aborted` is appended when the response could not be sent to the end.
    /// Token-like query values in the target are replaced by `REDACTED`.
    static func format(method: String, target: String, status: Int, outcome: CacheOutcome?,
                              duration: Duration, aborted: Bool = false) -> String {
        let milliseconds = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        let tenths = (milliseconds * 10).rounded() / 10
        return "\(method) \(redacted(target)) \(status) \(outcome?.rawValue ?? "-") \(tenths)ms" + (aborted ? " aborted" : "")
    }

    /// `target` with secret query values replaced (see `Redaction`).
    static func redacted(_ target: String) -> String {
        guard target.contains("?"), let url = URL(string: "http://proxy" + target) else { return target }
        let text = Redaction.redact(url)
        return text.hasPrefix("http://proxy") ? String(text.dropFirst("http://proxy".count)) : target
    }
}
