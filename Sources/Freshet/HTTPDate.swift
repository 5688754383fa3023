import Foundation

/// HTTP-date parsing and formatting (RFC 9110 §5.6.7), independent of locale and time zone.
///
/// Accepts the three formats a recipient must: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`),
/// RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`).
/// Years 1583 through 9999 are accepted (before 1583 Foundation's calendar is Julian, not Gregorian).
public enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let dayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]

    /// Parses an HTTP-date; `nil` when the text is not one.
    public static func parse(_ text: some StringProtocol) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.count <= 64 else { return nil }
        let tokens = trimmed.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT  → [Sun, 06, Nov, 1994, 08:49:37, GMT]
        if tokens.count == 6, tokens[5] == "GMT", let day = Int(tokens[1]), let month = month(tokens[2]),
           let year = Int(tokens[3]), tokens[3].count == 4 {
            return make(year: year, month: month, day: day, time: tokens[4])
        }
        // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT → [Sunday, 06-Nov-94, 08:49:37, GMT]
        if tokens.count == 4, tokens[3] == "GMT" {
            let parts = tokens[1].split(separator: "-").map(String.init)
            if parts.count == 3, let day = Int(parts[0]), let month = month(parts[1]), let short = Int(parts[2]),
               parts[2].count == 2 {
                // RFC 9110: a two-digit year more than 50 years in the future is in the past century.
                let currentYear = Calendar(identifier: .gregorian).component(.year, from: Date())
                var year = (currentYear / 100) * 100 + short
                if year > currentYear + 50 { year -= 100 }
                return make(year: year, month: month, day: day, time: tokens[2])
            }
        }
        // asctime: Sun Nov  6 08:49:37 1994 → [Sun, Nov, 6, 08:49:37, 1994]
        if tokens.count == 5, let month = month(tokens[1]), let day = Int(tokens[2]), let year = Int(tokens[4]),
           tokens[4].count == 4 {
            return make(year: year, month: month, day: day, time: tokens[3])
        }
        return nil
    }

    /// Formats `date` as an IMF-fixdate, the form to send.
    public static func format(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "GMT")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        func two(_ value: Int?) -> String {
            let v = value ?? 0
            return v < 10 ? "0\(v)" : "\(v)"
        }
        let monthName = months[(c.month ?? 1) - 1].capitalized
        return "\(dayNames[(c.weekday ?? 1) - 1]), \(two(c.day)) \(monthName) \(c.year ?? 1970) \(two(c.hour)):\(two(c.minute)):\(two(c.second)) GMT"
    }

    private static func month(_ text: String) -> Int? {
        months.firstIndex(of: text.lowercased()).map { $0 + 1 }
    }

    private static func make(year: Int, month: Int, day: Int, time: String) -> Date? {
        let parts = time.split(separator: ":")
        guard parts.count == 3, let hour = Int(parts[0]), let minute = Int(parts[1]), let second = Int(parts[2]),
              (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second),
              // Foundation's Gregorian calendar is Julian before 1582, so earlier years would not
              // name the proleptic Gregorian day the text means (and would not format back to it).
              (1583...9999).contains(year) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "GMT")!
        let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        guard let date = calendar.date(from: components),
              calendar.component(.day, from: date) == day else { return nil }
        return date
    }
}

/// `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
public enum RetryAfter {
    /// The wait the header asks for, measured from `now`; `nil` when absent or invalid.
    /// A date in the past means no wait.
    public static func delay(_ value: String?, now: Date = Date()) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if value.allSatisfy(\.isASCIIDigit) {
            guard value.count <= 10, let seconds = Int64(value) else { return .seconds(Int64(Int32.max)) }
            return .seconds(seconds)
        }
        guard let date = HTTPDate.parse(value) else { return nil }
        let seconds = max(0, date.timeIntervalSince(now))
        return .milliseconds(Int64(seconds * 1000))
    }
}

extension Character {
    /// `0`…`9` only (not other Unicode digits).
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
