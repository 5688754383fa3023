import Foundation
import HTTPTypes
import OpenAPIRuntime

/// A finished download.
public struct DownloadedFile: Sendable, Equatable {
    /// Where the file is (the destination asked for).
    public var url: URL
    /// Its size in bytes.
    public var bytes: Int64
    /// The bytes that were already on disk from an interrupted download and were kept
    /// (`0` when the download started from the beginning).
    public var resumedFrom: Int64
    /// Whether a partial file was thrown away because the resource changed (or the server would
    /// not send the rest).
    public var restarted: Bool
    /// The final response's status (`200`, or `206` for a resumed download).
    public var status: HTTPResponse.Status
    /// The final response's header fields.
    public var headers: HTTPFields
}

extension APIClient {
    /// Downloads `endpoint`'s body into the file at `destination`, streaming it to disk with
    /// progress, never holding it in memory.
    ///
    /// The bytes go to `destination` + `.part` first and the response's validator (a strong `ETag`,
    /// else `Last-Modified`) and total go beside it, in `.part.json`. When the download breaks off
    /// or is cancelled, both stay; the next `download` of the same URL to the same destination
    /// asks only for the rest (`Range: bytes=N-` with `If-Range`). A server that answers `200`
    /// instead (the resource changed, or it ignores ranges) starts the file over. The length is
    /// checked against `Content-Length`/`Content-Range` before the file is moved to
    /// `destination`, replacing what was there.
    ///
    /// The request goes through the client's middlewares (redirects, retries, authentication,
    /// rate limits) with `Cache-Control: no-store`: the file is the copy, the HTTP cache keeps
    /// none. ``APIClient/maxResponseBytes`` does not apply.
    public func download(_ endpoint: Endpoint<Data>, to destination: URL) -> Transfer<DownloadedFile> {
        Transfer.start { reporter throws(APIError) in
            try await performDownload(endpoint, to: destination, reporter: reporter)
        }
    }

    /// Downloads the absolute `url` into `destination` (see ``download(_:to:)``).
    public func download(from url: URL, to destination: URL) -> Transfer<DownloadedFile> {
        download(Endpoint<Data>(path: [], absoluteURL: url) { data, _ in data }, to: destination)
    }

    private func performDownload(_ endpoint: Endpoint<Data>, to destination: URL,
                                 reporter: ProgressReporter) async throws(APIError) -> DownloadedFile {
        var (request, base, url) = try makeRequest(endpoint, body: nil)
        // A file, not JSON: the client's default `Accept` would ask a negotiating server for the wrong thing.
        if endpoint.headers[.accept] == nil { request.headerFields[.accept] = "*/*" }
        let shown = Redaction.redact(url)
        let partial = PartialDownload.Files(destination: destination)
        var resume = partial.resumePoint(url: shown)
        var restarted = false
        let chain = Self.chain(middlewares: middlewares, transport: transport, operationID: endpoint.operationID)
        do {
            while true {
                var outbound = request
                outbound.headerFields[.cacheControl] = "no-store"
                if let resume {
                    outbound.headerFields[.range] = "bytes=\(resume.offset)-"
                    outbound.headerFields[.ifRange] = resume.validator
                }
                // A report of its own, so the middlewares never write into a caller's (the
                // transfer's task inherits the task locals of the one that started it).
                let (response, body) = try await ExchangeReport.$current.withValue(ExchangeReport()) {
                    try await chain(outbound, nil, base)
                }
                let offset: Int64
                let total: Int64?
                var validator = PartialDownload.validator(response.headerFields)
                switch response.status.code {
                case 206:
                    guard let current = resume else {
                        await HTTPBody.discard(body)
                        throw APIError.transport(url: shown, cause: TransportFailure(
                            .connectionLost, reason: "the server sent part of the file although the whole was asked for"))
                    }
                    guard let range = ContentRange(response.headerFields[.contentRange]), range.first == current.offset else {
                        // Not the rest of our partial file: forget it and ask for the whole.
                        await HTTPBody.discard(body)
                        partial.remove()
                        resume = nil
                        restarted = true
                        continue
                    }
                    offset = current.offset
                    total = range.complete ?? (range.last + 1)
                    validator = validator ?? current.validator
                case 200:
                    restarted = restarted || resume != nil
                    offset = 0
                    total = response.headerFields[.contentLength].flatMap { Int64($0) }
                case 416 where resume != nil:
                    await HTTPBody.discard(body)
                    // `bytes */N`: a partial file of exactly N bytes is the whole file (the last run
                    // stopped before moving it into place); any other is not a prefix: start over.
                    if let current = resume, let size = completeLength(response.headerFields[.contentRange]),
                       size == current.offset {
                        try partial.finish()
                        return DownloadedFile(url: destination, bytes: size, resumedFrom: size, restarted: false,
                                              status: response.status, headers: response.headerFields)
                    }
                    partial.remove()
                    resume = nil
                    restarted = true
                    continue
                default:
                    let data = try await Self.collect(body, limit: 64 * 1024, url: url)
                    try Self.validate(response, body: data, url: url, errorBody: errorBody)
                    throw APIError.httpStatus(code: response.status.code, message: "not a file download", url: shown,
                                              response: APIError.ErrorResponse(head: response, body: data))
                }
                do {
                    try partial.begin(PartialDownload(url: shown, validator: validator, total: total), keepingFirst: offset)
                } catch {
                    await HTTPBody.discard(body)
                    throw error
                }
                reporter.reset(completed: offset, total: total)
                let written = try await partial.append(body, reporter: reporter)
                let size = offset + written
                if let total, size != total {
                    throw APIError.transport(url: shown, cause: TransportFailure(
                        .connectionLost, reason: "the download ended at \(size) of \(total) bytes; the partial file is kept to resume"))
                }
                try partial.finish()
                return DownloadedFile(url: destination, bytes: size, resumedFrom: offset, restarted: restarted,
                                      status: response.status, headers: response.headerFields)
            }
        } catch {
            if Task.isCancelled { throw .cancelled }
            throw APIError.wrapping(error, url: url)
        }
    }
}

/// What is kept beside a partial download (`<destination>.part.json`) to resume it.
struct PartialDownload: Codable, Equatable {
    /// The URL, redacted (no tokens on disk), that the bytes came from.
    var url: String
    /// The `If-Range` validator: a strong `ETag`, or `Last-Modified`; `nil` when the response had
    /// neither (such a download is never resumed).
    var validator: String?
    /// The full length, when known.
    var total: Int64?

    /// A strong `ETag`, else `Last-Modified` when there is no entity tag at all (RFC 9110
    /// §13.1.5: a weak tag cannot be used in `If-Range`, nor a date when there is a tag).
    static func validator(_ fields: HTTPFields) -> String? {
        if let tag = fields[.eTag] {
            return !tag.hasPrefix("W/") && tag.hasPrefix("\"") ? tag : nil
        }
        return fields[.lastModified]
    }

    /// Where a download's partial file and its description live.
    struct Files {
        let destination: URL
        var part: URL { destination.appendingPathExtension("part") }
        var meta: URL { destination.appendingPathExtension("part.json") }

        init(destination: URL) { self.destination = destination }

        /// The offset and validator to resume from, when a partial file of `url` with a validator is on disk.
        func resumePoint(url: String) -> (offset: Int64, validator: String)? {
            guard let data = try? Data(contentsOf: meta),
                  let saved = try? JSONDecoder().decode(PartialDownload.self, from: data),
                  saved.url == url, let validator = saved.validator,
                  let size = (try? FileManager.default.attributesOfItem(atPath: part.path))?[.size] as? NSNumber,
                  size.int64Value > 0
            else { return nil }
            return (size.int64Value, validator)
        }

        /// Writes the description and keeps the first `offset` bytes of the partial file (all of it
        /// when resuming, none when starting over).
        func begin(_ download: PartialDownload, keepingFirst offset: Int64) throws(APIError) {
            do {
                try FileManager.default.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
                if offset == 0 || !FileManager.default.fileExists(atPath: part.path) {
                    guard FileManager.default.createFile(atPath: part.path, contents: nil) else {
                        throw APIError.fileAccess(path: part.path, reason: "it cannot be created")
                    }
                }
                let handle = try FileHandle(forWritingTo: part)
                try handle.truncate(atOffset: UInt64(offset))
                try handle.close()
                try JSONEncoder().encode(download).write(to: meta, options: .atomic)
            } catch let error as APIError {
                throw error
            } catch {
                throw .fileAccess(path: part.path, reason: error.localizedDescription)
            }
        }

        /// Appends `body` to the partial file, reporting each chunk; returns the bytes written.
        func append(_ body: HTTPBody?, reporter: ProgressReporter) async throws -> Int64 {
            guard let body else { return 0 }
            let handle: FileHandle
            do {
                handle = try FileHandle(forWritingTo: part)
                try handle.seekToEnd()
            } catch {
                throw APIError.fileAccess(path: part.path, reason: error.localizedDescription)
            }
            defer { try? handle.close() }
            var written: Int64 = 0
            for try await chunk in body {
                do {
                    try handle.write(contentsOf: chunk)
                } catch {
                    throw APIError.fileAccess(path: part.path, reason: error.localizedDescription)
                }
                written += Int64(chunk.count)
                reporter.add(chunk.count)
            }
            do {
                try handle.synchronize()
            } catch {
                throw APIError.fileAccess(path: part.path, reason: error.localizedDescription)
            }
            return written
        }

        /// Moves the complete file into place (replacing what is there, in one `rename`) and
        /// removes the description.
        func finish() throws(APIError) {
            guard rename(part.path, destination.path) == 0 else {
                throw .fileAccess(path: destination.path, reason: String(cString: strerror(errno)))
            }
            try? FileManager.default.removeItem(at: meta)
        }

        /// Forgets the partial download.
        func remove() {
            try? FileManager.default.removeItem(at: part)
            try? FileManager.default.removeItem(at: meta)
        }
    }
}

/// The length in an unsatisfied range's `Content-Range: bytes */N`.
func completeLength(_ value: String?) -> Int64? {
    guard let value, value.lowercased().hasPrefix("bytes */") else { return nil }
    return Int64(value.dropFirst(8).trimmingCharacters(in: .whitespaces))
}

/// A `Content-Range: bytes first-last/complete` value (RFC 9110 §14.4).
struct ContentRange: Equatable {
    var first: Int64
    var last: Int64
    /// The full length; `nil` for `*`.
    var complete: Int64?

    init?(_ value: String?) {
        guard let value, value.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst(6).split(separator: "/", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        guard spec.count == 2 else { return nil }
        let bounds = spec[0].split(separator: "-", maxSplits: 1)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first <= last else { return nil }
        self.first = first
        self.last = last
        if spec[1] == "*" {
            complete = nil
        } else {
            guard let complete = Int64(spec[1]), complete > last else { return nil }
            self.complete = complete
        }
    }
}
