import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response as the tests see it: status, lowercased header names, body.
struct HTTPResult: Sendable {
    var status: Int
    var headers: [String: String]
    var body: Data

    var text: String { String(decoding: body, as: UTF8.self) }

    func header(_ name: String) -> String? { headers[name.lowercased()] }

    func json() throws -> Any { try JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]) }
}

/// Plain URLSession, no cache, so conditional requests reach the server untouched.
enum HTTPTestClient {
    static func session() -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.timeoutIntervalForRequest = 30
        return URLSession(configuration: configuration)
    }

    static func send(
        _ base: URL, _ path: String, method: String = "GET", headers: [String: String] = [:], body: String? = nil,
        session: URLSession? = nil
    ) async throws -> HTTPResult {
        let url = URL(string: base.absoluteString + path)!
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.cachePolicy = .reloadIgnoringLocalCacheData
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let s = session ?? Self.session()
        let (data, response) = try await s.data(for: request)
        if session == nil { s.finishTasksAndInvalidate() }
        let http = response as! HTTPURLResponse
        var lowered: [String: String] = [:]
        for (key, value) in http.allHeaderFields {
            if let k = key as? String, let v = value as? String { lowered[k.lowercased()] = v }
        }
        return HTTPResult(status: http.statusCode, headers: lowered, body: data)
    }
}
