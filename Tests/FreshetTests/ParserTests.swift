import Foundation
import Freshet
import HTTPTypes
import Testing

@Suite("Header parsers")
struct ParserTests {
    @Test func gitHubLinkHeader() {
        let value = #"<https://api.github.com/repositories/1296269/events?page=2>; rel="next", <https://api.github.com/repositories/1296269/events?page=10>; rel="last""#
        let links = LinkHeader.parse(value)
        #expect(links.map(\.target) == ["https://api.github.com/repositories/1296269/events?page=2",
                                         "https://api.github.com/repositories/1296269/events?page=10"])
        #expect(links.map(\.relations) == [["next"], ["last"]])
    }

    @Test("Odd Link headers", arguments: [
        ("<a>;rel=next", "a"),
        ("  < a >  ;  rel = \"next\"  ", "a"),
        ("<b>; rel=\"prev\", <a,with,commas>; rel=\"next\"", "a,with,commas"),
        ("<a>; title=\"x; rel=prev, y\"; rel=\"last next\"", "a"),
        ("<a>; REL=NEXT", "a"),
    ])
    func oddLinks(value: String, next: String) {
        let found = LinkHeader.parse(value).first { $0.relations.contains("next") }
        #expect(found?.target == next)
    }

    @Test func linkWithoutNext() {
        #expect(LinkHeader.parse("<a>; rel=\"prev\"").allSatisfy { !$0.relations.contains("next") })
        #expect(LinkHeader.parse("garbage without brackets").isEmpty)
        #expect(LinkHeader.parse("<unterminated; rel=next").isEmpty)
    }

    @Test func linkAcrossSeveralFields() throws {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .link, value: "<https://x/1>; rel=\"prev\""))
        fields.append(HTTPField(name: .link, value: "<https://x/3>; rel=\"next\""))
        #expect(LinkHeader.url("next", in: fields)?.absoluteString == "https://x/3")
    }

    @Test("HTTP-dates in all three formats", arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
    ])
    func httpDates(text: String) {
        #expect(HTTPDate.parse(text) == Date(timeIntervalSince1970: 784_111_777))
    }

    @Test("HTTP-date names are case-insensitive", arguments: [
        "SUN, 06 NOV 1994 08:49:37 gmt", "sunday, 06-nov-94 08:49:37 GMT", "sun NOV  6 08:49:37 1994",
    ])
    func httpDateCase(text: String) {
        #expect(HTTPDate.parse(text) == Date(timeIntervalSince1970: 784_111_777))
    }

    @Test("Invalid HTTP-dates: anything the grammar does not spell", arguments: [
        "", "0", "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 PST", "yesterday",
        "Sun 06 Nov 1994 08:49:37 GMT", "Sun, 06  Nov  1994 08:49:37 GMT", "Sun, 06 Nov 1994 8:49:37 GMT",
        "Sun, 06-Nov-1994 08:49:37 GMT", "Sun, 06 Nov 1994 08.49.37 GMT", "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 6 Nov 1994 08:49:37 GMT", "Xyz, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT, Sun, 06 Nov 1994 08:49:38 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT",
        "Sun Nov 6 08:49:37 1994", "Sun, +6 Nov 1994 08:49:37 GMT",
    ])
    func invalidDates(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test func formatRoundTrips() {
        let date = Date(timeIntervalSince1970: 784_111_777)
        #expect(HTTPDate.format(date) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.parse(HTTPDate.format(date)) == date)
    }

    @Test("HTTP-dates agree with Foundation's Gregorian calendar: leap days, centuries, month ends")
    func httpDatesMatchCalendar() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "GMT"))
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        for year in [1600, 1700, 1899, 1900, 1969, 1970, 1999, 2000, 2024, 2100, 2400, 9999] {
            for month in 1...12 {
                for day in [1, 28, 29, 30, 31] {
                    let text = String(format: "Mon, %02d %@ %04d 23:59:58 GMT", day, months[month - 1], year)
                    let components = DateComponents(year: year, month: month, day: day, hour: 23, minute: 59, second: 58)
                    let expected = calendar.date(from: components).flatMap {
                        calendar.component(.day, from: $0) == day ? $0 : nil
                    }
                    // The day name is not checked against the date (RFC 9110 does not ask it).
                    #expect(HTTPDate.parse(text) == expected, "\(text)")
                    if let expected {
                        let formatted = HTTPDate.format(expected)
                        #expect(formatted.dropFirst(5) == text.dropFirst(5), "\(text)")
                        let weekday = calendar.component(.weekday, from: expected)
                        #expect(formatted.hasPrefix(["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][weekday - 1]))
                    }
                }
            }
        }
        #expect(HTTPDate.format(Date(timeIntervalSince1970: -0.5)) == "Wed, 31 Dec 1969 23:59:59 GMT")
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:60 GMT") == Date(timeIntervalSince1970: 784_111_800))
    }

    @Test("Formatting any Date gives an IMF-fixdate: clamped to years 1–9999, four-digit years, no trap")
    func formatExtremes() {
        #expect(HTTPDate.format(Date(timeIntervalSince1970: .infinity)) == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 1e300)) == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: -.infinity)) == "Mon, 01 Jan 0001 00:00:00 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: .nan)) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: -30_641_760_000)) == "Tue, 01 Jan 0999 00:00:00 GMT")
    }

    @Test("A rate-limit reset no clock reaches is no budget", arguments: ["1e300", "inf", "nan", "-5", "1e12"])
    func absurdReset(reset: String) {
        let fields: HTTPFields = [.xRateLimitLimit: "60", .xRateLimitRemaining: "0", .xRateLimitReset: reset]
        #expect(RateLimitBudget(headers: fields, defaultResource: "core") == nil)
    }

    @Test func retryAfterForms() {
        let now = Date(timeIntervalSince1970: 784_111_700)
        #expect(RetryAfter.delay("120", now: now) == .seconds(120))
        #expect(RetryAfter.delay("Sun, 06 Nov 1994 08:49:37 GMT", now: now) == .seconds(77))
        #expect(RetryAfter.delay("Sun, 06 Nov 1990 08:49:37 GMT", now: now) == .zero)
        #expect(RetryAfter.delay("-5", now: now) == nil)
        #expect(RetryAfter.delay("soon", now: now) == nil)
        #expect(RetryAfter.delay(nil, now: now) == nil)
    }
}
