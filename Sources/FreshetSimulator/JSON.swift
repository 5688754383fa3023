/// A JSON value with ordered object keys, rendered compactly the way the upstream APIs
/// write it: raw UTF-8, `/` not escaped, integers without a fraction.
enum JSON: Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral, ExpressibleByArrayLiteral
{
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    /// Pre-rendered JSON text inserted verbatim.
    case raw(String)
    case array([JSON])
    case object([(String, JSON)])

    init(stringLiteral value: String) { self = .string(value) }
    init(integerLiteral value: Int) { self = .int(value) }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(nilLiteral: ()) { self = .null }
    init(arrayLiteral elements: JSON...) { self = .array(elements) }

    init(_ value: String?) { self = value.map(JSON.string) ?? .null }
    init(_ value: Int?) { self = value.map(JSON.int) ?? .null }

    var rendered: String {
        var out = ""
        render(into: &out)
        return out
    }

    func render(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d):
            if d == d.rounded(), abs(d) < 1e15 {
                out += String(Int(d)) + ".0"
            } else {
                out += String(d)
            }
        case .string(let s): JSON.renderString(s, into: &out)
        case .raw(let s): out += s
        case .array(let values):
            out += "["
            for (i, v) in values.enumerated() {
                if i > 0 { out += "," }
                v.render(into: &out)
            }
            out += "]"
        case .object(let pairs):
            out += "{"
            for (i, (k, v)) in pairs.enumerated() {
                if i > 0 { out += "," }
                JSON.renderString(k, into: &out)
                out += ":"
                v.render(into: &out)
            }
            out += "}"
        }
    }

    static func renderString(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }

    /// Object with keys sorted by code point, the way Firebase (Hacker News) writes them.
    static func sortedObject(_ pairs: [(String, JSON)]) -> JSON {
        .object(pairs.sorted { $0.0 < $1.0 })
    }
}

/// `obj(("id", 1), ("name", "x"))`: an ordered JSON object.
func obj(_ pairs: (String, JSON)...) -> JSON {
    .object(pairs)
}
