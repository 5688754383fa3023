import Foundation

/// HTTP-date parsing and formatting (RFC 9110 §5.6.7), independent of locale and time zone.
///
/// Accepts the three formats a recipient must, exactly as the grammar spells them — one space
/// between parts, two-digit day and time fields, a comma after the day name, `GMT`:
/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`)
/// and asctime (`Sun Nov  6 08:49:37 1994`). Names are matched case-insensitively. Anything
/// else (`Thu 18 Aug 2050 …`, `18  Aug`, `2:01:18`, `UTC`) is not a date, which for `Expires`
/// means already expired (RFC 9111 §5.3). Years 1583 through 9999 are accepted (the Gregorian
/// calendar began in 1582).
public enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let dayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    // The names as lowercase bytes, matched without making a string: a cache parses `Date` (and
    // often `Expires`) of every response it stores or revalidates.
    private static let lowerMonths = months.map { Array($0.utf8) }
    private static let lowerDayNames = dayNames.map { Array($0.lowercased().utf8) }
    private static let longDayNames = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]
        .map { Array($0.utf8) }
    private static let gmt = Array("gmt".utf8)

    /// Parses an HTTP-date; `nil` when the text is not one.
    public static func parse(_ text: some StringProtocol) -> Date? {
        var c = Array(text.utf8)
        if let first = c.first, let last = c.last, isOWS(first) || isOWS(last) {
            var (start, end) = (0, c.count)
            while start < end, isOWS(c[start]) { start += 1 }
            while start < end, isOWS(c[end - 1]) { end -= 1 }
            c = Array(c[start..<end])
        }
        guard c.count <= 64 else { return nil }
        return imfFixdate(c) ?? rfc850(c) ?? asctime(c)
    }

    private static func isOWS(_ byte: UInt8) -> Bool { byte == space || byte == UInt8(ascii: "\t") }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`
    private static func imfFixdate(_ c: [UInt8]) -> Date? {
        guard c.count == 29, isDayName(c[0..<3]), c[3] == comma, c[4] == space, c[7] == space, c[11] == space,
              c[16] == space, c[25] == space, isGMT(c[26..<29]),
              let day = number(c[5..<7]), let month = month(c[8..<11]), let year = number(c[12..<16]) else { return nil }
        return make(year: year, month: month, day: day, time: c[17..<25])
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT`
    private static func rfc850(_ c: [UInt8]) -> Date? {
        guard let commaAt = c.firstIndex(of: comma), longDayNames.contains(where: { matches(c[..<commaAt], $0) }) else { return nil }
        let r = Array(c[(commaAt + 1)...])  // " 06-Nov-94 08:49:37 GMT"
        guard r.count == 23, r[0] == space, r[3] == dash, r[7] == dash, r[10] == space, r[19] == space,
              isGMT(r[20..<23]), let day = number(r[1..<3]), let month = month(r[4..<7]),
              let short = number(r[8..<10]) else { return nil }
        // RFC 9110: a two-digit year more than 50 years in the future is in the past century.
        let currentYear = Calendar(identifier: .gregorian).component(.year, from: Date())
        var year = (currentYear / 100) * 100 + short
        if year > currentYear + 50 { year -= 100 }
        return make(year: year, month: month, day: day, time: r[11..<19])
    }

    /// `Sun Nov  6 08:49:37 1994` (the day is two digits or a space and one digit)
    private static func asctime(_ c: [UInt8]) -> Date? {
        guard c.count == 24, isDayName(c[0..<3]), c[3] == space, c[7] == space, c[10] == space, c[19] == space,
              let month = month(c[4..<7]), let year = number(c[20..<24]) else { return nil }
        let day = c[8] == space ? number(c[9..<10]) : number(c[8..<10])
        guard let day else { return nil }
        return make(year: year, month: month, day: day, time: c[11..<19])
    }

    /// Formats `date` as an IMF-fixdate, the form to send.
    /// Dates outside years 1–9999 (and non-finite ones) are written as the nearest end of that range.
    public static func format(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        let first = -62_135_596_800.0, last = 253_402_300_799.0  // 0001-01-01T00:00:00, 9999-12-31T23:59:59
        let seconds = Int(interval.isNaN ? 0 : min(max(interval.rounded(.down), first), last))
        let (days, time) = (seconds.floorDivided(by: 86_400), seconds.floorModulo(86_400))
        let (year, month, day) = CivilDate.date(fromDays: days)
        let weekday = (days + 4).floorModulo(7)  // 1970-01-01 was a Thursday
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let monthName = months[month - 1].capitalized
        let fourDigitYear = String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year)
        return "\(dayNames[weekday]), \(two(day)) \(monthName) \(fourDigitYear) \(two(time / 3600)):\(two(time / 60 % 60)):\(two(time % 60)) GMT"
    }

    private static let space = UInt8(ascii: " "), comma = UInt8(ascii: ","), dash = UInt8(ascii: "-")

    /// Whether `bytes`, ASCII letters lowercased, are `lower`.
    private static func matches(_ bytes: ArraySlice<UInt8>, _ lower: [UInt8]) -> Bool {
        guard bytes.count == lower.count else { return false }
        for (byte, expected) in zip(bytes, lower) {
            let folded = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
            guard folded == expected else { return false }
        }
        return true
    }

    private static func isDayName(_ bytes: ArraySlice<UInt8>) -> Bool {
        lowerDayNames.contains { matches(bytes, $0) }
    }

    private static func isGMT(_ bytes: ArraySlice<UInt8>) -> Bool { matches(bytes, gmt) }

    private static func month(_ bytes: ArraySlice<UInt8>) -> Int? {
        lowerMonths.firstIndex { matches(bytes, $0) }.map { $0 + 1 }
    }

    /// The value of a run of ASCII digits; `nil` if any byte is not one.
    private static func number(_ bytes: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for byte in bytes {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return bytes.isEmpty ? nil : value
    }

    /// `time` is exactly `HH:MM:SS`.
    private static func make(year: Int, month: Int, day: Int, time: ArraySlice<UInt8>) -> Date? {
        let t = time.startIndex
        guard time.count == 8, time[t + 2] == UInt8(ascii: ":"), time[t + 5] == UInt8(ascii: ":"),
              let hour = number(time[t..<t + 2]), let minute = number(time[t + 3..<t + 5]),
              let second = number(time[t + 6..<t + 8]),
              (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second),
              // Before 1583 a date's calendar (Julian or Gregorian) is a guess: not a date here.
              (1583...9999).contains(year) else { return nil }
        guard day <= CivilDate.daysIn(month: month, year: year) else { return nil }
        // Arithmetic, not `Calendar`: a cache parses `Date` and `Expires` on every stored response.
        let seconds = CivilDate.days(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}

/// `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
public enum RetryAfter {
    /// The wait the header asks for, measured from `now`; `nil` when absent or invalid.
    /// A date in the past means no wait.
    public static func delay(_ value: String?, now: Date = Date()) -> Duration? {
        guard let value = value?.trimmingOWS(), !value.isEmpty else { return nil }
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

extension Int {
    /// `self / divisor` rounded toward minus infinity.
    fileprivate func floorDivided(by divisor: Int) -> Int {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }

    /// `self` modulo `divisor`, in `0..<divisor` for a positive divisor.
    fileprivate func floorModulo(_ divisor: Int) -> Int {
        let remainder = self % divisor
        return remainder < 0 ? remainder + divisor : remainder
    }
}

/// Proleptic Gregorian calendar arithmetic on day counts (Howard Hinnant's algorithms), for the
/// date parsers of the API modules: no `Calendar`, no allocation.
package enum CivilDate {
    /// Days from 1970-01-01 to `year`-`month`-`day` (`days_from_civil`).
    package static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01 (`civil_from_days`).
    package static func date(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// The number of days in `month` of `year`.
    package static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
