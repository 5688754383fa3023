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
