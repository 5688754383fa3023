import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A public-key pin: the SHA-256 of a certificate's SubjectPublicKeyInfo (its DER encoding),
/// written `sha256/BASE64` as OkHttp and HPKP write it.
///
/// The pin of a certificate in a PEM file is what
/// `openssl x509 -in cert.pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`
/// prints, after `sha256/`. A pin names a key, not a certificate: a certificate renewed with the
/// same key keeps its pin. A hash of a public key is public; a pin is no secret.
public struct SPKIPin: Hashable, Sendable, CustomStringConvertible {
    /// The 32 bytes of the SHA-256 digest.
    public let sha256: [UInt8]

    /// A pin from the 32 bytes of a SHA-256 digest of a SubjectPublicKeyInfo.
    /// - Throws: ``TLSTrust/ConfigurationError`` when `digest` is not 32 bytes long.
    public init(sha256 digest: some Sequence<UInt8>) throws(TLSTrust.ConfigurationError) {
        let bytes = Array(digest)
        guard bytes.count == SHA256.byteCount else {
            throw TLSTrust.ConfigurationError("a SHA-256 pin has 32 bytes, not \(bytes.count)")
        }
        sha256 = bytes
    }

    /// Parses `sha256/BASE64` (the base64 of 32 bytes; the `sha256/` prefix may be left out).
    /// - Throws: ``TLSTrust/ConfigurationError`` naming what is wrong with `text`.
    public init(_ text: String) throws(TLSTrust.ConfigurationError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        var encoded = Substring(trimmed)
        if let slash = encoded.firstIndex(of: "/"), !encoded[..<slash].contains(where: { !$0.isLetter && !$0.isNumber }) {
            let algorithm = encoded[..<slash].lowercased()
            guard algorithm == "sha256" else {
                throw TLSTrust.ConfigurationError("the pin \"\(trimmed)\" uses \(algorithm); only sha256/BASE64 pins are supported")
            }
            encoded = encoded[encoded.index(after: slash)...]
        }
        guard let data = Data(base64Encoded: String(encoded)) else {
            throw TLSTrust.ConfigurationError("the pin \"\(trimmed)\" is not sha256/ followed by base64")
        }
        guard data.count == SHA256.byteCount else {
            throw TLSTrust.ConfigurationError(
                "the pin \"\(trimmed)\" decodes to \(data.count) bytes; a SHA-256 pin has 32")
        }
        sha256 = Array(data)
    }

    /// The pin of `certificate`'s public key.
    public init(publicKeyOf certificate: NIOSSLCertificate) throws {
        self.init(spki: try certificate.extractPublicKey().toSPKIBytes())
    }

    /// The pin of a SubjectPublicKeyInfo, given DER-encoded.
    public init(spki: some Sequence<UInt8>) {
        sha256 = Array(SHA256.hash(data: Array(spki)))
    }

    /// The pin of a swift-certificates public key (its SubjectPublicKeyInfo, DER-encoded).
    init(publicKey: Certificate.PublicKey) throws {
        var serializer = DER.Serializer()
        try serializer.serialize(publicKey)
        self.init(spki: serializer.serializedBytes)
    }

    /// `sha256/BASE64`.
    public var description: String { "sha256/" + Data(sha256).base64EncodedString() }
}

/// Which servers an `https` connection accepts: the trust roots its certificate chain must lead
/// to, and optionally public-key pins, one of which must match a key of that verified chain.
///
/// Verification is never weakened: the chain must lead to one of ``roots``, every certificate must
/// be valid now, and the server's certificate must name the host connected to. With
/// ``pins``, a connection is accepted only if, in addition, some certificate of the *verified*
/// chain — the server's, an intermediate's or the root's — has a pinned public key (OkHttp's
/// rule). Certificates the server sent that are not on the verified path never count, so a
/// pinned CA's certificate merely included by an impostor does not get it accepted.
///
/// ```swift
/// let trust = try TLSTrust(rootsPEMFile: "/etc/myapp/ca.pem",
///                          pins: [try SPKIPin("sha256/47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")])
/// let transport = Transports.asyncHTTPClient(trust: trust)
/// ```
///
/// See <doc:TrustAndPinning> for how each transport applies it.
public struct TLSTrust: Hashable, Sendable {
    /// The certificates a server's chain must lead to.
    public enum Roots: Hashable, Sendable {
        /// The system's trust store.
        ///
        /// With ``TLSTrust/pins``, the chain is verified by swift-certificates, which finds the
        /// system's roots on Linux only: on Apple platforms, pin with ``certificates(_:)`` roots.
        case system
        /// These certificates only (a private CA, or the public CAs you choose).
        case certificates([NIOSSLCertificate])
    }

    /// The roots a server's certificate chain must lead to.
    public var roots: Roots
    /// Public-key pins; empty: no pinning (the roots alone decide).
    public var pins: [SPKIPin]

    /// The system's roots, no pins: what every transport does by default.
    public static let system = TLSTrust(roots: .system)

    /// A trust of `roots` and `pins`.
    public init(roots: Roots = .system, pins: [SPKIPin] = []) {
        self.roots = roots
        self.pins = pins
    }

    /// Trusts the certificates in `pem` (one or more `BEGIN CERTIFICATE` blocks) as the roots.
    /// - Throws: ``ConfigurationError`` when `pem` holds no certificate or one that does not parse.
    public init(rootsPEM pem: String, pins: [SPKIPin] = []) throws(ConfigurationError) {
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8))
        } catch {
            throw ConfigurationError("the trust roots are not PEM certificates (\(error))")
        }
        guard !certificates.isEmpty else { throw ConfigurationError("the trust roots hold no PEM certificate") }
        self.init(roots: .certificates(certificates), pins: pins)
    }

    /// Trusts the PEM certificates of the files at `paths` as the roots, read now.
    /// - Throws: ``ConfigurationError`` naming the file that cannot be read or holds no certificate.
    public init(rootsPEMFiles paths: [String], pins: [SPKIPin] = []) throws(ConfigurationError) {
        var certificates: [NIOSSLCertificate] = []
        for path in paths {
            let text: String
            do {
                text = try String(contentsOfFile: path, encoding: .utf8)
            } catch {
                throw ConfigurationError("cannot read the CA file \(path): \((error as NSError).localizedDescription)")
            }
            do {
                let found = try NIOSSLCertificate.fromPEMBytes(Array(text.utf8))
                guard !found.isEmpty else { throw ConfigurationError("no certificate") }
                certificates += found
            } catch {
                throw ConfigurationError("the CA file \(path) holds no PEM certificate")
            }
        }
        guard !certificates.isEmpty else { throw ConfigurationError("no CA file given") }
        self.init(roots: .certificates(certificates), pins: pins)
    }

    /// Trusts the PEM certificates of the file at `path` as the roots, read now.
    /// - Throws: ``ConfigurationError`` when the file cannot be read or holds no certificate.
    public init(rootsPEMFile path: String, pins: [SPKIPin] = []) throws(ConfigurationError) {
        try self.init(rootsPEMFiles: [path], pins: pins)
    }

    /// What is wrong with `SSL_CERT_FILE` and `SSL_CERT_DIR` in `environment` that can be told
    /// without reading a certificate: a file that cannot be read, a folder that is not one;
    /// `nil` when nothing is (what the certificates hold is judged by ``fromEnvironment(_:)``).
    public static func environmentProblem(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> ConfigurationError? {
        if let file = environment["SSL_CERT_FILE"], !file.isEmpty, !FileManager.default.isReadableFile(atPath: file) {
            return ConfigurationError("SSL_CERT_FILE: cannot read the file \(file)")
        }
        for directory in (environment["SSL_CERT_DIR"] ?? "").split(separator: ":").map(String.init) {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
                return ConfigurationError("SSL_CERT_DIR: \(directory) is not a readable folder")
            }
        }
        return nil
    }

    /// The roots OpenSSL's environment names, as curl, Python and Go read it: the PEM certificates
    /// of the file `SSL_CERT_FILE` and of every file in the directories of `SSL_CERT_DIR`
    /// (separated by `:`; files that hold no certificate are passed over, as OpenSSL's hashed
    /// directories hold links and other files), in place of the system's. `nil` when neither is set.
    /// - Throws: ``ConfigurationError`` naming the variable when its file or directory cannot be
    ///   read, or when they hold no certificate at all.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigurationError) -> TLSTrust? {
        let file = environment["SSL_CERT_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        let directories = (environment["SSL_CERT_DIR"] ?? "").split(separator: ":").map(String.init)
        guard file != nil || !directories.isEmpty else { return nil }
        var certificates: [NIOSSLCertificate] = []
        if let file {
            do {
                certificates += try TLSTrust(rootsPEMFile: file).certificates
            } catch {
                throw ConfigurationError("SSL_CERT_FILE: \(error.description)")
            }
        }
        for directory in directories {
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
            } catch {
                throw ConfigurationError("SSL_CERT_DIR: cannot read the directory \(directory): \((error as NSError).localizedDescription)")
            }
            for name in names {
                let path = (directory as NSString).appendingPathComponent(name)
                guard let pem = try? String(contentsOfFile: path, encoding: .utf8), pem.contains("-----BEGIN CERTIFICATE-----"),
                      let found = try? NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)) else { continue }
                certificates += found
            }
        }
        guard !certificates.isEmpty else {
            throw ConfigurationError("SSL_CERT_DIR: no PEM certificate in \(directories.joined(separator: ", "))")
        }
        return TLSTrust(roots: .certificates(certificates))
    }

    /// The certificates of ``roots``, or none for the system's.
    private var certificates: [NIOSSLCertificate] {
        if case .certificates(let list) = roots { return list }
        return []
    }

    /// A client TLS configuration trusting ``roots`` (NIOSSL's defaults otherwise). The pins are
    /// not part of it: NIOSSL's configuration has no place for them; ``HTTP1ConnectionPool`` and
    /// ``Transports`` apply them.
    public func clientConfiguration() -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch roots {
        case .system: configuration.trustRoots = .default
        case .certificates(let certificates): configuration.trustRoots = .certificates(certificates)
        }
        return configuration
    }

    /// A trust setting that cannot be used: a malformed pin, an unreadable CA file.
    public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
        /// What is wrong.
        public var description: String

        /// A configuration error saying `description`.
        public init(_ description: String) {
            self.description = description
        }
    }
}

/// An `https` server's certificate chain was refused: it does not lead to a trusted root, a
/// certificate has expired (or is not valid yet), it names another host, or none of its keys
/// matched the pins.
///
/// Transports throw it as it is (it is not a `TransportFailure`, so the retry middleware does
/// not retry it: trying again would meet the same certificate); `APIClient` reports it as
/// `APIError.transport` with this failure as its `cause` (reach it with
/// `error.underlyingError as? TLSTrustFailure`) and ``description`` as the reason.
public struct TLSTrustFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why the chain was refused.
    public enum Kind: Sendable, Equatable {
        /// The chain was verified, but none of its public keys is pinned.
        case pinMismatch
        /// A certificate of the chain has expired or is not valid yet.
        case expired
        /// The chain does not lead to a trusted root.
        case unknownRoot
        /// The server's certificate does not name the host connected to.
        case wrongHost
        /// Refused for another reason (given in ``reason``), or by a TLS stack that does not
        /// say why (AsyncHTTPClient's).
        case notTrusted
    }

    /// Why the chain was refused.
    public var kind: Kind
    /// The host connected to.
    public var host: String
    /// What was wrong, in words.
    public var reason: String
    /// The pins that were required (for ``Kind/pinMismatch``).
    public var expectedPins: [SPKIPin]
    /// The pins of the verified chain's keys, server's certificate first (for ``Kind/pinMismatch``).
    public var chainPins: [SPKIPin]

    /// A failure of `kind` connecting to `host`.
    public init(_ kind: Kind, host: String, reason: String, expectedPins: [SPKIPin] = [], chainPins: [SPKIPin] = []) {
        self.kind = kind
        self.host = host
        self.reason = reason
        self.expectedPins = expectedPins
        self.chainPins = chainPins
    }

    /// `TLS: <host>: <reason>`, with the pins for a pin mismatch (hashes of public keys, no secrets).
    public var description: String {
        var text = "TLS: \(host): \(reason)"
        if kind == .pinMismatch {
            text += " (pinned: \(expectedPins.map(\.description).joined(separator: ", "));"
                + " the chain's keys: \(chainPins.map(\.description).joined(separator: ", ")))"
        }
        return text
    }
}

/// Verifies a server's certificate chain the way BoringSSL would (swift-certificates' RFC 5280
/// and server identity policies, against the trust roots), then requires a pinned key in the
/// verified chain. Used as NIOSSL's custom verification callback, which replaces BoringSSL's
/// verification: it is the only way to learn the *verified* chain, which the pins are checked
/// against.
struct PinnedChainVerifier: Sendable {
    let roots: CertificateStore
    let pins: [SPKIPin]

    /// A verifier trusting `tls`'s roots (its `trustRoots` and `additionalTrustRoots`) and
    /// requiring one of `pins`.
    init(tls: TLSConfiguration, pins: [SPKIPin]) throws {
        var certificates: [NIOSSLCertificate] = []
        var system = false
        switch tls.trustRoots {
        case .none, .default?: system = true
        case .file(let path)?: certificates += try NIOSSLCertificate.fromPEMFile(path)
        case .certificates(let given)?: certificates += given
        }
        for additional in tls.additionalTrustRoots {
            switch additional {
            case .file(let path): certificates += try NIOSSLCertificate.fromPEMFile(path)
            case .certificates(let given): certificates += given
            }
        }
        var store: CertificateStore
        if system {
            #if os(Linux)
            store = CertificateStore.systemTrustRoots
            #else
            throw TLSTrust.ConfigurationError(
                "pins with the system's trust roots are supported on Linux only; give the roots (TLSTrust.Roots.certificates)")
            #endif
        } else {
            store = CertificateStore()
        }
        store.append(contentsOf: try certificates.map { try Certificate(derEncoded: $0.toDERBytes()) })
        self.roots = store
        self.pins = pins
    }

    /// The verified chain of `presented` (server's certificate first) for `host`, or the reason
    /// it is refused.
    func verify(_ presented: [NIOSSLCertificate], host: String) async throws(TLSTrustFailure) -> [Certificate] {
        let parsed: [Certificate]
        do {
            parsed = try presented.map { try Certificate(derEncoded: $0.toDERBytes()) }
        } catch {
            throw TLSTrustFailure(.notTrusted, host: host, reason: "the server's certificate does not parse (\(error))")
        }
        guard let leaf = parsed.first else {
            throw TLSTrustFailure(.notTrusted, host: host, reason: "the server sent no certificate")
        }
        let isIP = host.isIPAddress
        var verifier = Verifier(rootCertificates: roots) {
            RFC5280Policy()
            ServerIdentityPolicy(serverHostname: isIP ? nil : host, serverIP: isIP ? host : nil)
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore(parsed.dropFirst()))
        switch result {
        case .validCertificate(let chain):
            let chainPins: [SPKIPin]
            do {
                chainPins = try chain.map { try SPKIPin(publicKey: $0.publicKey) }
            } catch {
                throw TLSTrustFailure(.notTrusted, host: host, reason: "a public key of the chain does not encode (\(error))")
            }
            guard chainPins.contains(where: pins.contains) else {
                throw TLSTrustFailure(
                    .pinMismatch, host: host,
                    reason: "the certificate chain is trusted, but the server's key matched none of the pins",
                    expectedPins: pins, chainPins: chainPins)
            }
            return Array(chain)
        case .couldNotValidate(let failures):
            throw Self.failure(failures.map { $0.policyFailureReason.description }, leaf: leaf, host: host)
        }
    }

    /// The failure for a chain swift-certificates could not validate: no candidate chain reached a
    /// root (no policy failures), or the policies' reasons.
    private static func failure(_ reasons: [String], leaf: Certificate, host: String) -> TLSTrustFailure {
        let now = Date()
        if reasons.isEmpty {
            return TLSTrustFailure(
                .unknownRoot, host: host,
                reason: "the server's certificate (\(leaf.subject)) does not lead to a trusted root (issuer: \(leaf.issuer))")
        }
        // swift-certificates says why only in words (its RFC 5280 and server identity policies').
        if reasons.contains(where: { $0.contains("has expired") || $0.contains("not yet valid") || $0.contains("invalid expiry") }) {
            let validity = "valid from \(leaf.notValidBefore.formatted(.iso8601)) to \(leaf.notValidAfter.formatted(.iso8601))"
            if leaf.notValidAfter < now {
                return TLSTrustFailure(.expired, host: host, reason: "the server's certificate (\(leaf.subject)) has expired: \(validity)")
            }
            if leaf.notValidBefore > now {
                return TLSTrustFailure(.expired, host: host, reason: "the server's certificate (\(leaf.subject)) is not valid yet: \(validity)")
            }
            return TLSTrustFailure(.expired, host: host, reason: "a certificate of the chain has expired or is not valid yet")
        }
        if reasons.contains(where: { $0.contains("SAN") || $0.contains("common name") }) {
            return TLSTrustFailure(.wrongHost, host: host, reason: "the server's certificate (\(leaf.subject)) is not for \(host)")
        }
        return TLSTrustFailure(.notTrusted, host: host, reason: "the certificate chain was refused: \(reasons.joined(separator: "; "))")
    }
}
