/// Decodes `%XX` escapes byte by byte (Foundation's `removingPercentEncoding` drops a leading
/// BOM); `nil` for a broken escape or bytes that are not UTF-8. For checking what a request
/// target really carried.
public func percentDecoded<S: StringProtocol>(_ text: S) -> String? {
    var bytes: [UInt8] = []
    var utf8 = text.utf8.makeIterator()
    while let byte = utf8.next() {
        guard byte == UInt8(ascii: "%") else {
            bytes.append(byte)
            continue
        }
        guard let high = utf8.next(), let low = utf8.next(),
              let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return nil }
        bytes.append(value)
    }
    return String(validating: bytes, as: UTF8.self)
}
