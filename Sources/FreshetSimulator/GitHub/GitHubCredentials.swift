import Crypto

extension Hashing {
    /// The SHA-256 digest of `token`'s UTF-8 bytes.
    static func sha256(_ token: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(token.utf8)))
    }

    /// The first 12 lowercase hex digits of the SHA-256 of `token`: how the simulator names a
    /// token wherever it shows one (it never shows the token itself).
    static func sha256Prefix(_ token: String) -> String {
        sha256(token).prefix(6).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}

/// What a token may do with a repository: real GitHub adds a `permissions` object to the
/// repository of an authenticated `GET /repos/{owner}/{repo}`. Derived from the token's hash, so
/// one token always gets the same answer and about half of all tokens are admins.
struct RepoPermissions: Equatable, Sendable {
    var admin: Bool
    var maintain: Bool
    var push: Bool
    var triage: Bool
    /// Always `true`: every repository the simulator serves is public.
    var pull: Bool { true }

    /// The permissions of `token` (a token's role from its hash: each role includes the ones below).
    init(token: String) {
        let digest = Hashing.sha256(token)
        // Bit 0 of the first byte decides admin (half of all tokens); the next byte picks a
        // lower role for the others.
        admin = digest[0] & 1 == 1
        let role = Int(digest[1] % 4) // 0 read, 1 triage, 2 write, 3 maintain
        maintain = admin || role >= 3
        push = admin || role >= 2
        triage = admin || role >= 1
    }

    /// The `permissions` object, in GitHub's key order.
    var json: JSON {
        obj(("admin", .bool(admin)), ("maintain", .bool(maintain)), ("push", .bool(push)), ("triage", .bool(triage)), ("pull", .bool(pull)))
    }
}
