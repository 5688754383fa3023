import Foundation
import Freshet
import HTTPTypes

/// One byte range a request asks for (RFC 9110 §14.1.2): `bytes=FIRST-LAST`, `bytes=FIRST-` or
/// the suffix `bytes=-LENGTH`. A `Range` with several ranges, another unit or a malformed value
/// is not one: the cache then leaves the request to the server.
struct ByteRangeRequest: Equatable {
    enum Spec: Equatable {
        /// `FIRST-LAST` or, with `last` `nil`, `FIRST-`.
        case from(first: Int, last: Int?)
        /// `-LENGTH`: the last `LENGTH` bytes.
        case suffix(length: Int)
    }

    var spec: Spec

    /// Parses a `Range` field value; `nil` unless it is a single, valid byte range.
    init?(_ value: String) {
        let trimmed = value.trimmingOWS()
        guard trimmed.count > 6, trimmed.prefix(6).lowercased() == "bytes=" else { return nil }
        let set = trimmed.dropFirst(6).trimmingOWS()
        guard !set.contains(","), let dash = set.firstIndex(of: "-") else { return nil }
        let firstText = set[..<dash].trimmingOWS()
        let lastText = set[set.index(after: dash)...].trimmingOWS()
        if firstText.isEmpty {
            guard let length = Self.digits(lastText), length > 0 else { return nil }
            spec = .suffix(length: length)
        } else {
            guard let first = Self.digits(firstText) else { return nil }
            if lastText.isEmpty {
                spec = .from(first: first, last: nil)
            } else {
                guard let last = Self.digits(lastText), last >= first else { return nil }
                spec = .from(first: first, last: last)
            }
        }
    }

    /// The bytes selected from a representation of `length` bytes (§14.1.2), or `nil` when the
    /// range is not satisfiable.
    func resolve(length: Int) -> ClosedRange<Int>? {
        guard length > 0 else { return nil }
        switch spec {
        case .from(let first, let last):
            guard first < length else { return nil }
            return first...min(last ?? (length - 1), length - 1)
        case .suffix(let count):
            return max(0, length - count)...(length - 1)
        }
    }

    private static func digits(_ text: String) -> Int? {
        guard !text.isEmpty, text.count <= 18, text.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }) else {
            return nil
        }
        return Int(text)
    }
}

/// A `Content-Range` of a `206` with one part (RFC 9110 §14.4): `bytes FIRST-LAST/COMPLETE`,
/// where `COMPLETE` may be `*` (unknown).
struct ContentRange: Equatable {
    var range: ClosedRange<Int>
    /// The length of the whole representation, when the server said.
    var completeLength: Int?

    init(range: ClosedRange<Int>, completeLength: Int?) {
        self.range = range
        self.completeLength = completeLength
    }

    /// Parses a `Content-Range` value; `nil` for anything but a valid satisfied byte range.
    init?(_ value: String) {
        let trimmed = value.trimmingOWS()
        guard trimmed.count > 6, trimmed.prefix(6).lowercased() == "bytes " else { return nil }
        let rest = trimmed.dropFirst(6)
        guard let slash = rest.firstIndex(of: "/"), let dash = rest[..<slash].firstIndex(of: "-"),
              let first = Int(rest[..<dash]), let last = Int(rest[rest.index(after: dash)..<slash]),
              first >= 0, last >= first else { return nil }
        let completeText = rest[rest.index(after: slash)...]
        if completeText == "*" {
            completeLength = nil
        } else {
            guard let complete = Int(completeText), complete > last else { return nil }
            completeLength = complete
        }
        range = first...last
    }

    /// The field value.
    var fieldValue: String {
        "bytes \(range.lowerBound)-\(range.upperBound)/\(completeLength.map(String.init) ?? "*")"
    }
}

extension CachePolicy {
    /// How a stored response answers a request with `Range` (RFC 9110 §14, RFC 9111 §3.4).
    enum RangeAnswer {
        /// A `206` made from the stored response.
        case partial(CachedResponse)
        /// The whole stored response (`If-Range` did not match a complete stored response).
        case whole
        /// The stored response cannot answer: the request goes to the server.
        case forward
    }

    /// What `stored` — complete, or a stored `206` — can answer to `rangeValue` (a `Range` value),
    /// given the request's `If-Range`.
    static func rangeAnswer(_ stored: CachedResponse, rangeValue: String, request: HTTPFields) -> RangeAnswer {
        let partial = stored.status == 206
        if let ifRange = request[.ifRange], !ifRangeMatches(ifRange, stored: stored.headers) {
            return partial ? .forward : .whole
        }
        guard stored.status == 200 || partial, let wanted = ByteRangeRequest(rangeValue) else { return .forward }
        let held: ClosedRange<Int>
        let completeLength: Int?
        if partial {
            guard let contentRange = stored.headers[.contentRange].flatMap(ContentRange.init),
                  contentRange.range.count == stored.body.count else { return .forward }
            held = contentRange.range
            completeLength = contentRange.completeLength
        } else {
            guard !stored.body.isEmpty else { return .forward }
            held = 0...(stored.body.count - 1)
            completeLength = stored.body.count
        }
        // Without the complete length only `FIRST-LAST` inside the held bytes can be answered.
        let selected: ClosedRange<Int>?
        if let completeLength {
            selected = wanted.resolve(length: completeLength)
        } else if case .from(let first, let last?) = wanted.spec {
            selected = first...last
        } else {
            selected = nil
        }
        guard let selected, held.contains(selected.lowerBound), held.contains(selected.upperBound) else { return .forward }
        let start = selected.lowerBound - held.lowerBound
        var answer = stored
        answer.status = 206
        answer.body = stored.body.subdata(in: start..<(start + selected.count))
        answer.headers[.contentRange] = ContentRange(range: selected, completeLength: completeLength).fieldValue
        answer.headers[.contentLength] = String(selected.count)
        return .partial(answer)
    }

    /// `If-Range` (RFC 9110 §13.1.5): a strong entity tag equal to the stored one, or an HTTP-date
    /// equal to a stored `Last-Modified` that is strong (at least one second before `Date`).
    static func ifRangeMatches(_ value: String, stored: HTTPFields) -> Bool {
        let trimmed = value.trimmingOWS()
        if trimmed.hasPrefix("\"") || trimmed.hasPrefix("W/") {
            guard !trimmed.hasPrefix("W/"), let etag = stored[.eTag]?.trimmingOWS(),
                  !etag.hasPrefix("W/") else { return false }
            return etag == trimmed
        }
        guard let date = HTTPDate.parse(trimmed), let lastModified = stored[.lastModified].flatMap(HTTPDate.parse),
              let responseDate = stored[.date].flatMap(HTTPDate.parse) else { return false }
        return date == lastModified && responseDate.timeIntervalSince(lastModified) >= 1
    }

    /// Whether a `206` may be stored as partial content: one byte range whose length is the body's.
    static func isStorablePartial(_ fields: HTTPFields, bodyCount: Int) -> Bool {
        guard let contentRange = fields[.contentRange].flatMap(ContentRange.init) else { return false }
        return contentRange.range.count == bodyCount
    }
}
