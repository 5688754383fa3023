import Crypto
import Foundation
import Freshet
import HTTPTypes
import FreshetSimulator
import FreshetTestSupport
import Synchronization
import Testing

/// Uploads against the simulator's `/upload` echo, which reads the body as it streams in and
/// parses multipart bodies with MultipartKit.
@Suite struct UploadTests {
    struct Echo: Decodable, Sendable {
        var method: String
        var contentType: String?
        var contentLength: String?
        var transferEncoding: String?
        var bytes: Int
        var sha256: String
        var parts: [Part]?

        struct Part: Decodable, Sendable {
            var headers: [String: String]
            var name: String?
            var filename: String?
            var bytes: Int
            var sha256: String
            var text: String?
        }
    }

    static let echo = Endpoint<Echo>(method: .post, path: ["upload"])

    static func sha256(_ bytes: some DataProtocol) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    static func bytes(_ count: Int, seed: UInt64) -> Data {
        var generator = SplitMix64(seed: seed)
        var data = Data(capacity: count)
        while data.count < count { withUnsafeBytes(of: generator.next()) { data.append(contentsOf: $0.prefix(count - data.count)) } }
        return data
    }

    static func temporaryFile(_ data: Data) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("freshet-upload-\(UUID().uuidString)")
        try data.write(to: url)
        return url
    }

    /// Every progress value the transfer reported, collected while it runs.
    static func collect(_ progress: AsyncStream<TransferProgress>) -> Task<[TransferProgress], Never> {
        Task {
            var seen: [TransferProgress] = []
            for await value in progress { seen.append(value) }
            return seen
        }
    }

    @Test func aFileIsStreamedWithItsLengthAndProgress() async throws {
        let data = Self.bytes(3 * 1024 * 1024 + 17, seed: 1)
        let file = try Self.temporaryFile(data)
        defer { try? FileManager.default.removeItem(at: file) }
        try await withSimClient { _, client in
            let upload = client.upload(Self.echo, from: try RequestBody.file(file, contentType: "application/pdf"))
            let progress = Self.collect(upload.progress)
            let response = try await upload.value
            let echo = response.value
            #expect(echo.bytes == data.count)
            #expect(echo.sha256 == Self.sha256(data))
            #expect(echo.contentLength == String(data.count))
            #expect(echo.transferEncoding == nil)
            #expect(echo.contentType == "application/pdf")
            let seen = await progress.value
            #expect(seen.last == TransferProgress(completed: Int64(data.count), total: Int64(data.count)))
            #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.completed <= $1.completed })
        }
    }

    @Test func dataIsSentWithItsLength() async throws {
        let data = Self.bytes(100_000, seed: 2)
        try await withSimClient { _, client in
            let echo = try await client.upload(Self.echo, from: .data(data)).value.value
            #expect(echo.bytes == data.count)
            #expect(echo.sha256 == Self.sha256(data))
            #expect(echo.contentLength == "100000")
            #expect(echo.contentType == "application/octet-stream")
        }
    }

    /// The sequence's second chunk is only produced once the server has received the first: a
    /// client that read the sequence whole before sending would never get there.
    @Test func anAsyncSequenceIsStreamedChunkedAsItIsProduced() async throws {
        let first = Self.bytes(64 * 1024, seed: 3)
        let second = Self.bytes(32 * 1024, seed: 4)
        try await withSimClient { sim, client in
            let (stream, continuation) = AsyncStream.makeStream(of: Data.self)
            let producer = Task {
                continuation.yield(first)
                let arrived = await eventually(within: 10) {
                    await sim.simulator.requestLog().contains { $0.path == "/upload" && $0.bytesReceived >= first.count }
                }
                if arrived { continuation.yield(second) }
                continuation.finish()
                return arrived
            }
            let echo = try await client.upload(Self.echo, from: .stream(stream)).value.value
            let arrived = await producer.value
            #expect(arrived, "the first chunk reached the server before the second was produced")
            #expect(echo.bytes == first.count + second.count)
            #expect(echo.sha256 == Self.sha256(first + second))
            #expect(echo.contentLength == nil)
            #expect(echo.transferEncoding?.lowercased() == "chunked")
        }
    }

    @Test func aMultipartFormIsStreamedAndParsesElsewhere() async throws {
        let photo = Self.bytes(1024 * 1024 + 3, seed: 5)
        let file = try Self.temporaryFile(photo)
        defer { try? FileManager.default.removeItem(at: file) }
        let note = Data("résumé, second draft\r\n--not-a-boundary\r\n".utf8)
        var form = MultipartFormData()
        form.append("Holiday ☀ \"2026\"", name: "title")
        form.append(note, name: "note", filename: "résumé \"final\".txt", contentType: "text/plain; charset=utf-8")
        try form.appendFile(at: file, name: "photo", filename: "beach.jpg", contentType: "image/jpeg")
        let sent = form
        try await withSimClient { _, client in
            let upload = client.upload(Self.echo, from: .multipart(sent))
            let progress = Self.collect(upload.progress)
            let echo = try await upload.value.value
            #expect(echo.contentType == sent.contentType)
            #expect(echo.contentLength == String(sent.length))
            #expect(Int64(echo.bytes) == sent.length)
            let parts = try #require(echo.parts)
            #expect(parts.map(\.name) == ["title", "note", "photo"])
            #expect(parts[0].text == "Holiday ☀ \"2026\"")
            #expect(parts[0].filename == nil)
            // RFC 7578 §4.2: the non-ASCII file name goes percent-encoded, and decodes back.
            #expect(parts[1].filename == "r%C3%A9sum%C3%A9 %22final%22.txt")
            #expect(parts[1].filename?.removingPercentEncoding == "résumé \"final\".txt")
            #expect(parts[1].headers["content-type"] == "text/plain; charset=utf-8")
            #expect(parts[1].sha256 == Self.sha256(note))
            #expect(parts[2].filename == "beach.jpg")
            #expect(parts[2].bytes == photo.count)
            #expect(parts[2].sha256 == Self.sha256(photo))
            #expect(await progress.value.last?.completed == sent.length)
        }
    }

    @Test func browserStyleNamesKeepUTF8() async throws {
        var form = MultipartFormData(nameEncoding: .utf8)
        form.append(Data("x".utf8), name: "file", filename: "naïve \"quote\".txt")
        let sent = form
        try await withSimClient { _, client in
            let echo = try await client.upload(Self.echo, from: .multipart(sent)).value.value
            #expect(echo.parts?.first?.filename == "naïve %22quote%22.txt")
        }
    }

    @Test func aMissingFileIsAClearErrorBeforeAnyRequest() throws {
        let missing = URL(fileURLWithPath: "/nonexistent/freshet-\(UUID().uuidString).bin")
        #expect(throws: APIError.self) { try RequestBody.file(missing) }
        do {
            _ = try RequestBody.file(missing)
        } catch {
            #expect(error.description.contains("cannot be read"))
            guard case .fileAccess(let path, _) = error else {
                Issue.record("expected fileAccess, got \(error)")
                return
            }
            #expect(path == missing.path)
        }
    }

    @Test func cancellingAnUploadAbortsIt() async throws {
        try await withSimClient { sim, client in
            let (stream, continuation) = AsyncStream.makeStream(of: Data.self)
            continuation.yield(Data(repeating: 1, count: 1024))
            let upload = client.upload(Self.echo, from: .stream(stream))
            let started = await eventually(within: 10) {
                await sim.simulator.requestLog().contains { $0.path == "/upload" && $0.bytesReceived >= 1024 }
            }
            #expect(started)
            upload.cancel()
            await #expect(throws: APIError.cancelled) { try await upload.value }
            // The server saw the request end while the body's stream is still open: the body was
            // cut short (the server answers 400 to what it got, or logs the exchange aborted), not
            // left waiting for more.
            let ended = await eventually {
                await sim.simulator.requestLog().first { $0.path == "/upload" }.map { $0.finished || $0.aborted } == true
            }
            #expect(ended, "the server saw the upload end")
            continuation.finish()
            let entry = try #require(await sim.simulator.requestLog().first { $0.path == "/upload" })
            #expect(entry.aborted || entry.status == 400, "\(entry)")
            #expect(entry.bytesReceived == 1024, "nothing was sent after the cancel: \(entry.bytesReceived)")
            #expect(await sim.simulator.requestLog().count == 1, "no second attempt")
        }
    }
}
