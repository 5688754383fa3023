import Freshet
import HTTPTypes
import NIOHTTP1
import OpenAPIRuntime

// The one conversion between NIO's HTTP/1 header lines and HTTP types' fields, for
// `HTTPClientTransport` (AsyncHTTPClient) and `HTTP1Transport`. Both directions keep every line
// as it is: order, spelling and repeats (no combining, no cookie splitting, no dropped
// connection fields: a cache and a proxy need the origin's lines exactly).
//
// (FreshetProxy's server writes stored responses with swift-nio-extras' `NIOHTTPTypesHTTP1`
// conversion, which suits a head we made ourselves; the origin's heads it forwards on its event
// loop come through `HTTPResponse(nioStatus:headers:)` here.)

extension HTTPFields {
    /// NIO's header lines as fields, in order, as spelled, repeats kept. A line whose name is not
    /// a valid field name (NIO's decoder lets none through) is left out. Common names spelled the
    /// usual way are HTTP types' constants (``HTTPField/Name/common(spelled:)``).
    init(nioHeaders headers: HTTPHeaders) {
        self.init()
        reserveCapacity(headers.count)
        for (name, value) in headers {
            if let fieldName = HTTPField.Name.common(spelled: name) ?? HTTPField.Name(name) {
                append(HTTPField(name: fieldName, value: value))
            }
        }
    }
}

extension HTTPHeaders {
    /// Appends `fields` as header lines, in order and as spelled, except the message's framing
    /// (`Content-Length`, `Transfer-Encoding`), which the sender sets from the body it sends.
    mutating func addExceptFraming(_ fields: HTTPFields) {
        reserveCapacity(count + fields.count)
        for field in fields where field.name != .contentLength && field.name != .transferEncoding {
            add(name: field.name.rawName, value: field.value)
        }
    }
}

extension HTTPResponse {
    /// A response from NIO's status and header lines (as received, in order).
    package init(nioStatus status: HTTPResponseStatus, headers: HTTPHeaders) {
        let code = Int(status.code)
        // NIO has no phrase for 103 (it does not keep the one received either).
        let phrase = status.reasonPhrase.isEmpty && code == 103 ? "Early Hints" : status.reasonPhrase
        self.init(status: .init(code: code, reasonPhrase: phrase), headerFields: HTTPFields(nioHeaders: headers))
    }

    /// NIO's response head as a response: status and header lines as received, in order.
    init(_ head: HTTPResponseHead) {
        self.init(nioStatus: head.status, headers: head.headers)
    }

    /// The length of the body as its `Content-Length` announces it (`unknown` without one).
    /// (One `Content-Length` line is read; HTTP types' subscript would join every line's value.)
    var announcedBodyLength: HTTPBody.Length {
        for field in headerFields where field.name == .contentLength {
            return Int64(field.value).map { .known($0) } ?? .unknown
        }
        return .unknown
    }
}
