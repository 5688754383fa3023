import CompressNIO
import Foundation
import Freshet
import HTTPTypes
import NIOCore
import OpenAPIRuntime

/// A content coding Freshet decodes (RFC 9110 §8.4.1), with zlib through CompressNIO.
public enum ContentCoding: String, Sendable, CaseIterable {
    /// `gzip` (and its alias `x-gzip`): a gzip stream (RFC 1952).
    case gzip
    /// `deflate`: a zlib stream (RFC 1950). A raw deflate stream, which some servers send under
    /// this name, is recognised by its missing zlib header and decoded too, as browsers do.
    case deflate

    /// The one coding `fields`' `Content-Encoding` names, when it names exactly one this type
    /// decodes (`identity` aside); `nil` when the body is not encoded, or encoded otherwise
    /// (`br`, two codings) — such a body is handed on as it came.
    public static func single(in fields: HTTPFields) -> ContentCoding? {
        var found: ContentCoding?
        for value in fields[values: .contentEncoding] {
            for token in value.split(separator: ",").map({ $0.trimmingOWS().lowercased() }) {
                if token.isEmpty || token == "identity" { continue }
                guard found == nil else { return nil }  // two codings: not ours to undo
                switch token {
                case "gzip", "x-gzip": found = .gzip
                case "deflate": found = .deflate
                default: return nil
                }
            }
        }
        return found
    }

    /// The bytes decoded chunk by chunk as they are read, at most `window` bytes at a time, so
    /// whoever reads can stop at its limit without the rest being inflated.
    ///
    /// A corrupt stream, or one that ends before its end (a gzip stream's trailer), fails the
    /// body with a `ContentDecodingFailure`. Bytes after the end of the stream are ignored.
    /// - Parameters:
    ///   - body: the encoded body.
    ///   - window: the most decoded bytes in one chunk (64 KiB by default).
    public func decoding(_ body: HTTPBody, window: Int = 64 * 1024) -> HTTPBody {
        HTTPBody(DecodedChunks(source: body, coding: self, window: window), length: .unknown,
                 iterationBehavior: body.iterationBehavior)
    }

    /// `data` decoded whole, refusing to make more than `limit` bytes.
    /// - Throws: `ContentDecodingFailure` for a corrupt or cut-off stream, or one that decodes
    ///   to more than `limit` bytes.
    public func decode(_ data: some Collection<UInt8> & Sendable, limit: Int) async throws -> [UInt8] {
        Array(try decodedWhole(data, limit: limit))
    }

    /// `data` decoded whole, in one buffer, without a stream's hand-over per chunk; it refuses to
    /// make more than `limit` bytes.
    /// - Throws: `ContentDecodingFailure` for a corrupt or cut-off stream, or one that decodes
    ///   to more than `limit` bytes.
    func decodedWhole(_ data: some Collection<UInt8>, limit: Int) throws -> Data {
        guard let decoded = try decodedWithin(data, limit: limit) else {
            throw ContentDecodingFailure(coding: rawValue, reason: "it decodes to more than \(limit) bytes")
        }
        return decoded
    }

    /// `data` decoded whole; `nil` when it decodes to more than `limit` bytes (it is not
    /// inflated more than a window past them).
    /// - Throws: `ContentDecodingFailure` for a corrupt or cut-off stream.
    func decodedWithin(_ data: some Collection<UInt8>, limit: Int) throws -> Data? {
        var inflation = Inflation(coding: self, window: 64 * 1024, input: ByteBuffer(bytes: data), inputEnded: true)
        var decoded = Data()
        // Compressed JSON is mostly 4 to 10 times smaller; the buffer grows past that.
        decoded.reserveCapacity(Swift.min(Swift.max(0, limit), Swift.max(data.count * 8, 256)))
        while try inflation.step() {
            guard decoded.count + inflation.made.readableBytes <= limit else { return nil }
            // From the buffer's bytes: `append(contentsOf:)` of the view asks at run time whether it
            // is `ContiguousBytes`, a question whose first asking reads every conformance record.
            inflation.made.withUnsafeReadableBytes { decoded.append($0.assumingMemoryBound(to: UInt8.self)) }
        }
        return decoded
    }
}

/// One body's inflation: encoded bytes in, decoded bytes out a window at a time, with no waiting
/// of its own, shared by the chunk-by-chunk stream (``DecodedChunks``) and a decode of a whole
/// buffer.
private struct Inflation {
    let coding: ContentCoding
    /// What the last ``step()`` made: at most a window of decoded bytes (its capacity).
    var made: ByteBuffer
    /// Encoded bytes not yet inflated. Allocated up front: zlib is called with an empty input to
    /// drain output it holds back, which needs a buffer with storage.
    var input: ByteBuffer
    /// No more encoded bytes will come.
    var inputEnded: Bool
    var inflater: ZlibDecompressor?
    /// The last inflate filled its window: zlib may hold more output, with no input needed.
    var outputPending = false
    var streamEnded = false

    init(coding: ContentCoding, window: Int, input: ByteBuffer, inputEnded: Bool) {
        self.coding = coding
        self.made = ByteBufferAllocator().buffer(capacity: Swift.max(1, window))
        self.input = input.capacity > 0 ? input : ByteBufferAllocator().buffer(capacity: 16 * 1024)
        self.inputEnded = inputEnded
    }

    /// More encoded bytes.
    mutating func append(_ bytes: some Collection<UInt8>) {
        input.discardReadBytes()
        input.writeBytes(bytes)
    }

    /// Inflates the next window into ``made``; `true` when bytes came, `false` when more input is
    /// needed (``inputEnded`` not set) or the stream has ended (``streamEnded``).
    /// - Throws: `ContentDecodingFailure` for a corrupt stream, or one that ends with the input.
    mutating func step() throws -> Bool {
        while !streamEnded {
            if input.readableBytes > 0 || outputPending, let inflater = try readyInflater(), try inflate(inflater) {
                return true
            }
            if streamEnded { break }
            if input.readableBytes > 0 && inflater != nil { continue }
            if inputEnded {
                try finish()
                streamEnded = true
                break
            }
            return false
        }
        return false
    }

    /// The inflater, made once the first bytes have come (`deflate` needs two to tell a zlib
    /// stream from a raw one); `nil` until then.
    mutating func readyInflater() throws -> ZlibDecompressor? {
        if let inflater { return inflater }
        let algorithm: ZlibAlgorithm
        switch coding {
        case .gzip: algorithm = .gzip
        case .deflate:
            guard input.readableBytes >= 2 || inputEnded,
                  let first = input.getInteger(at: input.readerIndex, as: UInt8.self) else { return nil }
            let second = input.getInteger(at: input.readerIndex + 1, as: UInt8.self) ?? 0
            // RFC 1950: method 8 (deflate) in the low nibble, and the two bytes a multiple of 31.
            let zlibHeader = first & 0x0F == 8 && (UInt16(first) << 8 | UInt16(second)) % 31 == 0
            algorithm = zlibHeader ? .zlib : .deflate
        }
        do {
            let made = try ZlibDecompressor(algorithm: algorithm)
            inflater = made
            return made
        } catch {
            throw ContentDecodingFailure(coding: coding.rawValue, reason: "zlib could not start (\(error))")
        }
    }

    /// Inflates what is buffered into ``made`` (one window); whether bytes came (none: more input
    /// is needed, or the stream ended: ``streamEnded``).
    mutating func inflate(_ inflater: ZlibDecompressor) throws -> Bool {
        made.clear()
        let before = input.readableBytes
        var full = false
        do {
            try inflater.inflate(from: &input, to: &made)
        } catch let error as CompressNIOError {
            switch error {
            case .bufferOverflow: full = true  // the window is full; zlib may hold more
            case .inputBufferOverflow: break  // every byte taken; more input is needed
            case .corruptData: throw ContentDecodingFailure(coding: coding.rawValue, reason: "the data is corrupt")
            default: throw ContentDecodingFailure(coding: coding.rawValue, reason: "zlib failed (\(error))")
            }
        }
        outputPending = full
        if made.readableBytes > 0 { return true }
        // zlib took nothing and made nothing from bytes it was offered: its stream has ended,
        // and what follows it is not part of the body.
        if !full && before > 0 && input.readableBytes == before { streamEnded = true }
        return false
    }

    /// At the end of the input: the stream must have ended too. zlib, offered one more byte,
    /// takes it (or fails on it) unless its stream is complete.
    func finish() throws {
        // No byte came: an empty body is an empty body (a server may send one with the field).
        guard let inflater else { return }
        var probe = ByteBuffer(bytes: [0])
        var output = ByteBufferAllocator().buffer(capacity: 64)
        let complete: Bool
        do {
            try inflater.inflate(from: &probe, to: &output)
            complete = probe.readableBytes == 1 && output.readableBytes == 0
        } catch {
            complete = false
        }
        guard complete else { throw ContentDecodingFailure(coding: coding.rawValue, reason: "the stream ends early") }
    }
}

/// A body's bytes, decoded from a content coding as they are pulled (see
/// ``ContentCoding/decoding(_:window:)``).
private struct DecodedChunks: AsyncSequence, Sendable {
    typealias Element = HTTPBody.ByteChunk
    let source: HTTPBody
    let coding: ContentCoding
    let window: Int

    func makeAsyncIterator() -> Iterator { Iterator(source: source.makeAsyncIterator(), coding: coding, window: window) }

    struct Iterator: AsyncIteratorProtocol {
        var source: HTTPBody.AsyncIterator
        var inflation: Inflation

        init(source: HTTPBody.AsyncIterator, coding: ContentCoding, window: Int) {
            self.source = source
            self.inflation = Inflation(coding: coding, window: window, input: ByteBuffer(), inputEnded: false)
        }

        mutating func next() async throws -> HTTPBody.ByteChunk? {
            while try !inflation.step() {
                guard !inflation.streamEnded else { return nil }
                if let chunk = try await source.next() {
                    inflation.append(chunk)
                } else {
                    inflation.inputEnded = true
                }
            }
            return ArraySlice(inflation.made.readableBytesView)
        }
    }
}
