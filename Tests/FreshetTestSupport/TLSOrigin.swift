import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// A certificate authority and a server certificate made at test time with the `openssl`
/// command: a self-signed P-256 root, and a P-256 leaf it signs for `localhost` and `127.0.0.1`
/// (valid for a day, or expired since yesterday).
public struct TestCertificates: Sendable {
    /// The root, PEM: what a client trusts.
    public var rootPEM: String
    /// The server's certificate, PEM, signed by the root.
    public var serverCertificatePEM: String
    /// The server's private key, PEM.
    public var serverKeyPEM: String
    /// The pin of the root's public key, `sha256/BASE64`, as the `openssl` command computes it
    /// (`x509 -pubkey | pkey -pubin -outform der | dgst -sha256 -binary`, base64).
    public var rootPin: String
    /// The pin of the server certificate's public key, computed the same way.
    public var serverPin: String

    /// Whether the `openssl` command can be run here.
    public static var opensslAvailable: Bool { opensslPath != nil }

    private static let opensslPath: String? = ["/usr/bin/openssl", "/usr/local/bin/openssl", "/opt/homebrew/bin/openssl"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    /// What `openssl` said when it failed.
    public struct Failure: Error, CustomStringConvertible {
        /// The arguments and the command's error output.
        public var description: String
    }

    /// Makes a new root (`commonName`) and a server certificate it signs, valid for a day; with
    /// `expiredServer`, the server certificate was valid from two days ago until yesterday.
    public static func make(commonName: String = "Freshet Test Root", expiredServer: Bool = false) async throws -> TestCertificates {
        guard let openssl = opensslPath else { throw Failure(description: "no openssl command") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("freshet-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n"
            .write(toFile: path("server.ext"), atomically: true, encoding: .utf8)
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        let sign: [String]
        if expiredServer {
            // `openssl x509 -req` (3.0) cannot date a certificate in the past; `openssl ca` can.
            try "[ca]\ndefault_ca = test\n[test]\ndatabase = \(path("index.txt"))\nnew_certs_dir = \(directory.path)\n"
                .appending("serial = \(path("serial"))\ndefault_md = sha256\npolicy = any\n[any]\ncommonName = supplied\n")
                .write(toFile: path("ca.cnf"), atomically: true, encoding: .utf8)
            try "".write(toFile: path("index.txt"), atomically: true, encoding: .utf8)
            try "01\n".write(toFile: path("serial"), atomically: true, encoding: .utf8)
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = "yyyyMMddHHmmss'Z'"
            let now = Date()
            sign = ["ca", "-batch", "-config", path("ca.cnf"), "-cert", path("root.pem"), "-keyfile", path("root.key"),
                    "-in", path("server.csr"), "-out", path("server.pem"), "-notext", "-extfile", path("server.ext"),
                    "-startdate", formatter.string(from: now.addingTimeInterval(-2 * 86_400)),
                    "-enddate", formatter.string(from: now.addingTimeInterval(-86_400))]
        } else {
            sign = ["x509", "-req", "-in", path("server.csr"), "-CA", path("root.pem"), "-CAkey", path("root.key"),
                    "-CAcreateserial", "-out", path("server.pem"), "-days", "1", "-extfile", path("server.ext")]
        }
        for arguments in [
            ["req", "-x509"] + curve + ["-keyout", path("root.key"), "-out", path("root.pem"), "-days", "1",
                                        "-subj", "/CN=\(commonName)",
                                        "-addext", "basicConstraints=critical,CA:TRUE",
                                        "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
            ["req"] + curve + ["-keyout", path("server.key"), "-out", path("server.csr"), "-subj", "/CN=localhost"],
            sign,
        ] {
            try await run(openssl, arguments)
        }
        // The pins as OkHttp's documentation and HPKP compute them, with the openssl command alone.
        for name in ["root", "server"] {
            try await run(openssl, ["x509", "-in", path("\(name).pem"), "-pubkey", "-noout", "-out", path("\(name).pub")])
            try await run(openssl, ["pkey", "-pubin", "-in", path("\(name).pub"), "-outform", "der", "-out", path("\(name).spki")])
            try await run(openssl, ["dgst", "-sha256", "-binary", "-out", path("\(name).sha256"), path("\(name).spki")])
        }
        func pin(_ name: String) throws -> String {
            "sha256/" + (try Data(contentsOf: URL(fileURLWithPath: path("\(name).sha256")))).base64EncodedString()
        }
        return TestCertificates(
            rootPEM: try String(contentsOfFile: path("root.pem"), encoding: .utf8),
            serverCertificatePEM: try String(contentsOfFile: path("server.pem"), encoding: .utf8),
            serverKeyPEM: try String(contentsOfFile: path("server.key"), encoding: .utf8),
            rootPin: try pin("root"), serverPin: try pin("server"))
    }

    /// Writes the root's PEM to a new file in the temporary directory and returns its path.
    public func writeRoot() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("freshet-root-\(UUID().uuidString).pem").path
        try rootPEM.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private static func run(_ executable: String, _ arguments: [String]) async throws {
        let result = try await runProcess(URL(fileURLWithPath: executable), arguments)
        guard result.status == 0 else {
            throw Failure(description: "openssl \(arguments.joined(separator: " ")): \(result.stderr)")
        }
    }

    /// The root as NIOSSL's certificate.
    public func root() throws -> NIOSSLCertificate {
        try NIOSSLCertificate(bytes: Array(rootPEM.utf8), format: .pem)
    }

    /// A client configuration that trusts this root only.
    public func clientConfiguration() throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates([try root()])
        return configuration
    }
}

/// An HTTPS origin on 127.0.0.1 and an ephemeral port (NIO and NIOSSL) presenting the server
/// certificate of a ``TestCertificates``. Every request gets `200` with the body given (`secure`
/// by default), `X-Request-Target` set to the request's target, `X-Accept-Encoding` to the
/// request's `Accept-Encoding` (`-` without one), and the fields given; ``requests`` counts the
/// requests answered.
public final class TLSOrigin: Sendable {
    /// `https://127.0.0.1:PORT`.
    public let url: URL
    private let channel: any Channel
    private let answered: Answered

    /// Starts the origin. `alsoSent`: PEM certificates sent after the server's own in the
    /// handshake (as intermediates would be), whether or not they belong to its chain.
    public init(certificates: TestCertificates, alsoSent: [String] = [], body: String = "secure",
                fields: [(String, String)] = []) async throws {
        let extra = try alsoSent.map { NIOSSLCertificateSource.certificate(try NIOSSLCertificate(bytes: Array($0.utf8), format: .pem)) }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(certificates.serverCertificatePEM.utf8), format: .pem))]
                + extra,
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(certificates.serverKeyPEM.utf8), format: .pem)))
        configuration.applicationProtocols = ["http/1.1"]
        let context = try NIOSSLContext(configuration: configuration)
        let answered = Answered()
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLServerHandler(context: context))
                    try sync.configureHTTPServerPipeline()
                    try sync.addHandler(Answer(answered: answered, body: body, fields: fields))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        self.answered = answered
        url = URL(string: "https://127.0.0.1:\(channel.localAddress?.port ?? 0)")!
    }

    /// The requests answered so far.
    public var requests: Int { answered.count.load(ordering: .relaxed) }

    /// Stops listening (connections already open are left to their clients).
    public func stop() async {
        try? await channel.close()
    }

    private final class Answered: Sendable {
        let count = Atomic<Int>(0)
    }

    private final class Answer: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        private let answered: Answered
        private let body: String
        private let fields: [(String, String)]
        private var target = ""
        private var acceptEncoding = "-"

        init(answered: Answered, body: String, fields: [(String, String)]) {
            self.answered = answered
            self.body = body
            self.fields = fields
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                target = head.uri
                acceptEncoding = head.headers["Accept-Encoding"].first ?? "-"
            case .body:
                break
            case .end:
                // Counted before the answer leaves: a client that has read it finds it counted.
                answered.count.add(1, ordering: .relaxed)
                let body = ByteBuffer(string: self.body)
                var headers: HTTPHeaders = ["Content-Length": String(body.readableBytes), "X-Request-Target": target,
                                            "X-Accept-Encoding": acceptEncoding]
                headers.add(contentsOf: fields)
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
                              promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}

/// Runs `body` with a ``TLSOrigin`` presenting `certificates` (and `alsoSent`), stopping it afterwards whether
/// `body` returns or throws.
public func withTLSOrigin<T: Sendable>(
    _ certificates: TestCertificates, alsoSent: [String] = [], answering answer: String = "secure",
    fields: [(String, String)] = [], _ body: (TLSOrigin) async throws -> T
) async throws -> T {
    let origin = try await TLSOrigin(certificates: certificates, alsoSent: alsoSent, body: answer, fields: fields)
    do {
        let result = try await body(origin)
        await origin.stop()
        return result
    } catch {
        await origin.stop()
        throw error
    }
}
