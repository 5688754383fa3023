import Foundation
import Freshet
import HTTPTypes

/// Header fields in the `headers` column: their HTTP/1 field lines, `Name: value` and CRLF after
/// each, read back without a JSON decoder on every disk lookup. No field value holds CR, LF or
/// NUL (HTTPTypes keeps them out); a set of fields that somehow did is written as the older
/// format, a JSON array of `[name, value]` pairs, which rows written before are in and which is
/// read as well.
package enum HeaderCoding {
    package static func encode(_ fields: HTTPFields) throws -> Data {
        // Bytes appended to bytes: appending to a `String` cost ~19k instructions for 8 fields.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(fields.count * 64)
        for field in fields {
            let value = field.value.utf8
            guard !value.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else { return try json(fields) }
            bytes.append(contentsOf: field.name.rawName.utf8)
            bytes.append(UInt8(ascii: ":"))
            bytes.append(UInt8(ascii: " "))
            bytes.append(contentsOf: value)
            bytes.append(0x0D)
            bytes.append(0x0A)
        }
        return Data(bytes)
    }

    /// The fields in `data`, skipping lines whose name is not a valid field name; nil when
    /// `data` is neither format.
    package static func decode(_ data: Data?) -> HTTPFields? {
        guard let data else { return nil }
        if data.first == UInt8(ascii: "[") { return decodeJSON(data) }
        var fields = HTTPFields()
        var failed = false
        data.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            var start = 0
            while start < bytes.count {
                var end = start
                while end + 1 < bytes.count, !(bytes[end] == 0x0D && bytes[end + 1] == 0x0A) { end += 1 }
                guard end + 1 < bytes.count, let colon = bytes[start..<end].firstIndex(of: UInt8(ascii: ":")),
                      colon + 1 < end, bytes[colon + 1] == UInt8(ascii: " ") || colon + 1 == end else {
                    failed = true
                    return
                }
                let valueStart = min(colon + 2, end)
                if let name = name(UnsafeBufferPointer(rebasing: bytes[start..<colon])) {
                    // A `String` first: HTTP types' initializer for bytes validates them generically.
                    let value = String(decoding: UnsafeBufferPointer(rebasing: bytes[valueStart..<end]), as: UTF8.self)
                    fields.append(HTTPField(name: name, value: value))
                }
                start = end + 2
            }
        }
        return failed ? nil : fields
    }

    /// The names stored most often, by their length in bytes: a stored name spelled exactly as one
    /// of them is that name, without being validated and lowercased again (a third of decoding a
    /// row, whose 8 fields took some 22,000 instructions for a Hacker News item).
    private static let known: [[(spelling: [UInt8], name: HTTPField.Name)]] = {
        let names: [HTTPField.Name] = [
            .cacheControl, .contentType, .contentLength, .contentEncoding, .date, .vary, .eTag, .lastModified,
            .expires, .age, .server, .location, .acceptRanges, .accessControlAllowOrigin,
            .accessControlExposeHeaders, .strictTransportSecurity, .xContentTypeOptions, .contentSecurityPolicy,
            .retryAfter, .setCookie, .via, .transferEncoding, .connection,
        ] + [
            "Link", "X-GitHub-Media-Type", "X-GitHub-Api-Version-Selected", "X-GitHub-Request-Id", "X-Poll-Interval",
            "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-RateLimit-Used",
            "X-RateLimit-Resource", "X-Frame-Options", "X-XSS-Protection", "Referrer-Policy",
        ].compactMap { HTTPField.Name($0) }
        var table = [[(spelling: [UInt8], name: HTTPField.Name)]](repeating: [], count: 32)
        for name in names where name.rawName.utf8.count < table.count {
            table[name.rawName.utf8.count].append((Array(name.rawName.utf8), name))
        }
        return table
    }()

    /// The field name spelled by `bytes`; nil when it is not a valid one.
    private static func name(_ bytes: UnsafeBufferPointer<UInt8>) -> HTTPField.Name? {
        if bytes.count < known.count {
            for entry in known[bytes.count] where entry.spelling.withUnsafeBufferPointer({ $0.elementsEqual(bytes) }) {
                return entry.name
            }
        }
        return HTTPField.Name(String(decoding: bytes, as: UTF8.self))
    }

    private static func json(_ fields: HTTPFields) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return try encoder.encode(fields.map { [$0.name.rawName, $0.value] })
    }

    private static func decodeJSON(_ data: Data) -> HTTPFields? {
        guard let pairs = try? JSONDecoder().decode([[String]].self, from: data) else { return nil }
        var fields = HTTPFields()
        for pair in pairs where pair.count == 2 {
            guard let name = HTTPField.Name(pair[0]) else { continue }
            fields.append(HTTPField(name: name, value: pair[1]))
        }
        return fields
    }
}
