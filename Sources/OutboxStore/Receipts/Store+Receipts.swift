import ExpenseCore
import SQLite

/// Where an expense's receipt is to be read from, and the SHA-256 the
/// daemon recorded when it took it (docs/control-protocol.md, `receipt`).
public struct ReceiptSource: Sendable, Equatable {
    public enum Location: Sendable, Equatable {
        /// The daemon's own copy of an upload still in the outbox:
        /// `fileName` in the receipts directory.
        case queued(fileName: String, kind: ReceiptKind)
        /// Done with the backend: `receiptURL` as the cache holds it (the
        /// server's, or the `file://` URL of a kept copy).
        case synced(receiptURL: String)
        /// The expense has no receipt.
        case none
    }

    public let transactionID: String
    /// Whose expense it is: a fetch from the server goes with this account's token.
    public let account: String
    public let location: Location
    /// Recorded with the job that brought the bytes; nil for a receipt this
    /// daemon never took (attached from another device), took before it
    /// recorded digests, or that a change made elsewhere may have replaced
    /// since (``Store/upsert(_:_:account:now:ownAnswer:)``).
    public let sha256: [UInt8]?

    public init(transactionID: String, account: String, location: Location, sha256: [UInt8]?) {
        self.transactionID = transactionID
        self.account = account
        self.location = location
        self.sha256 = sha256
    }
}

extension Store {
    /// Records the SHA-256 of a receipt whose job is being inserted, in the
    /// caller's transaction; nothing when the copy computed none.
    static func recordDigest(_ db: Connection, of receipt: StagedReceipt, transactionID: String) throws {
        guard let digest = receipt.digest else { return }
        try db.execute("INSERT INTO receipt_digests (job_uuid, transaction_id, sha256) VALUES (?, ?, ?)",
                       [.text(receipt.jobUUID), .text(transactionID), .blob(digest)])
    }

    /// The upload `job` applied: its digest is the expense's receipt's now,
    /// and the one before goes. In the transaction that removes the job.
    /// An older upload still waiting (one that needs attention: a newer one
    /// went past it) is superseded and goes too, so no retry can put the
    /// older file back; its file is the start-up sweep's (no job names it).
    static func markReceiptApplied(_ db: Connection, _ job: OutboxJob) throws {
        try db.execute("DELETE FROM jobs WHERE transaction_id = ? AND kind = 'receipt' AND seq < ? AND state != 'sending'",
                       [.text(job.transactionID), .integer(job.seq)])
        try db.execute("DELETE FROM receipt_digests WHERE transaction_id = ? AND applied = 1 AND job_uuid != ?",
                       [.text(job.transactionID), .text(job.uuid)])
        // What the backend has is what was sent: the legible copy, when one was.
        try db.execute("""
            UPDATE receipt_digests SET applied = 1,
                sha256 = COALESCE((SELECT sha256 FROM receipt_copies WHERE job_uuid = ?1 AND file IS NOT NULL), sha256)
            WHERE job_uuid = ?1
            """, [.text(job.uuid)])
    }

    /// Where the receipt of the expense `ref` names is: the newest upload
    /// still queued (or in flight), else what the backend has.
    /// - Throws: `.notFound` / `.ambiguous` as every op, within `scope`.
    public func receiptSource(ref: String, in scope: AccountScope = .all) async throws -> ReceiptSource {
        try await database.read { db in
            let transactionID = try Store.resolve(db, ref: ref, in: scope)
            guard let view = try Store.view(db, transactionID: transactionID) else {
                throw StoreError(.notFound, "no expense matches '\(ref)'")
            }
            let account = try db.query("SELECT \(Store.accountOf(1))", [.text(transactionID)]) { $0.string(0) }.first ?? AccountName.defaultName
            let queued = try db.query("""
                SELECT uuid, receipt_file, receipt_type FROM jobs
                WHERE transaction_id = ? AND kind = 'receipt' AND receipt_file IS NOT NULL ORDER BY seq DESC LIMIT 1
                """, [.text(transactionID)]) { ($0.string(0), $0.string(1), ReceiptKind(rawValue: $0.string(2)) ?? .jpeg) }.first
            if let (uuid, file, kind) = queued {
                let digest = try db.query("SELECT sha256 FROM receipt_digests WHERE job_uuid = ?", [.text(uuid)]) { $0.blob(0) }.first ?? nil
                return ReceiptSource(transactionID: transactionID, account: account, location: .queued(fileName: file, kind: kind), sha256: digest)
            }
            guard let url = view.receiptURL else {
                return ReceiptSource(transactionID: transactionID, account: account, location: .none, sha256: nil)
            }
            let digest = try db.query("SELECT sha256 FROM receipt_digests WHERE transaction_id = ? AND applied = 1",
                                      [.text(transactionID)]) { $0.blob(0) }.first ?? nil
            return ReceiptSource(transactionID: transactionID, account: account, location: .synced(receiptURL: url), sha256: digest)
        }
    }

    /// Attaches a staged receipt to an expense that has none, or replaces
    /// its receipt, with `fields` changed too (may be empty), in one
    /// transaction: an upload still queued and not on its way is dropped
    /// (the newest file wins, one upload); one in flight stays, and this
    /// one follows it. The staged file is removed when this fails, the
    /// dropped uploads' files once it committed. A receipt that does not
    /// fit the outbox's limits is refused (``OutboxRefusal``), as an add's.
    public func attachReceipt(ref: String, _ receipt: StagedReceipt, fields: ExpenseFields, now: Int64,
                              in scope: AccountScope = .all) async throws -> ExpenseView {
        let result: (after: ExpenseView, superseded: [String])
        let reading = readsReceipts
        do {
            result = try await write { [room] db, watched in
                let transactionID = try Store.resolve(db, ref: ref, in: scope)
                let states = try StateChanges(db, watched: watched, [transactionID])
                let view = try Store.viewToChange(db, transactionID: transactionID, ref: ref)
                try Store.checkEditable(view)
                if !fields.isEmpty { try Store.queueEdit(db, view, fields: fields, now: now) }
                let superseded = try db.query("""
                    SELECT seq, receipt_file FROM jobs WHERE transaction_id = ? AND kind = 'receipt' AND state != 'sending'
                    """, [.text(transactionID)]) { ($0.int64(0), $0.optionalString(1)) }
                for (seq, _) in superseded { try db.execute("DELETE FROM jobs WHERE seq = ?", [.integer(seq)]) }
                // After the uploads it replaces are gone: their room is this one's.
                try Store.admit(db, .attach(receiptBytes: Int64(receipt.size), copied: true), room: room)
                try db.execute("""
                    INSERT INTO jobs (seq, uuid, kind, transaction_id, payload, created_at, receipt_file, receipt_type, receipt_size, account)
                    VALUES (\(Store.nextSeq), ?1, 'receipt', ?2, '{}', ?3, ?4, ?5, ?6, \(Store.accountOf(2)))
                    """, [.text(receipt.jobUUID), .text(transactionID), .integer(now), .text(receipt.fileName),
                          .text(receipt.kind.rawValue), .integer(Int64(receipt.size))])
                try Store.recordDigest(db, of: receipt, transactionID: transactionID)
                if reading {
                    // Another expense's create was sent or is on its way: the reading edits it, nothing waits.
                    try Store.insertReading(db, jobUUID: receipt.jobUUID, transactionID: transactionID, account: try Store.account(db, transactionID: transactionID),
                                            receiptOnly: false, now: now)
                }
                let held = try Store.recordReceived(db, receipt, transactionID: transactionID, now: now)
                let reason = (view.receipt == .none ? "receipt attached" : "receipt replaced") + (fields.isEmpty ? "" : "; " + Store.edited(fields))
                    + (held.map { "; \($0)" } ?? "")
                return ((try Store.view(db, transactionID: transactionID)!, superseded.compactMap(\.1)), try states.changes(db) { _, _ in reason })
            }
        } catch {
            try? receipts.remove(receipt.fileName)
            throw refusal(forFailure: error) ?? error
        }
        for file in result.superseded { try? receipts.remove(file) }
        return result.after
    }
}
