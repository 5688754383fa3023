import Foundation

/// Turns the HTML that APIs send (Hacker News comments and titles, Kakao snippets) into text for
/// people. Presentation, so it lives with the apps: the network layer and the API modules pass
/// such fields on as the services sent them.
public enum HTMLText {
    private static let named: [Substring: Character] = [
        "amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": "\u{00A0}",
    ]

    /// Decodes HTML character references: `&amp;` `&lt;` `&gt;` `&quot;` `&apos;` `&nbsp;`,
    /// decimal `&#39;` and hexadecimal `&#x27;`. Anything that is not a valid reference
    /// (an unknown name, a missing `;`, an invalid code point) is left as it is.
    public static func decodeEntities(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count)
        var index = text.startIndex
        while let amp = text[index...].firstIndex(of: "&") {
            result += text[index..<amp]
            let nameStart = text.index(after: amp)
            if let semicolon = text[nameStart...].prefix(12).firstIndex(of: ";"),
               let decoded = decodeReference(text[nameStart..<semicolon]) {
                result.append(decoded)
                index = text.index(after: semicolon)
            } else {
                result.append("&")
                index = nameStart
            }
        }
        result += text[index...]
        return result
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
    /// other tags are removed (link text is kept), then entities are decoded.
    public static func plainText(_ html: String) -> String {
        var result = ""
        var index = html.startIndex
        while let open = html[index...].firstIndex(of: "<") {
            result += html[index..<open]
            guard let close = html[open...].firstIndex(of: ">") else {
                index = open
                break
            }
            let tag = html[html.index(after: open)..<close].lowercased()
            let name = tag.prefix { $0.isLetter || $0 == "/" }
            if name == "p" {
                if !result.isEmpty { result += "\n\n" }
            } else if name == "br" {
                result += "\n"
            }
            index = html.index(after: close)
        }
        result += html[index...]
        return decodeEntities(result)
    }
}
