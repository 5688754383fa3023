/// Locale-free date formatting and parsing for the formats the three APIs use.
/// All inputs and outputs are Unix epoch seconds (UTC).
enum SimDate {
    struct Civil {
        var year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int
        /// 0 = Sunday.
        var weekday: Int
    }

    static func civil(_ epoch: Int) -> Civil {
        let days = floorDiv(epoch, 86_400)
        let secs = epoch - days * 86_400
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468
        let era = floorDiv(z, 146_097)
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        let weekday = ((days % 7) + 11) % 7  // 1970-01-01 was a Thursday (4)
        return Civil(year: y, month: m, day: d, hour: secs / 3600, minute: (secs % 3600) / 60, second: secs % 60, weekday: weekday)
    }

    static func epoch(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0) -> Int {
        // days_from_civil
        let y = month <= 2 ? year - 1 : year
        let era = floorDiv(y, 400)
        let yoe = y - era * 400
        let mp = month > 2 ? month - 3 : month + 9
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return days * 86_400 + hour * 3600 + minute * 60 + second
    }

    /// `2022-06-09T12:47:28Z` (GitHub).
    static func iso8601(_ epoch: Int) -> String {
        let c = civil(epoch)
        return "\(pad(c.year, 4))-\(pad(c.month))-\(pad(c.day))T\(pad(c.hour)):\(pad(c.minute)):\(pad(c.second))Z"
    }

    /// `2017-06-14T09:30:00.000+09:00` (Kakao, Korea Standard Time).
    static func kakao(_ epoch: Int) -> String {
        let c = civil(epoch + 9 * 3600)
        return "\(pad(c.year, 4))-\(pad(c.month))-\(pad(c.day))T\(pad(c.hour)):\(pad(c.minute)):\(pad(c.second)).000+09:00"
    }

    static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `Mon, 30 May 2017 04:30:00 GMT` (HTTP-date, IMF-fixdate).
    static func rfc1123(_ epoch: Int) -> String {
        let c = civil(epoch)
        return "\(weekdays[c.weekday]), \(pad(c.day)) \(months[c.month - 1]) \(pad(c.year, 4)) \(pad(c.hour)):\(pad(c.minute)):\(pad(c.second)) GMT"
    }

    /// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`); also accepts the obsolete
    /// RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`).
    static func parseHTTPDate(_ string: String) -> Int? {
        let parts = string.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        func monthIndex(_ s: String) -> Int? {
            months.firstIndex { $0.lowercased() == s.lowercased() }.map { $0 + 1 }
        }
        func time(_ s: String) -> (Int, Int, Int)? {
            let t = s.split(separator: ":").compactMap { Int($0) }
            guard t.count == 3, (0..<24).contains(t[0]), (0..<60).contains(t[1]), (0...60).contains(t[2]) else { return nil }
            return (t[0], t[1], t[2])
        }
        if parts.count == 5, let day = Int(parts[1]), let month = monthIndex(parts[2]), let year = Int(parts[3]),
            parts.count >= 5, let (h, m, s) = time(parts[4])
        {
            return epoch(year: year, month: month, day: day, hour: h, minute: m, second: s)
        }
        if parts.count == 6, let day = Int(parts[1]), let month = monthIndex(parts[2]), let year = Int(parts[3]),
            let (h, m, s) = time(parts[4]), parts[5] == "GMT"
        {
            return epoch(year: year, month: month, day: day, hour: h, minute: m, second: s)
        }
        if parts.count == 4 {
            // RFC 850: Sunday 06-Nov-94 08:49:37 GMT
            let dmy = parts[1].split(separator: "-").map(String.init)
            if dmy.count == 3, let day = Int(dmy[0]), let month = monthIndex(dmy[1]), var year = Int(dmy[2]),
                let (h, m, s) = time(parts[2])
            {
                if year < 100 { year += year < 70 ? 2000 : 1900 }
                return epoch(year: year, month: month, day: day, hour: h, minute: m, second: s)
            }
        }
        if parts.count == 5, let month = monthIndex(parts[1]), let day = Int(parts[2]), let (h, m, s) = time(parts[3]),
            let year = Int(parts[4])
        {
            return epoch(year: year, month: month, day: day, hour: h, minute: m, second: s)
        }
        return nil
    }

    private static func pad(_ value: Int, _ width: Int = 2) -> String {
        let s = String(value)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    private static func floorDiv(_ a: Int, _ b: Int) -> Int {
        a >= 0 ? a / b : -((-a + b - 1) / b)
    }
}
