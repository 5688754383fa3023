import Foundation
import Freshet
import HTTPTypes
import OpenAPIRuntime

/// What the client is sent for one request.
public struct ProxyResponse: Sendable {
    /// Status and header fields, ready to send.
    public var head: HTTPResponse
    /// The body to stream to the client; `nil` when the status allows none (`1xx`, `204`, `304`)
    /// or the method was `HEAD`.
    public var body: HTTPBody?
    /// How the cache answered; `nil` when the proxy answered itself (`400`, `429`, `502`, `504`).
    /// A response the cache did not answer from its store (any unsafe method) counts as `miss`.
    public var outcome: CacheOutcome?
    /// A body that must not be sent (e.g. the empty body of a `304`); read and drop it.
    public var discarded: HTTPBody?
    /// The whole body, when it is already in memory (an answer from the store): a server can
    /// then write head and body at once instead of streaming ``body``.
    public var complete: Data? = nil
}

/// The header rules of the proxy.
enum ProxyHeaders {
    /// The `Via` entry the proxy adds to requests and responses.
    static let via = "1.1 freshet"

    /// The `X-Cache` value of `outcome`: its name in capitals.
    static func xCache(_ outcome: CacheOutcome) -> String {
        switch outcome {
        case .hit: return "HIT"
        case .stale: return "STALE"
        case .revalidated: return "REVALIDATED"
        case .miss: return "MISS"
        }
    }

    /// The proxy's member of `Cache-Status` (RFC 9211) for how the cache answered: `hit`, a hit
    /// served stale, a `304` revalidation, or a miss forwarded to the origin.
    static func cacheStatus(_ outcome: CacheOutcome) -> String {
        switch outcome {
        case .hit: return "freshet; hit"
        case .stale: return "freshet; hit; detail=stale"
        case .revalidated: return "freshet; fwd=stale; fwd-status=304"
        case .miss: return "freshet; fwd=miss"
        }
    }

    /// `fields` without hop-by-hop fields, `Proxy-*` fields, the fields `Connection` lists, and `Host`
    /// (the proxy addresses the origin itself).
    static func forwardable(_ fields: HTTPFields) -> HTTPFields {
        let listed = listed(in: fields[values: .connection])
        var kept = HTTPFields()
        kept.reserveCapacity(fields.count)
        for field in fields {
            let name = field.name.canonicalName
            if isHopByHop(name) || listed.contains(name) { continue }
            kept.append(field)
        }
        return kept
    }

    /// The field names (lowercase) that `Connection` lines with `values` list: they go no further.
    static func listed(in values: [String]) -> Set<String> {
        var listed: Set<String> = []
        for value in values {
            for name in value.split(separator: ",") {
                let trimmed = name.trimmingOWS().lowercased()
                if !trimmed.isEmpty { listed.insert(trimmed) }
            }
        }
        return listed
    }

    /// Whether a field (by its lowercase name) never goes on: a hop-by-hop field, a `Proxy-*`
    /// field, or `Host`.
    static func isHopByHop(_ name: String) -> Bool {
        // Asked of every field of every answer and forwarded request: the names are short and few,
        // so comparing them (by length first) costs less than hashing into `hopByHop` (a test
        // holds the two alike). No hop-by-hop name but `proxy-*` starts with `p`.
        if name.utf8.first == UInt8(ascii: "p") { return name.hasPrefix("proxy-") }
        return (name.utf8.count == 4 && name == "host") || HTTPField.Name.isHopByHop(name)
    }
}

extension HTTPField.Name {
    /// `X-Cache`: how `freshet proxy`'s cache answered (`HIT`, `MISS`, `REVALIDATED`, `STALE`).
    public static let xCache = HTTPField.Name("X-Cache")!
    /// `Cache-Status` (RFC 9211): each cache on the way appends its member.
    public static let cacheStatus = HTTPField.Name("Cache-Status")!
}
