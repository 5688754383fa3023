import Foundation
import OpenAPIRuntime

/// A `multipart/form-data` body (RFC 7578) built from fields and files, streamed when sent:
/// a file part is read in chunks, never whole, and the total length is known up front, so it
/// goes out with `Content-Length`.
///
/// ```swift
/// var form = MultipartFormData()
/// form.append("Holiday", name: "title")
/// try form.appendFile(at: photoURL, name: "photo", contentType: "image/jpeg")
/// let response = try await client.upload(endpoint, from: .multipart(form)).value
/// ```
public struct MultipartFormData: Sendable {
    /// How a file name outside plain ASCII is written in `Content-Disposition`. (Field names are
    /// always written as browsers write them: UTF-8, with `"`, CR and LF percent-encoded.)
    public enum NameEncoding: Sendable {
        /// RFC 7578 §4.2: bytes outside printable ASCII, and `"`, `\` and `%`, are percent-encoded,
        /// as in a `file:` URI, so the header stays ASCII (`résumé.pdf` → `r%C3%A9sum%C3%A9.pdf`).
        case percentEncoded
        /// What browsers send (the HTML standard): UTF-8 as is, with only `"`, CR and LF
        /// percent-encoded.
        case utf8
    }

    /// One part of the form.
    public struct Part: Sendable {
        /// The part's header fields, written as given (the `Content-Disposition` is made from the name).
        var headers: [(String, String)]
        var content: Content

        enum Content: Sendable {
            case data(Data)
            case file(URL, size: Int64)
        }

        var length: Int64 {
            switch content {
            case .data(let data): return Int64(data.count)
            case .file(_, let size): return size
            }
        }
    }

    /// The boundary between parts.
    public let boundary: String
    /// How file names are written (default ``NameEncoding/percentEncoded``).
    public var nameEncoding: NameEncoding
    /// The parts, in order.
    public private(set) var parts: [Part] = []

    /// An empty form with a random boundary (or `boundary`).
    public init(boundary: String? = nil, nameEncoding: NameEncoding = .percentEncoded) {
        self.boundary = boundary ?? Self.randomBoundary()
        self.nameEncoding = nameEncoding
    }

    /// `multipart/form-data; boundary=…`.
    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// Adds a text field.
    public mutating func append(_ value: String, name: String) {
        parts.append(Part(headers: [("Content-Disposition", disposition(name: name, filename: nil))],
                          content: .data(Data(value.utf8))))
    }

    /// Adds a file part from bytes in memory.
    public mutating func append(_ data: Data, name: String, filename: String, contentType: String = "application/octet-stream") {
        parts.append(Part(headers: [("Content-Disposition", disposition(name: name, filename: filename)),
                                    ("Content-Type", contentType)],
                          content: .data(data)))
    }

    /// Adds a file part read from disk when the form is sent.
    /// - Parameters:
    ///   - url: the file.
    ///   - name: the form field's name.
    ///   - filename: the name sent (default: the file's own name).
    ///   - contentType: the part's media type.
    /// - Throws: ``APIError/fileAccess(path:reason:)`` when the file cannot be read.
    public mutating func appendFile(at url: URL, name: String, filename: String? = nil,
                                    contentType: String = "application/octet-stream") throws(APIError) {
        let body = try RequestBody.file(url)
        parts.append(Part(headers: [("Content-Disposition", disposition(name: name, filename: filename ?? url.lastPathComponent)),
                                    ("Content-Type", contentType)],
                          content: .file(url, size: body.length ?? 0)))
    }

    /// The exact length of the encoded form.
    public var length: Int64 { Self.length(of: segments()) }

    static func length(of segments: [Segment]) -> Int64 {
        segments.reduce(0) { total, segment in
            switch segment {
            case .bytes(let bytes): return total + Int64(bytes.count)
            case .file(_, let size): return total + size
            }
        }
    }

    /// The form as a streamed request body.
    public var body: RequestBody {
        let segments = segments()
        let length = Self.length(of: segments)
        return RequestBody(contentType: contentType, length: length, replayable: true) {
            HTTPBody(MultipartChunks(segments: segments), length: .known(length), iterationBehavior: .multiple)
        }
    }

    // MARK: - Encoding

    enum Segment: Sendable {
        case bytes([UInt8])
        case file(URL, Int64)
    }

    /// The body as bytes in memory and files to read, in order.
    func segments() -> [Segment] {
        var out: [Segment] = []
        for part in parts {
            var head = "--\(boundary)\r\n"
            for (name, value) in part.headers { head += "\(name): \(value)\r\n" }
            head += "\r\n"
            out.append(.bytes(Array(head.utf8)))
            switch part.content {
            case .data(let data): out.append(.bytes(Array(data)))
            case .file(let url, let size): out.append(.file(url, size))
            }
            out.append(.bytes(Array("\r\n".utf8)))
        }
        out.append(.bytes(Array("--\(boundary)--\r\n".utf8)))
        return out
    }

    private func disposition(name: String, filename: String?) -> String {
        var value = "form-data; name=\"\(Self.encode(name, .utf8))\""
        if let filename { value += "; filename=\"\(Self.encode(filename, nameEncoding))\"" }
        return value
    }

    /// A name as a quoted-string's content, encoded as `encoding` says.
    static func encode(_ name: String, _ encoding: NameEncoding) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in name.utf8 {
            let escape: Bool
            switch encoding {
            case .percentEncoded:
                escape = byte < 0x20 || byte > 0x7E || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
                    || byte == UInt8(ascii: "%")
            case .utf8:
                escape = byte == UInt8(ascii: "\"") || byte == 0x0D || byte == 0x0A
            }
            if escape {
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func randomBoundary() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return "freshet-" + String((0..<24).map { _ in alphabet.randomElement()! })
    }
}

extension RequestBody {
    /// A `multipart/form-data` form, streamed (see ``MultipartFormData``).
    public static func multipart(_ form: MultipartFormData) -> RequestBody { form.body }
}

/// The encoded form, chunk by chunk: in-memory segments as they are, files read in chunks.
struct MultipartChunks: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>
    let segments: [MultipartFormData.Segment]

    struct AsyncIterator: AsyncIteratorProtocol {
        let segments: [MultipartFormData.Segment]
        var index = 0
        var file: FileChunks.AsyncIterator?

        mutating func next() async throws -> ArraySlice<UInt8>? {
            while true {
                if var current = file {
                    let chunk = try await current.next()
                    file = current
                    if let chunk { return chunk }
                    file = nil
                    index += 1
                    continue
                }
                guard index < segments.count else { return nil }
                switch segments[index] {
                case .bytes(let bytes):
                    index += 1
                    if !bytes.isEmpty { return bytes[...] }
                case .file(let url, let size):
                    file = FileChunks(url: url, chunkSize: RequestBody.defaultChunkSize, expected: size).makeAsyncIterator()
                }
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(segments: segments) }
}
