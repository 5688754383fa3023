import Foundation
import HTTPTypes
import Testing
@testable import FreshetCache

@Suite("JSONSyntax: sure only of what JSONSerialization parses")
struct JSONSyntaxTests {
    static let valid: [String] = [
        #"{"by":"zdw","descendants":8,"id":41702777,"kids":[41702778,41702794],"score":58,"title":"Q&amp;A","type":"story"}"#,
        "[]", "{}", " [ 1 , 2 ] ", "\n{\"a\":{\"b\":[true,false,null]}}\r\n", "0", "-0", "12.5", "-3.25", "\"\"",
        #""\u00e9\n\t\"\\\/\b\f\r""#, #""\ud83d\ude00""#, "\"스위프트 ✓ 😀\"", "null", "true",
        "[" + String(repeating: "[", count: 200) + String(repeating: "]", count: 200) + "]",
    ]

    static let invalid: [String] = [
        "", " ", "{", "{\"a\" 1}", "{a:1}", "[1 2]", "01", "1.", ".5", "+1", "-", "--1",
        "tru", "nul", "truex", "\"abc", "\"a\u{01}b\"", #""\x""#, #""\u12""#, #""\ud83d""#, #""\ude00""#,
        #""\ud83d\u0041""#, "[1]]", "{}{}", "'a'", "[NaN]", "[Infinity]",
    ]

    /// What the one pass leaves to JSONSerialization: numbers with an exponent or many digits,
    /// and the trailing commas it forgives.
    static let unsure: [String] = ["1e5", "-2.5E-3", "12345678901234567890", "0.12345678901234567", "[1,]", "{\"a\":1,}"]

    static func parses(_ data: Data) -> Bool {
        (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) != nil
    }

    static func surelyValid(_ data: Data) -> Bool {
        data.withUnsafeBytes { JSONSyntax.isSurelyValid($0) }
    }

    @Test("Valid JSON is recognised in one pass", arguments: valid)
    func recognised(text: String) {
        let data = Data(text.utf8)
        #expect(Self.parses(data))
        #expect(Self.surelyValid(data))
    }

    @Test("What does not parse is never called valid", arguments: invalid)
    func refused(text: String) {
        let data = Data(text.utf8)
        #expect(!Self.parses(data))
        #expect(!Self.surelyValid(data))
    }

    @Test("What the parser forgives or may not fit a Double is left to it", arguments: unsure)
    func leftToTheParser(text: String) {
        #expect(!Self.surelyValid(Data(text.utf8)))
        #expect(!CacheMiddleware.isBrokenJSON(Data(text.utf8), fields: [.contentType: "application/json"]))
    }

    @Test("Broken UTF-8 and surrogates in the bytes are not valid")
    func brokenUTF8() {
        for bytes: [UInt8] in [[0x22, 0xC3, 0x22], [0x22, 0xE0, 0x80, 0x80, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22],
                               [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xFF, 0x22]] {
            #expect(!Self.surelyValid(Data(bytes)), "\(bytes)")
        }
    }

    /// Every one-byte change of a real body: whenever the one pass says valid, JSONSerialization
    /// parses it too (the other way round it may leave a body to the parser).
    @Test("No mutation of a body is called valid that does not parse")
    func mutations() {
        let body = Array("[\(Self.valid[0]),".utf8) + Array(#"{"x":[1,-2.5,"é\u0041",{"y":null}]}]"#.utf8)
        let replacements: [UInt8] = [0x00, 0x0A, 0x20, 0x22, 0x2C, 0x2D, 0x2E, 0x30, 0x31, 0x3A, 0x5B, 0x5C, 0x5D,
                                     0x61, 0x65, 0x6E, 0x74, 0x75, 0x7B, 0x7D, 0x80, 0xC3, 0xE2, 0xF0, 0xFF]
        var checked = 0
        for index in body.indices {
            for byte in replacements where body[index] != byte {
                var mutated = body
                mutated[index] = byte
                let data = Data(mutated)
                if Self.surelyValid(data) {
                    #expect(Self.parses(data), "\(String(decoding: mutated, as: UTF8.self))")
                    checked += 1
                }
            }
        }
        #expect(checked > 0)
    }

    @Test("isBrokenJSON still refuses what does not parse and passes what does")
    func brokenJSON() {
        let json: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        #expect(CacheMiddleware.isBrokenJSON(Data("{\"a\":".utf8), fields: json))
        let huge = Data("{\"a\":1e400}".utf8)
        #expect(CacheMiddleware.isBrokenJSON(huge, fields: json) == !Self.parses(huge))
        #expect(!CacheMiddleware.isBrokenJSON(Data("[1,2]".utf8), fields: json))
        #expect(!CacheMiddleware.isBrokenJSON(Data("not json".utf8), fields: [.contentType: "text/plain"]))
    }
}
