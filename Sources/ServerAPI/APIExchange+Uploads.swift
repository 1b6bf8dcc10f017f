import Digest
import ExpenseCore
import HTTPD
import Posix
import ServerStorage

/// Resumable receipt uploads (contract.md, "Resumable uploads";
/// draft-ietf-httpbis-resumable-upload-10): creation on the receipt's
/// path, then offset retrieval, appends and cancellation on the upload's
/// own. Every step that changes an upload holds its Idempotency-Key as in
/// progress, so two requests never append to one upload at once, in this
/// or another server process.
extension APIExchange {
    // MARK: POST /v1/expenses/{id}/receipt

    func beginUploadCreation(user: Int64, id: String) throws {
        let key = try IdempotencyKey.parse(head.values(of: "Idempotency-Key"))
        let transactionID = try expenseID(id)
        let kind = try receiptKind()
        guard let complete = try UploadField.boolean(head.values(of: "Upload-Complete"), "Upload-Complete") else {
            throw APIError.uploadFieldInvalid("Upload-Complete", "is required to create a resumable upload (?0 or ?1)")
        }
        guard let bodyLength = head.contentLength, head.value(of: "Transfer-Encoding") == nil else { throw APIError.lengthRequired }
        let declared = try UploadField.integer(head.values(of: "Upload-Length"), "Upload-Length")
        let length: Int64
        switch (declared, complete) {
        case (let value?, true) where value != bodyLength:
            throw APIError.inconsistentUploadLength("Upload-Length is \(value) but the complete upload's body has \(bodyLength) bytes")
        case (let value?, _): length = value
        case (nil, true): length = bodyLength
        case (nil, false): throw APIError.uploadFieldInvalid("Upload-Length", "is required: the receipt's size is checked before any byte is kept")
        }
        guard bodyLength <= length else {
            throw APIError.inconsistentUploadLength("the body has \(bodyLength) bytes, more than the Upload-Length of \(length)")
        }
        let limit = service.settings.receiptMaxBytes
        guard length <= limit else { throw APIError.payloadTooLarge(limit: limit, what: "the receipt") }
        let digest = try ReprDigest.sha256(head.values(of: "Repr-Digest"))
        let operation = Self.receiptOperation(user: user, key: key, transactionID: transactionID, digest: digest)
        try claim(user: user, key: key)
        // The key's upload was completed: a repeat is a replay. A read
        // first: the replay is a write transaction, and most keys are new.
        if try service.storage.hasIdempotencyRecord(user: user, key: key), let outcome = try service.storage.replay(operation) {
            completion = { [unowned self] in respond(outcome) }
            return
        }
        guard let stored = try service.storage.expense(transactionID, user: user) else { throw APIError.expenseNotFound }
        guard !stored.expense.deleted else { throw APIError.expenseDeleted }
        let fresh = UploadRecord(id: UploadRecord.newID(), user: user, key: key, transactionID: transactionID,
                                 contentType: kind.contentType, length: length, sha256: Hex.encode(digest),
                                 offset: 0, touchedMilliseconds: Clock.wallMilliseconds)
        var record = try service.storage.openUpload(fresh)
        if record.id != fresh.id && isExpired(record) {
            try service.storage.removeUpload(id: record.id)
            record = try service.storage.openUpload(fresh)
        }
        guard record.transactionID == fresh.transactionID, record.contentType == fresh.contentType,
              record.length == fresh.length, record.sha256 == fresh.sha256 else { throw APIError.idempotencyKeyReused }
        let isRepeat = record.id != fresh.id
        if bodyLength == 0 && !complete {
            completion = { [unowned self] in uploadAnswer(record, status: 201, repeated: isRepeat) }
            return
        }
        // Bytes with the creation are an append at offset 0.
        guard record.offset == 0 else { throw APIError.mismatchingUploadOffset(expected: record.offset, provided: 0) }
        startAppend(record, length: bodyLength, completes: complete, operation: operation, creation: true)
    }

    // MARK: HEAD /v1/uploads/{id}

    func beginUploadOffset(user: Int64, id: String) throws {
        let record = try liveUpload(user: user, id: id)
        completion = { [unowned self] in uploadAnswer(record, status: 204, repeated: false) }
    }

    // MARK: PATCH /v1/uploads/{id}

    func beginUploadAppend(user: Int64, id: String) throws {
        let mediaType = (head.value(of: "Content-Type") ?? "").split(separator: ";").first.map { $0.trimmingCharacters(" \t").lowercased() } ?? ""
        guard mediaType == "application/partial-upload" else {
            throw APIError.unsupportedMediaType("an append's body must be application/partial-upload")
        }
        guard let offset = try UploadField.integer(head.values(of: "Upload-Offset"), "Upload-Offset") else {
            throw APIError.uploadFieldInvalid("Upload-Offset", "is required: where this body starts in the upload")
        }
        guard let complete = try UploadField.boolean(head.values(of: "Upload-Complete"), "Upload-Complete") else {
            throw APIError.uploadFieldInvalid("Upload-Complete", "is required (?0 or ?1)")
        }
        let declared = try UploadField.integer(head.values(of: "Upload-Length"), "Upload-Length")
        guard let bodyLength = head.contentLength, head.value(of: "Transfer-Encoding") == nil else { throw APIError.lengthRequired }
        let first = try liveUpload(user: user, id: id)
        try claim(user: user, key: first.key)
        // Read again under the claim: an append that just ended moved it.
        let record = try liveUpload(user: user, id: id)
        if let declared, declared != record.length {
            throw APIError.inconsistentUploadLength("Upload-Length is \(declared) but the upload was created with \(record.length)")
        }
        guard offset == record.offset else { throw APIError.mismatchingUploadOffset(expected: record.offset, provided: offset) }
        guard offset + bodyLength <= record.length else {
            throw APIError.inconsistentUploadLength("\(bodyLength) bytes at offset \(offset) go past the upload's length of \(record.length)")
        }
        if complete && offset + bodyLength != record.length {
            throw APIError.inconsistentUploadLength("Upload-Complete: ?1, but \(bodyLength) bytes at offset \(offset) end before the upload's length of \(record.length)")
        }
        let operation = Self.receiptOperation(user: user, key: record.key, transactionID: record.transactionID,
                                              digest: Array(hexBytes: record.sha256))
        startAppend(record, length: bodyLength, completes: complete, operation: operation, creation: false)
    }

    // MARK: DELETE /v1/uploads/{id}

    func beginUploadCancel(user: Int64, id: String) throws {
        let record = try liveUpload(user: user, id: id)
        try claim(user: user, key: record.key)
        completion = { [unowned self] in
            try service.storage.removeUpload(id: record.id)
            return HTTPResponse(status: 204)
        }
    }

    // MARK: Steps

    /// The request's fingerprint is a `PUT` of the same bytes: a receipt
    /// sent whole or resumably is one operation for its key.
    private static func receiptOperation(user: Int64, key: String, transactionID: String, digest: [UInt8]) -> IdempotentOperation {
        IdempotentOperation(user: user, key: key, method: "PUT", path: "/v1/expenses/\(transactionID)/receipt", bodyDigest: digest)
    }

    private func isExpired(_ record: UploadRecord) -> Bool {
        record.isExpired(nowMilliseconds: Clock.wallMilliseconds, expiryMilliseconds: service.settings.uploadExpirySeconds * 1000)
    }

    /// The upload `id` of `user`; an expired one is removed.
    /// - Throws: `404 upload_not_found` (another user's upload is none).
    private func liveUpload(user: Int64, id: String) throws -> UploadRecord {
        guard UploadRecord.isValidID(id), let record = try service.storage.upload(id: id, user: user) else { throw APIError.uploadNotFound }
        transactionID = record.transactionID
        if isExpired(record) {
            try service.storage.removeUpload(id: record.id)
            throw APIError.uploadNotFound
        }
        return record
    }

    private func startAppend(_ record: UploadRecord, length: Int64, completes: Bool, operation: IdempotentOperation, creation: Bool) {
        let append = UploadAppend(record: record, announcedLength: length, completes: completes, staging: service.storage.staging)
        receiver = .append(append)
        completion = { [unowned self] in
            guard append.completes else {
                guard try append.keep(in: service.storage, nowMilliseconds: Clock.wallMilliseconds) else {
                    throw APIError.uploadNotFound
                }
                var kept = record
                kept.offset += append.received
                return uploadAnswer(kept, status: creation ? 201 : 204, repeated: false)
            }
            return try complete(append, operation: operation)
        }
    }

    /// The last bytes arrived: the receipt is checked whole and attached as
    /// a `PUT` of it would be; the upload goes once it has an answer that
    /// will not change (attached, replayed, or refused for good).
    private func complete(_ append: UploadAppend, operation: IdempotentOperation) throws -> HTTPResponse {
        let id = append.record.id
        let staged: StagedReceipt
        do {
            staged = try append.stage(from: service.storage)
        } catch let error as APIError {
            try? service.storage.removeUpload(id: id)
            throw error
        }
        do {
            let outcome = try service.storage.attachReceipt(operation, transactionID: append.record.transactionID, staged)
            try? service.storage.removeUpload(id: id)
            return respond(outcome)
        } catch let error as StorageError where error.code == .expenseDeleted || error.code == .idempotencyKeyReused {
            try? service.storage.removeUpload(id: id)
            throw error
        }
    }

    /// Keeps what a cut append received (``complete(status:termination:)``).
    func keepCutAppend(_ append: UploadAppend) {
        guard !append.isSettled else { return }
        do {
            _ = try append.keep(in: service.storage, nowMilliseconds: Clock.wallMilliseconds)
        } catch {
            service.log.log(.warning, "Failed to keep the \(append.received) bytes of a cut append to \(append.record.path) (\(append.record.transactionID)): \(error)")
        }
    }

    /// Where an upload stands: `201` for its creation, `204` otherwise.
    private func uploadAnswer(_ record: UploadRecord, status: Int, repeated: Bool) -> HTTPResponse {
        replayed = repeated
        let left = max(0, service.settings.uploadExpirySeconds - (Clock.wallMilliseconds - record.touchedMilliseconds) / 1000)
        var headers = [
            HTTPHeader("Upload-Offset", String(record.offset)),
            HTTPHeader("Upload-Complete", "?0"),
            HTTPHeader("Upload-Length", String(record.length)),
            HTTPHeader("Upload-Limit", "max-size=\(service.settings.receiptMaxBytes), expires=\(left)"),
            HTTPHeader("Cache-Control", "no-store"),
        ]
        if status == 201 { headers.append(HTTPHeader("Location", record.path)) }
        if repeated { headers.append(HTTPHeader("Idempotent-Replayed", "true")) }
        return HTTPResponse(status: status, headers: headers)
    }
}

/// The structured fields (RFC 9651) of resumable uploads: a boolean
/// (`Upload-Complete`) and non-negative integers (`Upload-Offset`,
/// `Upload-Length`). Parameters are allowed and ignored; anything else,
/// or the field sent twice, is a `400`.
enum UploadField {
    static func boolean(_ values: [String], _ name: String) throws(APIError) -> Bool? {
        guard let item = try item(values, name) else { return nil }
        switch item {
        case "?1": return true
        case "?0": return false
        default: throw .uploadFieldInvalid(name, "must be a structured boolean, ?0 or ?1")
        }
    }

    static func integer(_ values: [String], _ name: String) throws(APIError) -> Int64? {
        guard let item = try item(values, name) else { return nil }
        guard (1...15).contains(item.utf8.count), item.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int64(item) else {
            throw .uploadFieldInvalid(name, "must be a non-negative integer of at most 15 digits")
        }
        return value
    }

    /// The field's bare item, without parameters.
    private static func item(_ values: [String], _ name: String) throws(APIError) -> Substring? {
        guard let value = values.first else { return nil }
        guard values.count == 1 else { throw .uploadFieldInvalid(name, "was sent more than once") }
        let bare = value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return Substring(bare).trimmingCharacters(" \t")
    }
}

/// The body of one append (or of a creation that carries bytes): written
/// to a file of the staging folder as it arrives, then either kept as the
/// upload's next bytes (the request ended or was cut before the end) or,
/// with the bytes the upload holds, checked whole as the receipt.
final class UploadAppend {
    let record: UploadRecord
    /// `Content-Length`, already checked against the upload's length.
    let announcedLength: Int64
    /// `Upload-Complete: ?1`: this body ends the upload.
    let completes: Bool
    private let staging: UploadStaging
    /// A body from offset 0 that ends the upload is hashed as it arrives,
    /// as a `PUT` is; any other is hashed with the rest when it completes.
    private var hasher: SHA256?
    private var file: FileDescriptor?
    private var path: String?
    private(set) var received: Int64 = 0
    private var failure: Error?
    /// True once kept, checked or refused: nothing is left to keep.
    private(set) var isSettled = false

    init(record: UploadRecord, announcedLength: Int64, completes: Bool, staging: UploadStaging) {
        self.record = record
        self.announcedLength = announcedLength
        self.completes = completes
        self.staging = staging
        if record.offset == 0 && completes { hasher = SHA256() }
    }

    deinit { discard() }

    /// - Returns: false when more arrives than `Content-Length` announced.
    func receive(_ chunk: UnsafeRawBufferPointer) -> Bool {
        received += Int64(chunk.count)
        guard received <= announcedLength else {
            failure = APIError.inconsistentUploadLength("more bytes arrived than Content-Length announced")
            discard()
            return false
        }
        guard failure == nil else { return true }
        hasher?.update(chunk)
        do {
            if file == nil { (file, path) = try staging.makeFile() }
            try file!.writeAll(chunk)
        } catch {
            failure = StorageError(.unavailable, "the append could not be written", cause: error)
            discard()
        }
        return true
    }

    /// Appends what arrived to the upload.
    /// - Returns: false when the upload is gone or moved (nothing kept).
    func keep(in storage: some ResumableUploads, nowMilliseconds: Int64) throws -> Bool {
        isSettled = true
        defer { discard() }
        if let failure { throw failure }
        guard received > 0, let file else { return true }
        return try storage.appendUpload(id: record.id, at: record.offset, from: file, count: received, nowMilliseconds: nowMilliseconds)
    }

    /// The whole receipt in one staged file, checked as a `PUT`'s body is.
    /// - Throws: `415` for bytes that are not the declared type,
    ///   `400 digest_mismatch`, `400 inconsistent_upload_length`.
    func stage(from storage: some ResumableUploads) throws -> StagedReceipt {
        isSettled = true
        defer { discard() }
        if let failure { throw failure }
        guard record.offset + received == record.length else {
            throw APIError.inconsistentUploadLength("the upload ended at \(record.offset + received) bytes, not its length of \(record.length)")
        }
        guard let kind = ReceiptKind(contentType: record.contentType) else { throw APIError.internalError }
        let digest: [UInt8]
        let staged: (FileDescriptor, String)
        if let whole = hasher.take(), let file, let path {
            // Every byte came with this request, hashed as it arrived.
            digest = whole.finalize()
            staged = (file, path)
            self.file = nil
            self.path = nil
        } else {
            let (out, outPath) = try staging.makeFile()
            var assembly = SHA256()
            var size: Int64 = 0
            do {
                try storage.readUpload(id: record.id) { bytes in
                    assembly.update(bytes)
                    try out.writeAll(bytes)
                    size += Int64(bytes.count)
                }
                guard size == record.offset else {
                    throw StorageError(.failed, "the upload holds \(size) bytes, not the \(record.offset) its record says")
                }
                if let file, received > 0 {
                    try file.forEachPart(count: received) { part in
                        assembly.update(part)
                        try part.withUnsafeBytes { try out.writeAll($0) }
                    }
                }
            } catch {
                try? FileSystem.remove(outPath)
                throw error
            }
            digest = assembly.finalize()
            staged = (out, outPath)
        }
        var leading = [UInt8](repeating: 0, count: ReceiptKind.magicLength)
        let n = try leading.withUnsafeMutableBytes { try staged.0.read(into: $0, at: 0) }
        guard ReceiptKind.detect(leading.prefix(n)) == kind else {
            try? FileSystem.remove(staged.1)
            throw APIError.receiptTypeMismatch(kind)
        }
        guard Hex.encode(digest) == record.sha256 else {
            try? FileSystem.remove(staged.1)
            throw APIError.digestMismatch
        }
        return StagedReceipt(file: staged.0, path: staged.1, kind: kind, sha256: record.sha256, size: record.length)
    }

    /// Removes this request's file, if any.
    func discard() {
        file = nil
        if let path { try? FileSystem.remove(path) }
        path = nil
    }
}
