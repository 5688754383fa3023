import AsyncHTTPClient
import Foundation
import Freshet
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import OpenAPIRuntime

/// The one mapping of networking errors (NIO's, NIOSSL's, AsyncHTTPClient's, the OS's) to
/// `TransportFailure` kinds, for ``ClassifyingTransport`` and ``HTTP1Transport``.
enum TransportErrorClassifier {
    /// `error` as a `TransportFailure`, or `nil` when it is not a networking error known here.
    ///
    /// - Parameters:
    ///   - requestSent: whether the request may have reached the origin: `false` when no
    ///     connection was made (a refused or failed connect is then `unreachable`, and so is an
    ///     unknown error), `true` once it was written (a refusal or reset is then
    ///     `connectionLost`), `nil` when the transport does not say (AsyncHTTPClient).
    ///   - deadlineClosed: one of our own deadlines closed the connection (whatever error the
    ///     closing caused is then a timeout).
    static func failure(for error: any Error, requestSent: Bool? = nil, deadlineClosed: Bool = false) -> TransportFailure? {
        if Task.isCancelled || error is CancellationError {
            return TransportFailure(.cancelled, reason: "cancelled")
        }
        if let failure = error as? TransportFailure { return failure }
        if deadlineClosed { return TransportFailure(.timedOut, reason: "the origin did not answer in time") }
        let afterConnect: TransportFailure.Kind = requestSent == false ? .unreachable : .connectionLost
        switch error {
        case let error as HTTPClientError:
            return clientFailure(error)
        case let error as HTTPParserError:
            return parserFailure(error)
        case is NIOHTTPDecoderError:
            // AsyncHTTPClient's callers have always seen its decoder and TLS errors as they are
            // (and the retry middleware does not retry them); HTTP1Transport classifies its own.
            guard requestSent != nil else { return nil }
            return TransportFailure(.connectionLost, reason: "malformed response (\(error))")
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED where requestSent != true:
                return TransportFailure(.unreachable, reason: "connection refused")
            case ENETUNREACH where requestSent != true, EHOSTUNREACH where requestSent != true:
                return TransportFailure(.unreachable, reason: "no route to host")
            case ECONNRESET, EPIPE:
                return TransportFailure(.connectionLost, reason: "connection reset by peer")
            default:
                return TransportFailure(afterConnect, reason: "I/O error \(error.errnoCode)")
            }
        case let error as ChannelError:
            switch error {
            case .connectTimeout: return TransportFailure(.unreachable, reason: "connect timed out")
            case .ioOnClosedChannel, .alreadyClosed, .eof, .outputClosed, .inputClosed:
                return TransportFailure(.connectionLost, reason: "the server closed the connection early")
            default: return TransportFailure(afterConnect, reason: String(describing: error))
            }
        case is ConnectionClosed:
            return TransportFailure(.connectionLost, reason: "the server closed the connection early")
        case is NIOConnectionError:
            return TransportFailure(.unreachable, reason: "connection failed")
        case is NIOSSLError, is BoringSSLError, is NIOSSLExtraError:
            guard requestSent != nil else { return nil }
            return TransportFailure(.connectionLost, reason: "TLS failed (\(error))")
        case let error as ClientError:
            return Self.failure(for: error.underlyingError, requestSent: requestSent)
        default:
            return nil
        }
    }

    /// `error` as a ``TLSTrustFailure`` when it is BoringSSL refusing the certificate chain of
    /// `host` in the handshake (`CERTIFICATE_VERIFY_FAILED`); BoringSSL does not say why.
    static func trustFailure(for error: any Error, host: String) -> TLSTrustFailure? {
        guard case .handshakeFailed(let underlying) = error as? NIOSSLError,
              String(describing: underlying).contains("CERTIFICATE_VERIFY_FAILED") else { return nil }
        return TLSTrustFailure(
            .notTrusted, host: host,
            reason: "the server's certificate chain was refused: it does not lead to a trusted root, has expired,"
                + " or is not for this host (BoringSSL's CERTIFICATE_VERIFY_FAILED does not say which)")
    }

    /// Whether `error` says the connection was closed or reset (by the peer, or found closed).
    static func isClose(_ error: any Error) -> Bool {
        switch error {
        case is ConnectionClosed: return true
        case let error as ChannelError: return [.ioOnClosedChannel, .alreadyClosed, .eof].contains(error)
        case let error as IOError: return error.errnoCode == ECONNRESET || error.errnoCode == EPIPE
        default: return false
        }
    }

    private static func clientFailure(_ error: HTTPClientError) -> TransportFailure {
        switch error {
        case .connectTimeout, .getConnectionFromPoolTimeout:
            // No connection was made: the request never left (retrying it is always safe).
            return TransportFailure(.unreachable, reason: "connect timed out")
        case .deadlineExceeded, .readTimeout, .writeTimeout:
            return TransportFailure(.timedOut, reason: "request timed out")
        case .cancelled:
            return TransportFailure(.cancelled, reason: "cancelled")
        case .remoteConnectionClosed:
            return TransportFailure(.connectionLost, reason: "the server closed the connection early")
        case .bodyLengthMismatch:
            return TransportFailure(.connectionLost, reason: "the body was shorter than its Content-Length")
        default:
            return TransportFailure(.connectionLost, reason: String(describing: error))
        }
    }

    /// A response that broke off or is not HTTP: `invalidEOFState` is a connection closed before
    /// the body announced by Content-Length or chunked framing was complete.
    private static func parserFailure(_ error: HTTPParserError) -> TransportFailure {
        let reason = error == .invalidEOFState
            ? "the connection closed before the response was complete" : "malformed response (\(error.debugDescription))"
        return TransportFailure(.connectionLost, reason: reason)
    }
}
