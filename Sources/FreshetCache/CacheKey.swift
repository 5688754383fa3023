import Crypto
import Foundation
import Freshet
import HTTPTypes
import Synchronization

/// How requests map to cache entries. Nothing secret is ever stored in a key: URLs and
/// credentials are hashed.
enum CacheKey {
    /// The primary key: SHA-256 of the URL and, in a private cache, of the credentials that select
    /// whose response it is (`Authorization`, which also carries Kakao's `KakaoAK` key, and
    /// `Cookie`), so a client that switches tokens never gets another account's answers.
    ///
    /// A shared cache keys on the URL alone, as RFC 9111 §2 says: what it may share is decided
    /// when storing (§3.5: never `private`; a response to an authenticated request only when it
    /// is `public`, `s-maxage` or `must-revalidate`), and `Vary` separates the rest.
    static func primary(url: URL, request: HTTPRequest, mode: CacheMode = .private) -> String {
        // Hashed piece by piece: "GET <url>\0", then in a private cache each field's lines joined
        // by "\n", with "\0" between the two (every lookup computes it: no string is built).
        var hasher = SHA256()
        update(&hasher, "GET ")
        update(&hasher, url.absoluteString)
        update(&hasher, "\u{0}")
        if mode == .private { updateCredential(&hasher, authorization: request.headerFields[values: .authorization],
                                               cookie: request.headerFields[values: .cookie]) }
        return hex(hasher.finalize())
    }

    /// Feeds `hasher` a credential's text: the `Authorization` lines joined by "\n", "\0", the
    /// `Cookie` lines joined by "\n" (a private key's tail, and ``RequestCredential/hash``).
    static func updateCredential(_ hasher: inout SHA256, authorization: [String], cookie: [String]) {
        for (index, value) in authorization.enumerated() { update(&hasher, index == 0 ? value : "\n" + value) }
        update(&hasher, "\u{0}")
        for (index, value) in cookie.enumerated() { update(&hasher, index == 0 ? value : "\n" + value) }
    }

    private static func update(_ hasher: inout SHA256, _ text: String) {
        var text = text
        text.withUTF8 { hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }
    }

    /// The field names a response's `Vary` nominates, lowercased and de-duplicated; `["*"]` for `Vary: *`.
    static func varyNames(_ response: HTTPFields) -> [String] {
        var raw: String?
        for field in response where field.name == .vary {
            raw = raw.map { $0 + "," + field.value } ?? field.value
        }
        // Every lookup asks this of each stored response, and a store holds few distinct `Vary`s.
        guard let raw else { return [] }
        return varyNamesMemo.value(for: raw) { parseVaryNames(response) }
    }

    private static let varyNamesMemo = BoundedMemo<[String]>(capacity: 256)

    private static func parseVaryNames(_ response: HTTPFields) -> [String] {
        let names = response[values: .vary]
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingOWS().lowercased() }
            .filter { !$0.isEmpty }
        if names.contains("*") { return ["*"] }
        return Array(Set(names)).sorted()
    }

    /// Request fields whose members are compared without regard to order, case or spaces
    /// (`en, de` selects what `DE,EN` does).
    static let caseInsensitiveLists: Set<String> = ["accept-language", "accept-encoding"]

    /// The secondary key: a hash of the request's normalised values for the nominated fields
    /// (whitespace collapsed, several lines joined; ``caseInsensitiveLists`` also sorted and
    /// lowercased), so `Vary: Authorization` never stores a token.
    /// - Parameter normalizingEncoding: key `Accept-Encoding` by what it means to a cache that
    ///   stores gzip or identity only: `gzip` when it accepts gzip, else `identity` (Varnish's
    ///   normalisation), so every client's request selects the one stored representation.
    static func variant(varyNames names: [String], request: HTTPFields, normalizingEncoding: Bool = false) -> String {
        guard !names.isEmpty else { return "" }
        // Remembered by what it is made of, the nominated lines as sent: a lookup normalises and
        // hashes them (some 40k instructions) where the same few requests recur. Never for
        // credentials, which are kept out of every memo.
        guard !names.contains(where: { secretFields.contains($0) }) else {
            return computedVariant(varyNames: names, request: request, normalizingEncoding: normalizingEncoding)
        }
        var raw = normalizingEncoding ? "1\n" : "0\n"
        for name in names {
            raw += name
            raw += "\n"
        }
        for field in request where names.contains(field.name.canonicalName) {
            raw += "\n"
            raw += field.name.canonicalName
            raw += ":"
            raw += field.value
        }
        return variantMemo.value(for: raw) {
            computedVariant(varyNames: names, request: request, normalizingEncoding: normalizingEncoding)
        }
    }

    /// Fields whose values no memo keeps.
    private static let secretFields: Set<String> = ["authorization", "cookie", "proxy-authorization"]

    private static let variantMemo = BoundedMemo<String>(capacity: 1024)

    private static func computedVariant(varyNames names: [String], request: HTTPFields, normalizingEncoding: Bool) -> String {
        let text = names.map { name -> String in
            if normalizingEncoding, name == "accept-encoding" {
                return "\(name)=\(AcceptEncoding.acceptsGzip(request) ? "gzip" : "identity")"
            }
            let values = HTTPField.Name(name).map { request[values: $0] } ?? []
            var members = values.joined(separator: ",")
                .split(separator: ",")
                .map { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ") }
            if caseInsensitiveLists.contains(name) {
                // Lists of case-insensitive tokens with weights: order, case and spaces carry no meaning.
                members = members.map { $0.lowercased().filter { $0 != " " } }.filter { !$0.isEmpty }.sorted()
            }
            return "\(name)=\(members.joined(separator: ","))"
        }.joined(separator: "\n")
        return sha256(text)
    }

    /// The SHA-256 of `text` in lowercase hex (64 characters), in one allocation: it runs on
    /// every lookup.
    static func sha256(_ text: String) -> String {
        var hasher = SHA256()
        update(&hasher, text)
        return hex(hasher.finalize())
    }

    /// `digest` in lowercase hex, read from its bytes (its iterator allocates).
    static func hex(_ digest: SHA256.Digest) -> String {
        digest.withUnsafeBytes { bytes in
            String(unsafeUninitializedCapacity: 2 * bytes.count) { buffer in
                for (index, byte) in bytes.enumerated() {
                    buffer[2 * index] = hexDigits[Int(byte >> 4)]
                    buffer[2 * index + 1] = hexDigits[Int(byte & 0x0F)]
                }
                return 2 * bytes.count
            }
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}

/// A bounded memo of values by text: past `capacity` entries it starts over.
final class BoundedMemo<Value: Sendable>: Sendable {
    private let table = Mutex<[String: Value]>([:])
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// The value kept for `key`, or `make`'s (run outside the lock), kept.
    func value(for key: String, make: () -> Value) -> Value {
        if let known = table.withLock({ $0[key] }) { return known }
        let made = make()
        table.withLock { table in
            if table.count >= capacity { table.removeAll(keepingCapacity: true) }
            table[key] = made
        }
        return made
    }
}
