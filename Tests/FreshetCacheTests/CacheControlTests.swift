import Foundation
import Freshet
@testable import FreshetCache
import HTTPTypes
import Testing

@Suite("Cache-Control parsing (RFC 9111 §5.2)")
struct CacheControlTests {
    @Test func directivesAreCaseInsensitive() {
        let control = CacheControl(parsing: "Max-Age=60, NO-STORE, Private")
        #expect(control.maxAge == 60)
        #expect(control.noStore)
        #expect(control.isPrivate)
    }

    @Test("Quoted values, including ones that look like directives")
    func quotedValues() {
        let control = CacheControl(parsing: #"ext="max-age=0, no-store", max-age="30", foo="a\"b""#)
        #expect(control.maxAge == 30)
        #expect(!control.noStore)
        #expect(control.value("ext") == "max-age=0, no-store")
        #expect(control.value("foo") == #"a"b"#)
    }

    @Test("The first of duplicate directives wins, across field lines")
    func duplicates() {
        #expect(CacheControl(parsing: "max-age=10, max-age=100").maxAge == 10)
        var fields = HTTPFields()
        fields.append(HTTPField(name: .cacheControl, value: "max-age=5"))
        fields.append(HTTPField(name: .cacheControl, value: "max-age=500, no-cache"))
        let control = CacheControl(fields)
        #expect(control.maxAge == 5)
        #expect(control.noCache)
    }

    @Test("A value parsed again, after others and as a later line, reads as it did the first time")
    func valuesParsedAgain() {
        // The last value parsed is kept for the next field that repeats it; these alternate, and
        // a kept value seen as a second line must still add to the first line's directives.
        let bare: String?? = .some(nil)
        for _ in 0..<3 {
            #expect(CacheControl(parsing: "public, max-age=600").directives == ["public": bare, "max-age": "600"])
            #expect(CacheControl(parsing: "no-store").directives == ["no-store": bare])
        }
        var fields = HTTPFields()
        fields.append(HTTPField(name: .cacheControl, value: "max-age=5"))
        fields.append(HTTPField(name: .cacheControl, value: "no-store"))
        #expect(CacheControl(fields).directives == ["max-age": "5", "no-store": bare])
        var repeated = HTTPFields()
        repeated.append(HTTPField(name: .cacheControl, value: "no-store"))
        repeated.append(HTTPField(name: .cacheControl, value: "max-age=5"))
        #expect(CacheControl(repeated).directives == ["max-age": "5", "no-store": bare])
    }

    @Test("Invalid numbers count as 0 (stale)", arguments: ["-1", "1.5", "abc", "", "1e3", " "])
    func invalidNumbers(value: String) {
        #expect(CacheControl(parsing: "max-age=\(value)").maxAge == 0)
    }

    @Test("Overflowing numbers are capped at 2^31 (§1.2.2)")
    func overflow() {
        #expect(CacheControl(parsing: "max-age=99999999999999999999999").maxAge == 2_147_483_648)
        #expect(CacheControl(parsing: "max-age=2147483649").maxAge == 2_147_483_648)
        #expect(CacheControl(parsing: "max-age=2147483647").maxAge == 2_147_483_647)
    }

    @Test("Qualified no-cache and private name fields")
    func qualified() {
        let control = CacheControl(parsing: #"no-cache="Set-Cookie, X-Foo", private="x-bar""#)
        #expect(!control.noCache)
        #expect(!control.isPrivate)
        #expect(control.fieldNames("no-cache") == ["set-cookie", "x-foo"])
        #expect(control.fieldNames("private") == ["x-bar"])
    }

    @Test func requestDirectives() {
        let control = CacheControl(parsing: "max-stale, min-fresh=10, only-if-cached")
        #expect(control.maxStale == .some(nil))
        #expect(control.minFresh == 10)
        #expect(control.onlyIfCached)
        #expect(CacheControl(parsing: "max-stale=30").maxStale == .some(30))
        #expect(CacheControl(parsing: "max-age=1").maxStale == nil)
    }

    @Test("Pragma: no-cache counts only without Cache-Control (§5.4)")
    func pragma() {
        let pragma = HTTPField.Name("Pragma")!
        #expect(CacheControl([pragma: "no-cache"]).noCache)
        #expect(!CacheControl([pragma: "no-cache", .cacheControl: "max-age=5"]).noCache)
    }

    @Test func garbageDoesNotCrash() {
        for text in [",,,", "=", "=5", "\"", "max-age=\"", ";;", "a b=c", String(repeating: "x,", count: 1000)] {
            _ = CacheControl(parsing: text)
        }
        #expect(CacheControl(parsing: ", , max-age=3 ,").maxAge == 3)
    }

    @Test("Edges of the byte parser: a value before any name, an escape at the end, names beyond ASCII, tabs")
    func byteParserEdges() {
        #expect(CacheControl(parsing: " =5, max-age=7").directives == ["max-age": "7"])
        #expect(CacheControl(parsing: #"ext="a\"#).value("ext") == #"a\"#, "an escape with nothing after it is kept")
        #expect(CacheControl(parsing: #"ext="a\"b", X"#).directives == ["ext": #"a"b"#, "x": String?.none])
        #expect(CacheControl(parsing: "Ünïcode-Ext=Ä, MAX-AGE=9").directives == ["ünïcode-ext": "Ä", "max-age": "9"])
        #expect(CacheControl(parsing: "\tno-cache\t,\tmax-age=4\t").directives == ["no-cache": String?.none, "max-age": "4"])
        #expect(CacheControl(parsing: "max-age=\t4").maxAge == 0, "whitespace after = is no valid value")
        #expect(CacheControl(parsing: #"a= "x\"#).directives == ["a": String?.none], "a quoted string that runs to the end")
        #expect(CacheControl(parsing: #"private= "a, b", max-age=5"#).directives == ["private": String?.none, "max-age": "5"])
    }
}

@Suite("Freshness and age (RFC 9111 §4.2)")
struct FreshnessTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    func stored(_ headers: HTTPFields, status: Int = 200, requestTime: Double = 0, responseTime: Double = 0) -> CachedResponse {
        CachedResponse(key: "k", variant: "", url: "u", status: status, headers: headers, body: Data(),
                       requestTime: t0 + requestTime, responseTime: t0 + responseTime)
    }

    @Test func maxAgeBeatsExpires() {
        let response = stored([.cacheControl: "max-age=60", .date: HTTPDate.format(t0),
                               .expires: HTTPDate.format(t0 + 3600)])
        #expect(Freshness(stored: response, mode: .private, now: t0).lifetime == 60)
    }

    @Test("s-maxage only in shared mode")
    func sharedMaxAge() {
        let response = stored([.cacheControl: "max-age=60, s-maxage=600"])
        #expect(Freshness(stored: response, mode: .private, now: t0).lifetime == 60)
        #expect(Freshness(stored: response, mode: .shared, now: t0).lifetime == 600)
    }

    @Test("Expires minus Date, in every HTTP-date format")
    func expires() {
        let response = stored([.date: "Sun, 06 Nov 1994 08:49:37 GMT", .expires: "Sunday, 06-Nov-94 08:59:37 GMT"])
        #expect(Freshness(stored: response, mode: .private, now: t0).lifetime == 600)
    }

    @Test("A field given twice is read as its values joined: the first Age of two counts, as of one list")
    func repeatedFields() {
        var headers: HTTPFields = [.date: HTTPDate.format(t0)]
        headers.append(HTTPField(name: .age, value: "7200"))
        headers.append(HTTPField(name: .age, value: "0"))
        #expect(headers.combinedValue(.age) == "7200, 0")
        #expect(headers.combinedValue(.date) == HTTPDate.format(t0))
        #expect(headers.combinedValue(.expires) == nil)
        #expect(Freshness(stored: stored(headers), mode: .private, now: t0).age == 7200)
    }

    @Test("An invalid Expires means already stale (§5.3)")
    func invalidExpires() {
        let response = stored([.expires: "0", .lastModified: HTTPDate.format(t0 - 100_000)])
        let freshness = Freshness(stored: response, mode: .private, now: t0)
        #expect(freshness.lifetime == 0)
        #expect(!freshness.isFresh)
    }

    @Test("Heuristic: 10% of Date − Last-Modified, only for heuristically cacheable statuses (§4.2.2)")
    func heuristic() {
        let headers: HTTPFields = [.date: HTTPDate.format(t0), .lastModified: HTTPDate.format(t0 - 10_000)]
        #expect(Freshness(stored: stored(headers), mode: .private, now: t0).lifetime == 1000)
        #expect(Freshness(stored: stored(headers, status: 404), mode: .private, now: t0).lifetime == 1000)
        #expect(Freshness(stored: stored(headers, status: 302), mode: .private, now: t0).lifetime == 0)
        #expect(Freshness(stored: stored(headers, status: 500), mode: .private, now: t0).lifetime == 0)
    }

    @Test("Current age: Age + response delay, apparent age, resident time (§4.2.3)")
    func currentAge() {
        // Sent at t0, received at t0+2, Date says t0-10 (clock skew): apparent age 12.
        let skewed = stored([.date: HTTPDate.format(t0 - 10), .age: "5"], requestTime: 0, responseTime: 2)
        // corrected_age_value = 5 + 2 = 7; corrected_initial_age = max(12, 7) = 12; resident 8 → 20.
        #expect(Freshness(stored: skewed, mode: .private, now: t0 + 10).age == 20)
        let aged = stored([.date: HTTPDate.format(t0), .age: "100"], requestTime: 0, responseTime: 1)
        // apparent 1; corrected_age_value 101 → 101 + resident 0.
        #expect(Freshness(stored: aged, mode: .private, now: t0 + 1).age == 101)
    }

    @Test("Of a list of Age values the first counts, without parameters", arguments: [
        (["100, 0"], 100.0), (["0, 100"], 0.0), (["100", "0"], 100.0), (["0", "100"], 0.0), (["100;foo=bar"], 100.0),
    ] as [([String], Double)])
    func ageList(lines: [String], expected: Double) {
        var headers: HTTPFields = [.date: HTTPDate.format(t0)]
        for line in lines { headers.append(HTTPField(name: .age, value: line)) }
        #expect(Freshness(stored: stored(headers), mode: .private, now: t0).age == expected)
    }

    @Test("An Expires the grammar does not spell means already stale (§5.3)", arguments: [
        "Thu 18 Aug 2050 02:01:18 GMT", "Thu, 18  Aug  2050 02:01:18 GMT", "Thu, 18 Aug 2050 2:01:18 GMT",
    ])
    func malformedExpires(value: String) {
        let response = stored([.date: HTTPDate.format(t0), .expires: value])
        #expect(Freshness(stored: response, mode: .shared, now: t0).lifetime == 0)
    }

    @Test("An invalid Age is ignored", arguments: ["-5", "abc", "1.5", ""])
    func invalidAge(value: String) {
        let response = stored([.date: HTTPDate.format(t0), .age: value])
        #expect(Freshness(stored: response, mode: .private, now: t0).age == 0)
    }

    @Test func overrideReplacesTheServersLifetime() {
        let response = stored([.cacheControl: "no-cache"])
        #expect(Freshness(stored: response, mode: .private, now: t0, lifetimeOverride: 300).lifetime == 300)
    }
}

@Suite("Cache-Control: whitespace around = makes a directive's value invalid")
struct CacheControlWhitespaceTests {
    @Test("`max-age =100` and `max-age= 100` count as 0 (stale), not 100; neighbours still count",
          arguments: ["max-age =100", "max-age= 100", "max-age = 100", "max-age\t=100"])
    func spacedEquals(_ value: String) {
        #expect(CacheControl(parsing: value).maxAge == 0)
        let mixed = CacheControl(parsing: "no-store, \(value), private")
        #expect(mixed.maxAge == 0)
        #expect(mixed.noStore)
        #expect(mixed.isPrivate)
    }

    @Test("A qualified private or no-cache with a space after = reads as the bare directive; a quoted comma starts nothing")
    func spacedQualified() {
        let control = CacheControl(parsing: #"private= "Set-Cookie, X-Foo", no-cache ="a, b", max-age=5"#)
        #expect(control.isPrivate)
        #expect(control.fieldNames("private") == nil, "unqualified: the whole response is private")
        #expect(control.noCache)
        #expect(control.fieldNames("no-cache") == nil)
        #expect(control.maxAge == 5)
        #expect(Set(control.directives.keys) == ["private", "no-cache", "max-age"])
    }

    @Test("Spaces around commas and after values are fine")
    func spacedCommas() {
        let control = CacheControl(parsing: "  max-age=100 ,  s-maxage=5  , no-cache")
        #expect(control.maxAge == 100)
        #expect(control.sharedMaxAge == 5)
        #expect(control.noCache)
    }
}

@Suite("Targeted cache-control fields are Structured Fields dictionaries (RFC 9213)")
struct TargetedCacheControlTests {
    let name = HTTPField.Name("CDN-Cache-Control")!

    func control(_ lines: String...) -> CacheControl? {
        var fields = HTTPFields()
        for line in lines { fields.append(HTTPField(name: name, value: line)) }
        return CacheControl(targeted: fields, field: name)
    }

    @Test func validDictionary() throws {
        let parsed = try #require(control("foobar, max-age=3600", #"private="x-a", s-maxage=20"#))
        #expect(parsed.maxAge == 3600)
        #expect(parsed.sharedMaxAge == 20)
        #expect(parsed.has("foobar"))
        #expect(parsed.fieldNames("private") == ["x-a"])
        #expect(control("max-age=99999999999")?.maxAge == CacheControl.deltaSecondsCap)
    }

    @Test("Not a dictionary: the whole field is ignored", arguments: [
        "max-age=10000, &&&&&", "MaX-aGe=3600", "max-age =100", "max-age= 100", "max-age=1,",
    ])
    func invalidField(value: String) {
        #expect(control(value) == nil)
    }

    @Test("A directive of the wrong type is ignored on its own", arguments: [
        #"max-age="10000""#, "max-age=1.5", "max-age=-1", "max-age", "max-age=?1", "max-age=abc",
    ])
    func wrongType(value: String) throws {
        let parsed = try #require(control(value + ", no-cache"))
        #expect(parsed.maxAge == nil)
        #expect(parsed.noCache)
    }

    @Test func absentField() {
        #expect(CacheControl(targeted: [.cacheControl: "max-age=1"], field: name) == nil)
        #expect(control("no-store=?0")?.has("no-store") == false)
    }
}
