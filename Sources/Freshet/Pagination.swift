import Foundation
import HTTPTypes

/// One link of an RFC 8288 `Link` header.
public struct WebLink: Sendable, Equatable {
    /// The target, exactly as given between `<` and `>`.
    public var target: String
    /// The relation types, lowercased (`rel="next last"` gives both).
    public var relations: [String]
    /// The other parameters, names lowercased, values unquoted.
    public var parameters: [String: String]
}

/// Parses `Link` headers (RFC 8288): quoted or bare `rel`, several relations, odd spacing,
/// commas inside URLs, and several `Link` fields.
public enum LinkHeader {
    /// Every link in `value`; malformed parts are skipped.
    public static func parse(_ value: String) -> [WebLink] {
        var links: [WebLink] = []
        var index = value.startIndex
        func skip(_ predicate: (Character) -> Bool) {
            while index < value.endIndex, predicate(value[index]) { index = value.index(after: index) }
        }
        while index < value.endIndex {
            skip { $0 != "<" }
            guard index < value.endIndex else { break }
            index = value.index(after: index)
            let start = index
            skip { $0 != ">" }
            guard index < value.endIndex else { break }
            let target = String(value[start..<index]).trimmingOWS()
            index = value.index(after: index)
            var parameters: [String: String] = [:]
            // Parameters: ; name = value | ; name = "quoted, value" ; until a comma outside quotes.
            while true {
                skip { $0 == " " || $0 == "\t" }
                guard index < value.endIndex, value[index] == ";" else { break }
                index = value.index(after: index)
                skip { $0 == " " || $0 == "\t" }
                let nameStart = index
                skip { $0 != "=" && $0 != ";" && $0 != "," && $0 != " " }
                let name = value[nameStart..<index].lowercased()
                skip { $0 == " " || $0 == "\t" }
                var parameterValue = ""
                if index < value.endIndex, value[index] == "=" {
                    index = value.index(after: index)
                    skip { $0 == " " || $0 == "\t" }
                    if index < value.endIndex, value[index] == "\"" {
                        index = value.index(after: index)
                        while index < value.endIndex, value[index] != "\"" {
                            if value[index] == "\\", value.index(after: index) < value.endIndex {
                                index = value.index(after: index)
                            }
                            parameterValue.append(value[index])
                            index = value.index(after: index)
                        }
                        if index < value.endIndex { index = value.index(after: index) }
                    } else {
                        let valueStart = index
                        skip { $0 != ";" && $0 != "," && $0 != " " }
                        parameterValue = String(value[valueStart..<index])
                    }
                }
                if !name.isEmpty, parameters[name] == nil { parameters[name] = parameterValue }
            }
            let relations = (parameters["rel"] ?? "").lowercased().split(whereSeparator: { $0 == " " || $0 == "\t" })
                .map(String.init)
            links.append(WebLink(target: target, relations: relations, parameters: parameters))
            skip { $0 != "," }
        }
        return links
    }

    /// The target of the first link with relation `relation` across every `Link` field,
    /// resolved against `base`.
    public static func url(_ relation: String, in fields: HTTPFields, relativeTo base: URL? = nil) -> URL? {
        for field in fields[values: .link] {
            if let link = parse(field).first(where: { $0.relations.contains(relation.lowercased()) }) {
                return URL(string: link.target, relativeTo: base)?.absoluteURL
            }
        }
        return nil
    }
}

extension APIClient {
    /// The pages of a paginated resource: `endpoint` first, then each `Link: rel="next"` URL
    /// exactly as given, until there is none or `maxPages` have been fetched.
    ///
    /// A next URL on another origin than the first request is not followed (the client's
    /// credentials would go with it): the sequence ends with
    /// ``APIError/invalidRequest(_:)`` instead. A failure ends the sequence with that error.
    public func pages<Value>(_ endpoint: Endpoint<Value>, maxPages: Int = 10) -> AsyncThrowingStream<Response<Value>, any Error> {
        let client = self
        return AsyncThrowingStream { continuation in
            let task = Task {
                do throws(APIError) {
                    var current = endpoint
                    let first = try client.url(for: endpoint)
                    for _ in 0..<max(0, maxPages) {
                        let page = try await client.send(current)
                        continuation.yield(page)
                        guard let next = LinkHeader.url("next", in: page.headers, relativeTo: page.url) else { break }
                        guard first.isSameOrigin(as: next) else {
                            throw APIError.invalidRequest(
                                "the next page is on another origin (\(Redaction.redact(next))); it was not fetched")
                        }
                        current.absoluteURL = next
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
