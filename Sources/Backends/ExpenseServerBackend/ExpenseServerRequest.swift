import ExpenseCore

/// What to send expense-server for a job (contract.md, "Endpoints"),
/// minus the bearer token, which is added as it leaves.
package struct ExpenseServerRequest: Sendable, Equatable {
    package enum Body: Sendable, Equatable {
        case none
        case json([UInt8])
        /// The receipt file's bytes, streamed from the file as it is sent,
        /// with their content type (their `Repr-Digest` is computed then).
        case receipt(size: Int64, contentType: String)
    }

    package var method: String
    /// Relative to the configured base URL, starting with `/`.
    package var path: String
    package var headers: [(String, String)]
    package var body: Body

    package static func == (a: ExpenseServerRequest, b: ExpenseServerRequest) -> Bool {
        a.method == b.method && a.path == b.path && a.body == b.body
            && a.headers.map(\.0) == b.headers.map(\.0) && a.headers.map(\.1) == b.headers.map(\.1)
    }

    /// The request for `job`. The body is the same bytes on every retry
    /// (sorted keys), so the server's fingerprint recognizes a replay.
    /// - Parameter deviceID: this install's id, sent with creates.
    package static func make(for job: OutboxJob, deviceID: String) -> ExpenseServerRequest {
        // contract.md: the key travels as a quoted structured-field string.
        var headers = [("Idempotency-Key", "\"\(job.uuid)\"")]
        let (method, path) = target(of: job)
        switch job.kind {
        case .create:
            headers.append(("Content-Type", "application/json; charset=utf-8"))
            return ExpenseServerRequest(method: method, path: path, headers: headers, body: .json(createBody(job, deviceID: deviceID)))
        case .receipt:
            let kind = job.receiptKind ?? .jpeg
            headers.append(("Content-Type", kind.contentType))
            return ExpenseServerRequest(method: method, path: path, headers: headers,
                                        body: .receipt(size: job.receiptSize ?? 0, contentType: kind.contentType))
        case .edit:
            let body: JSONValue = ["base_version": .integer(job.baseVersion ?? 0), "set": .object(job.fields.jsonMembers)]
            headers.append(("Content-Type", "application/json; charset=utf-8"))
            return ExpenseServerRequest(method: method, path: path, headers: headers, body: .json(body.serializedBytes()))
        case .delete:
            return ExpenseServerRequest(method: method, path: path, headers: headers, body: .none)
        }
    }

    /// The method and path of `job`'s request, without building its body
    /// (for log lines: every create is described once).
    package static func target(of job: OutboxJob) -> (method: String, path: String) {
        let path = "/v1/expenses"
        switch job.kind {
        case .create: return ("POST", path)
        case .receipt: return ("PUT", "\(path)/\(job.transactionID)/receipt")
        case .edit: return ("PATCH", "\(path)/\(job.transactionID)")
        case .delete: return ("DELETE", "\(path)/\(job.transactionID)")
        }
    }
}

extension ExpenseServerRequest {
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
