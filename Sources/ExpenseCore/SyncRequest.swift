/// A job as the sync engine sends it.
public struct OutboxJob: Sendable, Equatable {
    public var seq: Int64
    public var uuid: String
    public var kind: JobKind
    public var transactionID: String
    /// A create's fields, or an edit's.
    public var fields: ExpenseFields
    /// An edit's `base_version`.
    public var baseVersion: Int?
    public var attempts: Int
    public var transientAttempts: Int
    public var sends: Int
    public var createdMilliseconds: Int64
    public var receiptFile: String?
    public var receiptKind: ReceiptKind?
    public var receiptSize: Int64?

    public init(seq: Int64, uuid: String, kind: JobKind, transactionID: String, fields: ExpenseFields = ExpenseFields(),
                baseVersion: Int? = nil, attempts: Int = 0, transientAttempts: Int = 0, sends: Int = 0,
                createdMilliseconds: Int64 = 0, receiptFile: String? = nil, receiptKind: ReceiptKind? = nil, receiptSize: Int64? = nil) {
        self.seq = seq
        self.uuid = uuid
        self.kind = kind
        self.transactionID = transactionID
        self.fields = fields
        self.baseVersion = baseVersion
        self.attempts = attempts
        self.transientAttempts = transientAttempts
        self.sends = sends
        self.createdMilliseconds = createdMilliseconds
        self.receiptFile = receiptFile
        self.receiptKind = receiptKind
        self.receiptSize = receiptSize
    }
}

/// What to send for a job (contract.md, "Endpoints"), minus the bearer
/// token, which only the HTTP layer adds.
public struct SyncRequest: Sendable, Equatable {
    public enum Body: Sendable, Equatable {
        case none
        case json([UInt8])
        /// The receipt file, with its content type and `Repr-Digest` value.
        case receipt(file: String, size: Int64, contentType: String)
    }

    public var method: String
    /// Relative to the configured base URL, starting with `/`.
    public var path: String
    public var headers: [(String, String)]
    public var body: Body

    public static func == (a: SyncRequest, b: SyncRequest) -> Bool {
        a.method == b.method && a.path == b.path && a.body == b.body
            && a.headers.map(\.0) == b.headers.map(\.0) && a.headers.map(\.1) == b.headers.map(\.1)
    }

    /// The request for `job`. The body is the same bytes on every retry
    /// (sorted keys), so the server's fingerprint recognizes a replay.
    /// - Parameter deviceID: this install's id, sent with creates.
    public static func make(for job: OutboxJob, deviceID: String) -> SyncRequest {
        // contract.md: the key travels as a quoted structured-field string.
        var headers = [("Idempotency-Key", "\"\(job.uuid)\"")]
        let path = "/v1/expenses"
        switch job.kind {
        case .create:
            headers.append(("Content-Type", "application/json; charset=utf-8"))
            return SyncRequest(method: "POST", path: path, headers: headers, body: .json(createBody(job, deviceID: deviceID)))
        case .receipt:
            let kind = job.receiptKind ?? .jpeg
            headers.append(("Content-Type", kind.contentType))
            return SyncRequest(method: "PUT", path: "\(path)/\(job.transactionID)/receipt", headers: headers,
                               body: .receipt(file: job.receiptFile ?? "", size: job.receiptSize ?? 0, contentType: kind.contentType))
        case .edit:
            let body: JSONValue = ["base_version": .integer(job.baseVersion ?? 0), "set": .object(job.fields.jsonMembers)]
            headers.append(("Content-Type", "application/json; charset=utf-8"))
            return SyncRequest(method: "PATCH", path: "\(path)/\(job.transactionID)", headers: headers, body: .json(body.serializedBytes()))
        case .delete:
            return SyncRequest(method: "DELETE", path: "\(path)/\(job.transactionID)", headers: headers, body: .none)
        }
    }
}

extension SyncRequest {
    /// A create's body, written member by member in the order
    /// ``JSONWriter/value(_:)`` sorts an object's keys (byte order), so it
    /// is byte for byte the object of the fields and the device's members:
    /// a job queued by an earlier version resends the same bytes. (Every
    /// create is sent; this skips building and sorting a dictionary.)
    static func createBody(_ job: OutboxJob, deviceID: String) -> [UInt8] {
        let fields = job.fields
        var writer = JSONWriter()
        writer.beginObject()
        if let amount = fields.amount { writer.member("amount", amount) }
        if let category = fields.category { writer.member("category", category) }
        if let comment = fields.comment { writer.member("comment", comment) }
        writer.member("created_at_device", Timestamp.format(milliseconds: job.createdMilliseconds))
        if let currency = fields.currency { writer.member("currency", currency) }
        if let date = fields.date { writer.member("date", date) }
        writer.member("device_id", deviceID)
        writer.key("device_seq")
        writer.integer(job.seq)
        if let merchant = fields.merchant { writer.member("merchant", merchant) }
        if let taxTag = fields.taxTag { writer.member("tax_tag", taxTag) }
        writer.endObject()
        return writer.bytes
    }
}

/// An error body from the server: `{"error": {"code", "message"}}`.
public struct ServerError: Sendable, Equatable {
    public var code: String?
    public var message: String?

    /// Reads an error body; fields that are missing or not strings stay nil.
    public init(body: [UInt8]) {
        let value = try? JSONValue.parse(body)
        code = value?["error"]?["code"]?.stringValue
        message = value?["error"]?["message"]?.stringValue
    }

    /// "422 idempotency_key_reused: message", for a job's last error.
    public func summary(status: Int) -> String {
        var text = "\(status)"
        if let code { text += " \(code.prefix(64))" }
        if let message { text += ": \(message.prefix(300))" }
        return text
    }
}
