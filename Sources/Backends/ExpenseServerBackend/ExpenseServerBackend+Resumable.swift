import Curl
import ExpenseCore
import Posix
import SyncEngine

/// Resumable uploads (contract.md, "Resumable uploads"; docs/sync.md): a
/// receipt of at least `resumableMinBytes` is sent as an upload the server
/// keeps across requests. Its URL and the server's offset are recorded
/// with the job before any byte is sent; every send after a cut, a timeout
/// or a restart asks the server where it is (`HEAD`) and sends only the
/// rest, never a byte the server already holds.
extension ExpenseServerBackend {
    /// How a resumable send ended: an outcome for the engine, or "send it
    /// as a plain `PUT`" (the server does not offer resumable uploads).
    enum ResumableEnd: Sendable {
        case outcome(SyncOutcome)
        case usePut
    }

    /// Requests that neither move the upload nor end it, in a row, before
    /// the send gives up (the engine backs off and comes back).
    static let stallLimit = 3

    /// Sends `job`'s receipt (`file`, `size` bytes, whose SHA-256 is
    /// `digest`, base64) resumably.
    func sendResumably(_ job: OutboxJob, _ request: ExpenseServerRequest, file: FileDescriptor, size: Int64,
                       digest: String, token: String?, recorder: any UploadRecorder) async -> ResumableEnd {
        let auth = token.map { [("Authorization", "Bearer \($0)")] } ?? []
        // An upload made on another server (the configured URL changed
        // since) is not asked about: the token goes to this server only.
        var url = job.uploadURL.flatMap { $0.hasPrefix(settings.baseURL + "/v1/uploads/") ? $0 : nil }
        var offset = url == nil ? 0 : job.uploadOffset ?? 0
        var recorded: (url: String?, offset: Int64?) = (job.uploadURL, job.uploadOffset)
        // Where the server is is only known from its own answer: after a
        // restart, or a cut, it may hold more (or, expired, nothing).
        var mustAsk = url != nil
        // The most the server was seen to hold, and the tries since it grew.
        var best: Int64 = -1
        var stalls = 0
        while true {
            if mustAsk, let current = url {
                mustAsk = false
                switch await client.send(plain("HEAD", current, headers: auth)) {
                case .failure(let error):
                    return .outcome(.unanswered(reason: error.message, requestSent: error.requestSent))
                case .success(let answer) where answer.status == 204 || answer.status == 200:
                    guard let held = answer.header("upload-offset").flatMap(Int64.init), (0...size).contains(held) else {
                        return .outcome(.failed(SyncFailure(.transient, summary: "\(answer.status): the upload's offset is missing or not within its \(size) bytes")))
                    }
                    offset = held
                case .success(let answer) where answer.status == 404:
                    // Completed (its answer lost), cancelled or expired: the
                    // creation with the job's key says which.
                    url = nil
                    offset = 0
                case .success(let answer):
                    return .outcome(Self.outcome(status: answer.status, body: answer.body, retryAfter: answer.header("retry-after"), replayed: false))
                }
            }
            if url == nil {
                var headers = request.headers + auth
                headers += [("Repr-Digest", "sha-256=:\(digest):"), ("Upload-Complete", "?0"), ("Upload-Length", String(size))]
                let result = await client.send(plain("POST", settings.baseURL + request.path, headers: headers, body: .bytes([])))
                guard case .success(let answer) = result else { return .outcome(Self.outcome(of: result)) }
                if answer.status == 405 || (answer.status == 404 && ServerError(body: answer.body).code == "not_found") {
                    resumableOffered.withLock { $0 = false }
                    return .usePut
                }
                guard answer.status == 201 else { return .outcome(Self.outcome(of: result)) }
                // The token goes to the configured server only: a Location
                // elsewhere is not followed.
                guard let location = answer.header("location"), location.hasPrefix("/"), !location.hasPrefix("//"),
                      let held = answer.header("upload-offset").flatMap(Int64.init), (0...size).contains(held) else {
                    resumableOffered.withLock { $0 = false }
                    return .usePut
                }
                url = settings.baseURL + location
                offset = held
            }
            guard let current = url else { continue }
            if recorded.url != current || recorded.offset != offset {
                do {
                    try await recorder.recordUpload(jobUUID: job.uuid, url: current, offset: offset)
                } catch {
                    return .outcome(.unanswered(reason: "the upload's place could not be recorded: \(error)", requestSent: true))
                }
                recorded = (current, offset)
            }
            if offset > best {
                best = offset
                stalls = 0
            } else {
                stalls += 1
                guard stalls < Self.stallLimit else {
                    return .outcome(.unanswered(reason: "the upload made no progress in \(Self.stallLimit) tries", requestSent: true))
                }
            }
            let rest = size - offset
            var patch = plain("PATCH", current, headers: auth + [
                ("Content-Type", "application/partial-upload"), ("Upload-Offset", String(offset)), ("Upload-Complete", "?1"),
            ], body: rest > 0 ? .filePart(file, offset: offset, size: rest) : .bytes([]))
            patch.totalTimeoutMilliseconds += rest * 1000 / (64 * 1024)
            // After a cut the server may still be keeping what arrived: an
            // append it refuses from its head must not cost the rest's bytes.
            patch.expectsContinue = true
            let result = await client.send(patch)
            switch result {
            case .failure:
                // Cut, or timed out: what arrived is kept there; ask how much.
                mustAsk = true
            case .success(let answer) where answer.status == 409:
                let error = ServerError(body: answer.body)
                if error.code == "mismatching_upload_offset", let held = answer.header("upload-offset").flatMap(Int64.init), (0...size).contains(held) {
                    offset = held
                } else if error.code == "request_in_progress" {
                    // The server is still keeping what a cut request sent it.
                    try? await Task.sleep(for: .milliseconds(100 * (stalls + 1)))
                    mustAsk = true
                } else {
                    return .outcome(Self.outcome(of: result))
                }
            case .success(let answer) where answer.status == 404 && ServerError(body: answer.body).code == "upload_not_found":
                url = nil
                offset = 0
            case .success:
                return .outcome(Self.outcome(of: result))
            }
        }
    }

    /// `DELETE` on an upload a job left unfinished.
    /// - Returns: true once the server holds it no more.
    public func cancelUpload(url: String, token: String?) async -> Bool {
        guard url.hasPrefix(settings.baseURL + "/") else { return true }
        let auth = token.map { [("Authorization", "Bearer \($0)")] } ?? []
        guard case .success(let answer) = await client.send(plain("DELETE", url, headers: auth)) else { return false }
        return answer.status == 204 || answer.status == 404 || answer.status == 200
    }

    /// A request with the configured timeouts and trust, and the low-speed
    /// limit that ends a stall.
    func plain(_ method: String, _ url: String, headers: [(String, String)], body: HTTPRequest.Body = .none) -> HTTPRequest {
        var request = HTTPRequest(method: method, url: url, headers: headers, body: body,
                                  connectTimeoutMilliseconds: settings.connectTimeoutMilliseconds,
                                  totalTimeoutMilliseconds: settings.requestTimeoutMilliseconds)
        request.lowSpeedSeconds = 30
        request.caFile = settings.caFile
        return request
    }
}
