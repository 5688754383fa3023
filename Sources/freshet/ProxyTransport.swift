import AsyncHTTPClient
import Foundation
import Freshet
import FreshetTransports
import HTTPTypes
import NIOCore
import NIOHTTP1
import OpenAPIRuntime

/// The proxy's way to the origin: the shared AsyncHTTPClient pool (redirects off, fail-fast
/// connect), streaming both bodies.
///
/// It exists beside `Transports.asyncHTTPClient()` because a proxy must keep every header line:
/// swift-openapi-async-http-client 1.5 builds the response fields with `fields[name] = value`,
/// so of a repeated field (`Set-Cookie`, `Cache-Control` on two lines, `Link`, `Vary`, …) only
/// the last line survives. Here every line is appended, in order.
struct OriginTransport: ClientTransport {
    /// The deadline for the response head; the body then streams as long as data keeps coming
    /// (the shared client's read timeout applies between reads).
    var headTimeout: TimeAmount
    var client: HTTPClient = Transports.sharedHTTPClient

    func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws
        -> (HTTPResponse, HTTPBody?)
    {
        guard let url = request.url(relativeTo: baseURL) else {
            throw APIError.invalidRequest("the request target \(request.path ?? "") does not form a valid URL")
        }
        var outbound = HTTPClientRequest(url: url.absoluteString)
        outbound.method = Self.method(request.method)
        outbound.headers.reserveCapacity(request.headerFields.count)
        for field in request.headerFields where field.name != .contentLength && field.name != .transferEncoding {
            outbound.headers.add(name: field.name.rawName, value: field.value)
        }
        if let body {
            let length: HTTPClientRequest.Body.Length
            switch body.length {
            case .known(let count): length = .known(count)
            case .unknown: length = .unknown
            }
            outbound.body = .stream(body.map { ByteBuffer(bytes: $0) }, length: length)
        }
        let response = try await client.execute(outbound, deadline: .now() + headTimeout)
        var fields = HTTPFields()
        fields.reserveCapacity(response.headers.count)
        for (name, value) in response.headers {
            if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        let head = HTTPResponse(
            status: .init(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase),
            headerFields: fields)
        guard request.method != .head else { return (head, nil) }
        let length: HTTPBody.Length = fields[.contentLength].flatMap { Int64($0) }.map { .known($0) } ?? .unknown
        return (head, HTTPBody(response.body.map { ArraySlice($0.readableBytesView) }, length: length,
                               iterationBehavior: .single))
    }

    /// NIO's method for `method`, sent as spelled. NIO parses `M-SEARCH` into `.MSEARCH`, which
    /// HTTP types then spell `MSEARCH`, and writes `.MSEARCH` without the hyphen: an origin would
    /// get a method that does not exist. It goes out as `M-SEARCH` again.
    static func method(_ method: HTTPRequest.Method) -> HTTPMethod {
        switch method.rawValue {
        case "MSEARCH", "M-SEARCH": return .RAW(value: "M-SEARCH")
        default: return HTTPMethod(rawValue: method.rawValue)
        }
    }
}
