import Digest
import ExpenseCore
import HTTPD
import Posix
import ServerStorage

/// The endpoints of contract.md. Each `begin…` checks what can be checked
/// from the headers (answering early when something is wrong), then sets
/// `completion` (and `receiver` when there is a body to read).
extension APIExchange {
    // MARK: POST /v1/expenses

    func beginCreate(user: Int64) throws {
        let key = try IdempotencyKey.parse(head.values(of: "Idempotency-Key"))
        transactionID = TransactionID.derive(from: key)
        let json = try expectJSONBody()
        try claim(user: user, key: key)
        completion = { [unowned self] in
            let members = try JSONBody.object(json.bytes)
            let request = try CreateRequest(members)
            let operation = IdempotentOperation(user: user, key: key, method: "POST", path: target.path,
                                      bodyDigest: SHA256.hash(JSONBody.canonical(members)))
            let outcome = try service.storage.create(operation, request)
            var response = respond(outcome)
            response.headers.append(HTTPHeader("Location", "/v1/expenses/\(outcome.expense.transactionID)"))
            return response
        }
    }

    // MARK: GET /v1/expenses

    func beginList(user: Int64) throws(APIError) {
        var cursor = ListCursor.beginning
        if let since = try target.parameter("since"), !since.isEmpty {
            cursor = try ListCursor(parsing: since)
        }
        var limit = 100
        if let text = try target.parameter("limit") {
            guard text.utf8.count <= 4, let value = Int(text), value >= 1, value <= 1000, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                throw .invalidParameter("limit", "must be a whole number from 1 to 1000")
            }
            limit = value
        }
        completion = { [unowned self] in
            let page = try service.storage.changes(user: user, after: cursor.sequence, limit: limit)
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("expenses")
            writer.beginArray()
            for expense in page.expenses { expense.write(to: &writer) }
            writer.endArray()
            writer.member("next_cursor", ListCursor(sequence: page.next).text)
            writer.member("has_more", page.hasMore)
            writer.endObject()
            return HTTPResponse(status: 200, headers: [jsonContentType], body: .bytes(writer.bytes))
        }
    }

    // MARK: GET /v1/expenses/{id}

    func beginRead(user: Int64, id: String) throws(APIError) {
        let transactionID = try expenseID(id)
        completion = { [unowned self] in
            guard let stored = try service.storage.expense(transactionID, user: user) else { throw APIError.expenseNotFound }
            return HTTPResponse(status: 200, headers: [jsonContentType], body: .bytes(stored.expense.jsonBytes))
        }
    }

    // MARK: PATCH /v1/expenses/{id}

    func beginEdit(user: Int64, id: String) throws {
        let key = try IdempotencyKey.parse(head.values(of: "Idempotency-Key"))
        let transactionID = try expenseID(id)
        let json = try expectJSONBody()
        try claim(user: user, key: key)
        completion = { [unowned self] in
            let members = try JSONBody.object(json.bytes)
            let request = try PatchRequest(members)
            let operation = IdempotentOperation(user: user, key: key, method: "PATCH", path: target.path,
                                      bodyDigest: SHA256.hash(JSONBody.canonical(members)))
            return respond(try service.storage.edit(operation, transactionID: transactionID, request))
        }
    }

    // MARK: DELETE /v1/expenses/{id}

    func beginDelete(user: Int64, id: String) throws {
        let key = try IdempotencyKey.parse(head.values(of: "Idempotency-Key"))
        let transactionID = try expenseID(id)
        try claim(user: user, key: key)
        completion = { [unowned self] in
            // A DELETE's body means nothing; the fingerprint is method and path.
            let operation = IdempotentOperation(user: user, key: key, method: "DELETE", path: target.path, bodyDigest: SHA256.hash([]))
            return respond(try service.storage.delete(operation, transactionID: transactionID))
        }
    }

    // MARK: PUT /v1/expenses/{id}/receipt

    func beginUpload(user: Int64, id: String) throws {
        let key = try IdempotencyKey.parse(head.values(of: "Idempotency-Key"))
        let transactionID = try expenseID(id)
        let kind = try receiptKind()
        // A chunked body's size is unknown until it has arrived; the limit
        // must be enforceable from the headers.
        guard let length = head.contentLength, head.value(of: "Transfer-Encoding") == nil else { throw APIError.lengthRequired }
        let limit = service.settings.receiptMaxBytes
        guard length <= limit else { throw APIError.payloadTooLarge(limit: limit, what: "the receipt") }
        let digest = try ReprDigest.sha256(head.values(of: "Repr-Digest"))
        // 404 and 410 before a single byte is read: the client drops or
        // defers the job without sending megabytes for nothing. A key seen
        // before goes on to the replay check, whatever became of the expense.
        if try !service.storage.hasIdempotencyRecord(user: user, key: key) {
            guard let stored = try service.storage.expense(transactionID, user: user) else { throw APIError.expenseNotFound }
            guard !stored.expense.deleted else { throw APIError.expenseDeleted }
        }
        try claim(user: user, key: key)
        let upload = ReceiptUpload(kind: kind, claimedDigest: digest, announcedLength: length, staging: service.storage.staging)
        receiver = .receipt(upload)
        completion = { [unowned self] in
            let staged = try upload.finish()
            let operation = IdempotentOperation(user: user, key: key, method: "PUT", path: target.path, bodyDigest: digest)
            return respond(try service.storage.attachReceipt(operation, transactionID: transactionID, staged))
        }
    }

    // MARK: GET /v1/expenses/{id}/receipt

    func beginDownload(user: Int64, id: String) throws(APIError) {
        let transactionID = try expenseID(id)
        completion = { [unowned self] in
            let receipt = try service.storage.receipt(of: transactionID, user: user)
            return HTTPResponse(status: 200, headers: [
                HTTPHeader("Content-Type", receipt.contentType),
                HTTPHeader("Repr-Digest", ReprDigest.format(Array(hexBytes: receipt.sha256))),
                HTTPHeader("Cache-Control", "private, no-store"),
            ], body: .file(receipt.file, size: receipt.size))
        }
    }

    // MARK: Shared steps

    /// The receipt kind a `Content-Type` names.
    /// - Throws: `415` for anything but a kind a receipt may be sent as.
    func receiptKind() throws(APIError) -> ReceiptKind {
        let mediaType = (head.value(of: "Content-Type") ?? "").split(separator: ";").first.map { $0.trimmingCharacters(" \t").lowercased() } ?? ""
        guard let kind = ReceiptKind(contentType: mediaType), kind.isSendable else {
            throw APIError.unsupportedMediaType("a receipt must be image/jpeg, image/png or application/pdf")
        }
        return kind
    }

    /// The transaction id in a path; a malformed one cannot exist.
    func expenseID(_ id: String) throws(APIError) -> String {
        guard TransactionID.isValid(id) else { throw .expenseNotFound }
        transactionID = id
        return id
    }

    /// Checks the headers of a JSON body and prepares to receive it.
    /// - Throws: `415` for another content type, `413` when the announced
    ///   length is over the limit (answered before reading it).
    private func expectJSONBody() throws(APIError) -> JSONReceiver {
        if let type = head.value(of: "Content-Type") {
            let parts = type.split(separator: ";")
            let media = parts.first.map { $0.trimmingCharacters(" \t").lowercased() } ?? ""
            guard media == "application/json" || (media.hasPrefix("application/") && media.hasSuffix("+json")) else {
                throw .unsupportedMediaType("the body must be application/json")
            }
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(" \t\"").lowercased() }
                if pair.count == 2, pair[0] == "charset", pair[1] != "utf-8" {
                    throw .unsupportedMediaType("the body must be UTF-8")
                }
            }
        }
        let limit = service.settings.jsonMaxBytes
        if let length = head.contentLength, length > Int64(limit) {
            throw .payloadTooLarge(limit: Int64(limit), what: "the request body")
        }
        let json = JSONReceiver(limit: limit)
        receiver = .json(json)
        return json
    }

    /// The answer for a finished write: `201` for a new expense, `200`
    /// otherwise, `Idempotent-Replayed: true` on every replay.
    func respond(_ outcome: WriteOutcome) -> HTTPResponse {
        replayed = outcome.isReplay
        var headers = [jsonContentType]
        if outcome.isReplay { headers.append(HTTPHeader("Idempotent-Replayed", "true")) }
        let status = if case .created = outcome { 201 } else { 200 }
        return HTTPResponse(status: status, headers: headers, body: .bytes(outcome.expense.jsonBytes))
    }
}

extension Array where Element == UInt8 {
    /// Bytes from lowercase hex (as the store keeps digests).
    init(hexBytes text: String) {
        var bytes: [UInt8] = []
        var high: UInt8?
        for c in text.utf8 {
            let v: UInt8 = c <= 0x39 ? c &- 0x30 : (c | 0x20) &- 0x61 &+ 10
            if let h = high { bytes.append(h << 4 | v); high = nil } else { high = v }
        }
        self = bytes
    }
}
