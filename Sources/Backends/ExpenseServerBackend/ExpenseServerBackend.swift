import Curl
import DaemonSupport
import Digest
import ExpenseCore
import OutboxStore
import Posix
import Synchronization
import SyncEngine

/// expense-server's HTTP contract (docs/contract.md) behind the sync
/// engine's seam: jobs become its requests, with `Idempotency-Key` so that
/// a retry is a replay, and its answers become ``SyncOutcome``s as the
/// contract's table says. The only place besides the Curl wrapper that
/// knows HTTP.
public final class ExpenseServerBackend: SyncBackend {
    public struct Settings: Sendable, Equatable {
        /// The base URL, without a trailing slash.
        public var baseURL: String
        /// Connections, and requests in flight, at once.
        public var connections: Int
        public var connectTimeoutMilliseconds: Int64
        public var requestTimeoutMilliseconds: Int64
        /// This install's id, sent with every create as `device_id`.
        public var deviceID: String
        /// Certificate authorities to trust for an `https://` server (PEM),
        /// instead of the system's.
        public var caFile: String?
        /// The largest receipt read back from the server (`receipt_max_bytes`).
        public var receiptMaxBytes = 25 << 20
        /// Receipts of at least this many bytes are sent as resumable
        /// uploads (`resumable_upload_min_bytes`); nil: never.
        public var resumableMinBytes: Int64? = 2 << 20

        public init(baseURL: String, connections: Int, connectTimeoutMilliseconds: Int64, requestTimeoutMilliseconds: Int64, deviceID: String) {
            self.baseURL = baseURL
            self.connections = connections
            self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
            self.requestTimeoutMilliseconds = requestTimeoutMilliseconds
            self.deviceID = deviceID
        }
    }

    let settings: Settings
    let client: HTTPClient
    /// Receipts are hashed here, off the HTTP thread and the cooperative pool.
    let digests = BlockingExecutor(label: "receipt-digest", width: 2)
    /// Where a receipt job's resumable upload is recorded; nil: uploads
    /// are plain `PUT`s.
    let uploads: (any UploadRecorder)?
    /// False once the server said it does not offer resumable uploads.
    let resumableOffered = Mutex(true)

    public init(settings: Settings, uploads: (any UploadRecorder)? = nil) {
        self.settings = settings
        self.uploads = uploads
        client = HTTPClient(maxConnections: settings.connections)
    }

    /// The server takes concurrent requests: the engine's concurrency decides.
    public var maxRequestsInFlight: Int? { nil }

    /// contract.md's create takes a receipt alone: every field is optional.
    public static let requiredFields = RequiredFields.none
    public var requiredFields: RequiredFields { Self.requiredFields }

    public func describe(_ job: OutboxJob) -> String {
        let (method, path) = ExpenseServerRequest.target(of: job)
        return "\(method) \(path)"
    }

    /// Hands the job's request to the HTTP client. A receipt is hashed
    /// first (for `Repr-Digest`) on the digest threads, and its request
    /// leaves from there; a receipt that cannot be read is answered
    /// `receiptUnreadable` without a request.
    public func send(_ job: OutboxJob, receiptPath: String?, token: String?, answered: @escaping @Sendable (SyncOutcome) -> Void) {
        let request = ExpenseServerRequest.make(for: job, deviceID: settings.deviceID)
        switch request.body {
        case .none:
            start(request, body: .none, token: token, answered: answered)
        case .json(let bytes):
            start(request, body: .bytes(bytes), token: token, answered: answered)
        case .receipt(let size, _):
            guard let receiptPath else {
                answered(.receiptUnreadable(reason: "the job names no receipt file"))
                return
            }
            // The digest recorded when the bytes were staged: a copy damaged
            // on disk since is refused by the server (`digest_mismatch`),
            // never stored as the receipt. Jobs queued before digests were
            // recorded have none, and their file is hashed as it is. Either
            // way the file is opened here, once, and the request streams
            // from that descriptor: one that is gone is said, not retried
            // as if the network had failed.
            let recorded = job.receiptSHA256.map(Base64.encode)
            // Unstructured, and why it may be: `send` is called in the
            // engine's turn, often on the HTTP thread, which must not wait
            // for a file; this task ends by calling `answered`, which the
            // engine counts as outstanding until then (it is the owner).
            Task { [self] in
                do {
                    let (file, digest) = try await digests.run {
                        let file = try FileDescriptor.open(receiptPath, [.readOnly, .noFollow])
                        return (file, try recorded ?? Base64.encode(ReceiptDirectory.digest(of: file).sha256))
                    }
                    if let uploads, let least = settings.resumableMinBytes, size >= least || job.uploadURL != nil,
                       resumableOffered.withLock({ $0 }) {
                        switch await sendResumably(job, request, file: file, size: size, digest: digest, token: token, recorder: uploads) {
                        case .outcome(let outcome):
                            answered(outcome)
                            return
                        case .usePut:
                            break
                        }
                    }
                    start(request, body: .file(file, size: size), digest: digest, token: token, answered: answered)
                } catch {
                    answered(.receiptUnreadable(reason: "\(error)"))
                }
            }
        }
    }

    /// Hands the request over: `body` as the job's, and a receipt file's `Repr-Digest`.
    private func start(_ request: ExpenseServerRequest, body: HTTPRequest.Body, digest: String? = nil, token: String?,
                       answered: @escaping @Sendable (SyncOutcome) -> Void) {
        var headers = request.headers
        if let digest { headers.append(("Repr-Digest", "sha-256=:\(digest):")) }
        var total = settings.requestTimeoutMilliseconds
        if case .file(_, let size) = body {
            // A large receipt on a slow uplink needs longer than a small
            // request: 64 KiB/s more. The low-speed limit still ends a stall.
            total += size * 1000 / (64 * 1024)
        }
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        var http = plain(request.method, settings.baseURL + request.path, headers: headers, body: body)
        http.totalTimeoutMilliseconds = total
        client.start(http) { result in answered(Self.outcome(of: result)) }
    }

    /// `GET /v1/expenses?since=…&limit=500`: the token's user's own, so the
    /// account needs no more telling apart.
    public func fetchChanges(since cursor: String?, token: String?, account: String) async -> ChangesReply {
        var url = settings.baseURL + "/v1/expenses?limit=500"
        if let cursor { url += "&since=" + Self.percentEncoded(cursor) }
        var headers: [(String, String)] = []
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        var request = HTTPRequest(method: "GET", url: url, headers: headers,
                                  connectTimeoutMilliseconds: settings.connectTimeoutMilliseconds,
                                  totalTimeoutMilliseconds: settings.requestTimeoutMilliseconds)
        request.caFile = settings.caFile
        return Self.changes(from: await client.send(request))
    }

    /// `GET /v1/expenses/{id}/receipt` on the configured server, whatever
    /// URL the cache holds: the token goes to no other host.
    public func fetchReceipt(transactionID: String, token: String?) async -> ReceiptFetch {
        var headers: [(String, String)] = []
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        var request = HTTPRequest(method: "GET", url: settings.baseURL + "/v1/expenses/\(Self.percentEncoded(transactionID))/receipt",
                                  headers: headers, connectTimeoutMilliseconds: settings.connectTimeoutMilliseconds,
                                  totalTimeoutMilliseconds: settings.requestTimeoutMilliseconds)
        request.caFile = settings.caFile
        request.maxResponseBytes = settings.receiptMaxBytes
        let result = await client.send(request)
        if case .failure(let error) = result, error.isResponseTooLarge {
            return .tooLarge(limit: settings.receiptMaxBytes)
        }
        return Self.receipt(from: result)
    }

    /// A receipt answer as ``ReceiptFetch``, by contract.md's classes.
    static func receipt(from result: Result<HTTPResponse, TransportError>) -> ReceiptFetch {
        let response: HTTPResponse
        switch result {
        case .failure(let error): return .unanswered(reason: error.message)
        case .success(let answer): response = answer
        }
        switch response.status {
        case 200:
            return .bytes(response.body, reprDigest: response.header("Repr-Digest").flatMap(Self.sha256(reprDigest:)))
        case 404:
            return .notFound
        case 401, 403:
            return .credentialsRefused(code: "\(response.status)")
        default:
            let error = ServerError(body: response.body)
            return .failed(SyncFailure(kind(status: response.status, errorCode: error.code), summary: error.summary(status: response.status)))
        }
    }

    /// The SHA-256 in a `Repr-Digest` header (`sha-256=:<base64>:`, RFC 9530), if it holds one.
    static func sha256(reprDigest header: String) -> [UInt8]? {
        for member in header.split(separator: ",") {
            let trimmed = member.trimmingPrefix(" ")
            guard trimmed.hasPrefix("sha-256=:"), trimmed.hasSuffix(":"), trimmed.count > 10 else { continue }
            let encoded = trimmed.dropFirst("sha-256=:".count).dropLast()
            if let bytes = Base64.decode(String(encoded)), bytes.count == 32 { return bytes }
        }
        return nil
    }

    public func shutdown() {
        client.shutdown()
    }
}
