import Foundation
import FreshetFeeds
@preconcurrency import Rainbow

extension BlogText {
    /// `html` as one line of terminal text, at most `width` columns (cut with `…`), the
    /// highlights in bold when `bold` is on (and ``Terminal/configure()`` let colour through),
    /// else plain.
    public static func render(_ html: String, width: Int? = nil, bold: Bool) -> String {
        var budget = width ?? .max
        var out = ""
        let segments = segments(html)
        let total = segments.reduce(0) { $0 + TextLayout.width($1.text) }
        let cut = total > budget
        if cut { budget = max(0, budget - 1) }
        for segment in segments where budget > 0 {
            var text = ""
            for character in segment.text {
                let w = TextLayout.width(String(character))
                if w > budget { budget = 0; break }
                text.append(character)
                budget -= w
            }
            guard !text.isEmpty else { continue }
            out += bold && segment.highlighted ? text.bold : text
        }
        return cut && (width ?? 0) > 0 ? out + "…" : out
    }

    /// `date` as `yyyy-MM-dd HH:mm` in `timeZone` (the local one by default), independent of
    /// the locale.
    public static func dateTime(_ date: Date, timeZone: TimeZone = .current) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: date)
        return String(format: "%04d-%02d-%02d %02d:%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0, c.minute ?? 0)
    }
}
