import FreshetCache
import HTTPTypes
import Testing

/// ``AcceptEncoding/acceptsGzip(_:)``: what a cache keys gzip variants on and a proxy forwards.
@Suite("Accept-Encoding: whether a request takes gzip")
struct AcceptEncodingTests {
    static func fields(_ lines: [String]) -> HTTPFields {
        var fields = HTTPFields()
        for line in lines { fields.append(HTTPField(name: .acceptEncoding, value: line)) }
        return fields
    }

    @Test("gzip, x-gzip or * with a weight above 0, in any case and spacing, on any line", arguments: [
        ["gzip"], ["x-gzip"], ["*"], ["GZIP"], ["gzip;q=0.5"], ["br;q=1.0, gzip;q=0.1"], ["deflate, *;q=0.1"],
        ["identity, gzip ; q=1"], ["gzip;q=0, x-gzip"], [" , ,gzip"], ["gzip; Q=0.5"], ["gzip;q="], ["br", "gzip"],
    ])
    func accepts(lines: [String]) {
        #expect(AcceptEncoding.acceptsGzip(Self.fields(lines)))
    }

    @Test("Weight 0, a weight that is not a number, other codings, an empty field or none take identity", arguments: [
        ["gzip;q=0"], ["gzip; q=0.000"], ["identity"], ["br, deflate"], ["*;q=0"], ["gzip;q=0, *"], [""],
        ["gzip;q=abc"], ["gzipped"], ["x-gzip;q=0"], [],
    ])
    func refuses(lines: [String]) {
        #expect(!AcceptEncoding.acceptsGzip(Self.fields(lines)))
    }
}
