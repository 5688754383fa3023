extension Substring {
    /// The text without leading and trailing spaces and tabs (HTTP's optional whitespace).
    /// Works on UTF-8 bytes, with no Foundation bridging: it runs on every cache hit.
    package func trimmingOWS() -> String {
        let bytes = utf8
        var start = startIndex
        var end = endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start = bytes.index(after: start) }
        while start < end {
            let before = bytes.index(before: end)
            guard bytes[before] == 0x20 || bytes[before] == 0x09 else { break }
            end = before
        }
        return String(self[start..<end])
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs (HTTP's optional whitespace).
    package func trimmingOWS() -> String { String(self)[...].trimmingOWS() }
}
