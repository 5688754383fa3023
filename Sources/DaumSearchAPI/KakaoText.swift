import Foundation
import Freshet

/// Parses Kakao's date-times without any locale, calendar or formatter.
enum KakaoDateTime {
    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM|±HHMM)`, e.g.
    /// `2017-06-14T00:00:00.000+09:00`. A time without an offset is rejected: it names no instant.
    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        var position = 0

        func number(_ count: Int) -> Int? {
            guard position + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[position..<position + count] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            position += count
            return value
        }
        func expect(_ character: Character) -> Bool {
            guard position < bytes.count, let ascii = character.asciiValue, bytes[position] == ascii else { return false }
            position += 1
            return true
        }

        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
              expect("T") || expect("t"),
              let hour = number(2), expect(":"), let minute = number(2), expect(":"), let second = number(2)
        else { return nil }
        guard (1...12).contains(month), (1...CivilDate.daysIn(month: month, year: year)).contains(day),
              (0...23).contains(hour), (0...59).contains(minute), (0...59).contains(second)
        else { return nil }

        var fraction = 0.0
        if expect(".") {
            // Up to nanoseconds count; further digits are read and ignored.
            var digits = 0
            var divisor = 1
            let start = position
            while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9") {
                if position - start < 9 {
                    digits = digits * 10 + Int(bytes[position] - UInt8(ascii: "0"))
                    divisor *= 10
                }
                position += 1
            }
            guard position > start else { return nil }
            fraction = Double(digits) / Double(divisor)
        }

        let offset: Int
        if expect("Z") || expect("z") {
            offset = 0
        } else {
            let sign: Int
            if expect("+") { sign = 1 } else if expect("-") { sign = -1 } else { return nil }
            guard let offsetHours = number(2) else { return nil }
            _ = expect(":")
            guard let offsetMinutes = number(2), offsetHours <= 23, offsetMinutes <= 59 else { return nil }
            offset = sign * (offsetHours * 3600 + offsetMinutes * 60)
        }
        guard position == bytes.count else { return nil }

        let days = CivilDate.days(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSince1970: TimeInterval(seconds) + fraction)
    }
}
