import Foundation
import HTTPTypes

/// A typed description of one HTTP request and how to decode its response.
///
/// An endpoint is a plain value: build it once, send it many times. The path is made of
/// *segments*, each percent-encoded on its own, so user input can never change the shape of
/// the request target: a repository named `a/../b` or `x?y` stays one segment.
///
/// ```swift
/// let events = Endpoint<[Event]>.get("repos", owner, name, "events", query: ["per_page": "50"])
/// let page = try await client.send(events)
/// ```
public struct Endpoint<Response: Sendable>: Sendable {
    /// The HTTP method.
    public var method: HTTPRequest.Method
    /// Raw, unencoded path segments, appended to the client's base URL.
    public var pathSegments: [String]
    /// Query items, in order. A `nil` value sends the name alone (`?flag`).
    public var query: [QueryItem]
    /// Extra request headers; they override the client's default headers of the same name.
    public var headers: HTTPFields
    /// The request body, if any.
    public var body: Data?
    /// An absolute URL to request instead of base URL + path (used to follow `Link` URLs as given).
    public var absoluteURL: URL?
    /// The route template that names this request in logs, metrics and traces (`/repos/{owner}/{repo}`);
    /// `nil` names it by its first path segment. Set it with ``named(_:)``.
    public var route: String?
    /// Turns the response body into a value.
    public var decode: @Sendable (_ body: Data, _ decoder: JSONDecoder) throws -> Response

    /// Creates an endpoint with an explicit decoding closure.
    public init(
        method: HTTPRequest.Method = .get,
        path pathSegments: [String],
        query: [QueryItem] = [],
        headers: HTTPFields = [:],
        body: Data? = nil,
        absoluteURL: URL? = nil,
        decode: @escaping @Sendable (_ body: Data, _ decoder: JSONDecoder) throws -> Response
    ) {
        self.method = method
        self.pathSegments = pathSegments
        self.query = query
        self.headers = headers
        self.body = body
        self.absoluteURL = absoluteURL
        self.decode = decode
    }

    /// The same request with a different decoding of its body.
    public func map<T: Sendable>(_ transform: @escaping @Sendable (Response) throws -> T) -> Endpoint<T> {
        let decode = self.decode
        var mapped = Endpoint<T>(
            method: method, path: pathSegments, query: query, headers: headers, body: body,
            absoluteURL: absoluteURL, decode: { data, decoder in try transform(decode(data, decoder)) }
        )
        mapped.route = route
        return mapped
    }

    /// The same request named by a route template, for logs and traces: `.named("/repos/{owner}/{repo}")`.
    public func named(_ route: String) -> Endpoint {
        var copy = self
        copy.route = route
        return copy
    }

    /// The operation ID the middlewares and the transport see: the method and the route
    /// (`GET /repos/{owner}/{repo}`), or the first path segment when no route is set (`GET /repos`).
    public var operationID: String {
        method.rawValue + " " + (route ?? (pathSegments.first.map { "/\($0)" } ?? "/"))
    }
}

extension Endpoint where Response: Decodable {
    /// Creates an endpoint whose response body is JSON decoded as `Response`.
    public init(
        method: HTTPRequest.Method = .get,
        path pathSegments: [String],
        query: [QueryItem] = [],
        headers: HTTPFields = [:],
        body: Data? = nil
    ) {
        self.init(method: method, path: pathSegments, query: query, headers: headers, body: body) { data, decoder in
            try decoder.decode(Response.self, from: data)
        }
    }

    /// A `GET` of the given path segments whose JSON body decodes as `Response`.
    public static func get(_ segments: String..., query: [QueryItem] = []) -> Endpoint {
        Endpoint(path: segments, query: query)
    }
}

extension Endpoint where Response == Data {
    /// A `GET` whose body is returned as raw bytes, undecoded.
    public static func raw(_ segments: String..., query: [QueryItem] = []) -> Endpoint {
        Endpoint(path: segments, query: query) { data, _ in data }
    }
}

/// One `name=value` pair of a query string. Both parts are percent-encoded when sent.
public struct QueryItem: Sendable, Hashable {
    /// The name, unencoded.
    public var name: String
    /// The value, unencoded; `nil` sends the name alone.
    public var value: String?

    /// Creates a query item.
    public init(_ name: String, _ value: String?) {
        self.name = name
        self.value = value
    }
}

extension Array where Element == QueryItem {
    /// Builds query items from pairs, keeping their order; `nil` values are left out.
    public static func items(_ pairs: KeyValuePairs<String, String?>) -> [QueryItem] {
        pairs.compactMap { pair in pair.value.map { QueryItem(pair.key, $0) } }
    }
}

/// Percent-encoding rules for request targets.
public enum PercentEncoding {
    /// Whether `byte` is an RFC 3986 unreserved character: the only ones sent unencoded.
    @inline(__always)
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    /// Encodes one path segment so that it stays exactly one segment.
    ///
    /// Everything but unreserved characters is encoded, including `/`, `?`, `#` and `%`; the
    /// dot-segments `.` and `..` are encoded as `%2E` so no URL normaliser can remove them.
    /// - Throws: ``APIError/invalidRequest(_:)`` for an empty segment, which would otherwise
    ///   collapse into `//` and change the path.
    public static func encodeSegment(_ segment: String) throws(APIError) -> String {
        guard !segment.isEmpty else {
            throw APIError.invalidRequest("a path segment is empty (an empty name or ID was given)")
        }
        if segment == "." || segment == ".." {
            return String(repeating: "%2E", count: segment.count)
        }
        return encodeComponent(segment)
    }

    /// Encodes a query name or value (space as `%20`, `+` as `%2B`).
    public static func encodeComponent(_ text: String) -> String {
        // Most names, IDs and values need no escape: returned as they are, with nothing copied.
        if text.utf8.allSatisfy(isUnreserved) { return text }
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension Endpoint {
    /// The encoded request target (`/a/b?x=1`), relative to the client's base URL.
    public func encodedTarget() throws(APIError) -> String {
        var target = ""
        for segment in pathSegments {
            target.append("/")
            target.append(try PercentEncoding.encodeSegment(segment))
        }
        if target.isEmpty { target = "/" }
        if !query.isEmpty {
            target += "?" + query.map { item in
                let name = PercentEncoding.encodeComponent(item.name)
                return item.value.map { "\(name)=\(PercentEncoding.encodeComponent($0))" } ?? name
            }.joined(separator: "&")
        }
        return target
    }
}
