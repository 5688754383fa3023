import Foundation

/// Turns the HTML that APIs send (Hacker News comments and titles, Kakao snippets) into text for
/// people. The network layer and the API modules pass such fields on as the services sent them;
/// every reading of them goes through ``tokens(_:)``, the one tag scanner the apps have.
public enum HTMLText {
    /// A piece of HTML: text between tags, or a tag.
    public enum Token: Sendable, Hashable {
        /// Text, with its character references decoded (``decodeEntities(_:)``).
        case text(String)
        /// A tag: its name lowercased (`p`, `a`, `pre`), whether it closes (`</a>`), and what
        /// follows the name inside the brackets (`href="…" rel="nofollow"`, as sent).
        case tag(name: String, closing: Bool, attributes: Substring)
    }

    /// `html` as text and tags, in order. A `<` with no `>` after it is text, as browsers read
    /// it; entities are decoded per text run, after the tags are found, so an escaped `&lt;b&gt;`
    /// stays text.
    public static func tokens(_ html: String) -> [Token] {
        var tokens: [Token] = []
        var index = html.startIndex
        func text(_ raw: Substring) {
            guard !raw.isEmpty else { return }
            tokens.append(.text(decodeEntities(String(raw))))
        }
        while let open = html[index...].firstIndex(of: "<"),
              let close = html[html.index(after: open)...].firstIndex(of: ">") {
            text(html[index..<open])
            let inside = html[html.index(after: open)..<close]
            let closing = inside.first == "/"
            let afterSlash = inside.drop { $0 == "/" }
            let name = afterSlash.prefix { $0.isLetter || $0.isNumber }
            tokens.append(.tag(name: name.lowercased(), closing: closing, attributes: afterSlash[name.endIndex...]))
            index = html.index(after: close)
        }
        text(html[index...])
        return tokens
    }

    /// The value of attribute `name` in a tag's ``Token/tag(name:closing:attributes:)``
    /// attributes (`href="x" rel="nofollow"`), entities decoded; `nil` when it is absent.
    public static func attribute(_ name: String, in attributes: Substring) -> String? {
        guard let range = attributes.range(of: name + "=", options: .caseInsensitive) else { return nil }
        var rest = attributes[range.upperBound...]
        guard let quote = rest.first else { return nil }
        if quote == "\"" || quote == "'" {
            rest = rest.dropFirst()
            return decodeEntities(String(rest.prefix { $0 != quote }))
        }
        return decodeEntities(String(rest.prefix { !$0.isWhitespace && $0 != "/" }))
    }

    private static let named: [Substring: Character] = [
        "amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": "\u{00A0}",
    ]

    /// Decodes HTML character references: `&amp;` `&lt;` `&gt;` `&quot;` `&apos;` `&nbsp;`,
    /// decimal `&#39;` and hexadecimal `&#x27;`. Anything that is not a valid reference
    /// (an unknown name, a missing `;`, an invalid code point) is left as it is.
    public static func decodeEntities(_ text: String) -> String {
        // A byte scan: `contains("&")` here is Foundation's, a CFString search (14k instructions a title).
        guard text.utf8.contains(UInt8(ascii: "&")) else { return text }
        // By bytes: a reference is ASCII, and walking `Character`s (then appending substrings
        // through the generic `append(contentsOf:)`) was most of a page's cost of titles.
        var text = text
        return text.withUTF8 { bytes in
            var result: [UInt8] = []
            result.reserveCapacity(bytes.count)
            var index = 0
            while index < bytes.count {
                guard bytes[index] == UInt8(ascii: "&") else {
                    result.append(bytes[index])
                    index += 1
                    continue
                }
                let nameStart = index + 1
                let window = nameStart..<min(bytes.count, nameStart + 12)
                if let semicolon = bytes[window].firstIndex(of: UInt8(ascii: ";")),
                   let decoded = decodeReference(Substring(decoding: UnsafeBufferPointer(rebasing: bytes[nameStart..<semicolon]),
                                                           as: UTF8.self)) {
                    result.append(contentsOf: String(decoded).utf8)
                    index = semicolon + 1
                } else {
                    result.append(UInt8(ascii: "&"))
                    index = nameStart
                }
            }
            return String(decoding: result, as: UTF8.self)
        }
    }

    /// The character a reference body (between `&` and `;`) stands for.
    private static func decodeReference(_ body: Substring) -> Character? {
        if body.first == "#" {
            let digits = body.dropFirst()
            let value: UInt32?
            if let marker = digits.first, marker == "x" || marker == "X" {
                value = UInt32(digits.dropFirst(), radix: 16)
            } else {
                value = UInt32(digits, radix: 10)
            }
            guard let value, !digits.isEmpty, let scalar = Unicode.Scalar(value) else { return nil }
            return Character(scalar)
        }
        return named[body]
    }

    /// HTML as plain text: `<p>` starts a new paragraph (a blank line), `<br>` a new line,
    /// other tags are removed (link text is kept), entities are decoded.
    public static func plainText(_ html: String) -> String {
        var result = ""
        for token in tokens(html) {
            switch token {
            case .text(let text):
                result += text
            case .tag("p", closing: false, _):
                if !result.isEmpty { result += "\n\n" }
            case .tag("br", _, _):
                result += "\n"
            case .tag:
                break
            }
        }
        return result
    }
}
