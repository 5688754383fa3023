import Foundation
import OpenAPIRuntime

/// A request body that streams: bytes in memory, a file read in chunks, an `AsyncSequence` of
/// bytes, or a `multipart/form-data` form built from parts.
///
/// The client never reads a file or a sequence whole: each chunk is read when the transport asks
/// for it, so a 2 GiB upload needs 64 KiB of memory. A body made from `Data` or a file can be sent
/// again (after a redirect, a retry or a token refresh); one made from a sequence is sent once.
///
/// ```swift
/// let photo = try RequestBody.file(photoURL, contentType: "image/jpeg")
/// let upload = client.upload(Endpoint<Receipt>(method: .put, path: ["photos", id]), from: photo)
/// for await progress in upload.progress { print(progress.completed, "of", progress.total ?? 0) }
/// let receipt = try await upload.value
/// ```
public struct RequestBody: Sendable {
    /// The body's media type, sent as `Content-Type` unless the endpoint sets one.
    public var contentType: String?
    /// The length in bytes when known: sent as `Content-Length`; `nil` sends the body chunked.
    public var length: Int64?
    /// Whether the body can be sent more than once.
    public var isReplayable: Bool
    private let make: @Sendable () -> HTTPBody

    /// A body from the bytes `make` produces each time the body is sent.
    /// - Parameters:
    ///   - contentType: the media type.
    ///   - length: the exact number of bytes, when known.
    ///   - replayable: whether `make` can be called again for a second sending.
    ///   - make: produces the body's bytes, pulled chunk by chunk.
    public init(contentType: String?, length: Int64?, replayable: Bool, make: @escaping @Sendable () -> HTTPBody) {
        self.contentType = contentType
        self.length = length
        self.isReplayable = replayable
        self.make = make
    }

    /// The body as swift-openapi-runtime's `HTTPBody`, ready to send.
    public func httpBody() -> HTTPBody { make() }

    /// How much of a file is read at a time: 64 KiB.
    public static let defaultChunkSize = 64 * 1024

    /// Bytes already in memory.
    public static func data(_ data: Data, contentType: String? = nil) -> RequestBody {
        RequestBody(contentType: contentType, length: Int64(data.count), replayable: true) { HTTPBody(data) }
    }

    /// A file, read in chunks of `chunkSize` bytes as they are sent, with its size as
    /// `Content-Length`.
    /// - Throws: ``APIError/fileAccess(path:reason:)`` when the file cannot be read.
    public static func file(_ url: URL, contentType: String? = nil, chunkSize: Int = RequestBody.defaultChunkSize) throws(APIError) -> RequestBody {
        let size: Int64
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
            guard (attributes[.type] as? FileAttributeType) == .typeRegular else {
                throw APIError.fileAccess(path: url.path, reason: "it is not a regular file")
            }
            size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
            // Opened once here so a missing or unreadable file fails now, not mid-request.
            try FileHandle(forReadingFrom: url).close()
        } catch let error as APIError {
            throw error
        } catch {
            throw .fileAccess(path: url.path, reason: "it cannot be read (\(error.localizedDescription))")
        }
        let chunk = max(1, chunkSize)
        return RequestBody(contentType: contentType, length: size, replayable: true) {
            HTTPBody(FileChunks(url: url, chunkSize: chunk, expected: size), length: .known(size), iterationBehavior: .multiple)
        }
    }

    /// An `AsyncSequence` of byte chunks, sent as the sequence produces them, once.
    /// - Parameters:
    ///   - bytes: the chunks (`Data`, `[UInt8]`, `ArraySlice<UInt8>`, …).
    ///   - length: the exact total, when known (sent as `Content-Length`; otherwise the body is
    ///     sent chunked).
    ///   - contentType: the media type.
    public static func stream<Bytes: AsyncSequence & Sendable>(
        _ bytes: Bytes, length: Int64? = nil, contentType: String? = nil
    ) -> RequestBody where Bytes.Element: Sequence & Sendable, Bytes.Element.Element == UInt8 {
        // `HTTPBody` refuses a second iteration of a `.single` body; make() hands out the same one.
        let body = HTTPBody(bytes, length: length.map { .known($0) } ?? .unknown, iterationBehavior: .single)
        return RequestBody(contentType: contentType, length: length, replayable: false) { body }
    }
}

/// A file's bytes, read in chunks on demand; a file that shrank or grew since it was measured
/// fails the body rather than sending a length that lies.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>
    let url: URL
    let chunkSize: Int
    let expected: Int64

    struct AsyncIterator: AsyncIteratorProtocol {
        let url: URL
        let chunkSize: Int
        let expected: Int64
        var handle: FileHandle?
        var read: Int64 = 0
        var done = false

        mutating func next() async throws -> ArraySlice<UInt8>? {
            guard !done else { return nil }
            try Task.checkCancellation()
            if handle == nil { handle = try FileHandle(forReadingFrom: url) }
            let data = try handle?.read(upToCount: chunkSize) ?? Data()
            if data.isEmpty {
                done = true
                try? handle?.close()
                guard read == expected else {
                    throw APIError.fileAccess(path: url.path, reason: "it changed while it was sent (\(read) of \(expected) bytes)")
                }
                return nil
            }
            read += Int64(data.count)
            guard read <= expected else {
                try? handle?.close()
                throw APIError.fileAccess(path: url.path, reason: "it grew while it was sent")
            }
            return ArraySlice(data)
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(url: url, chunkSize: chunkSize, expected: expected)
    }
}

extension HTTPBody {
    /// Whether a request with `body` can be sent again (no body, or one that can be iterated twice).
    static func canBeSentAgain(_ body: HTTPBody?) -> Bool {
        body.map { $0.iterationBehavior == .multiple } ?? true
    }
}
