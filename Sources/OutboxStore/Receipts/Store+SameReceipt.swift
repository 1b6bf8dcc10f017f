import ExpenseCore
import SQLite

// The same receipt twice (docs/receipts.md): a scan taken again, a photo
// synced twice. Neither dropped nor sent silently: held for a person.
extension Store {
    /// The error class of an expense held for its receipt; `retry` sends it anyway.
    public static let sameReceiptClass = "same_receipt"

    /// Records the digest of the bytes as received of `receipt`, the new
    /// receipt of `transactionID`, in the caller's transaction (which also
    /// queued its upload), and holds the expense when another expense of
    /// the same account still has a receipt with those bytes: its create,
    /// when that has not gone yet (nothing of the expense is sent), else
    /// the upload. Equal amounts, merchants or dates never hold anything.
    /// - Returns: the reason it was held, or nil.
    @discardableResult
    static func recordReceived(_ db: Connection, _ receipt: StagedReceipt, transactionID: String, now: Int64) throws -> String? {
        guard let digest = receipt.digest else { return nil }
        let account = try db.query("SELECT \(Store.accountOf(1))", [.text(transactionID)]) { $0.string(0) }.first ?? ""
        // The receipt it had before is not its receipt any more.
        try db.execute("DELETE FROM received_receipts WHERE transaction_id = ?", [.text(transactionID)])
        let earlier = try db.query("""
            SELECT transaction_id, taken_at FROM received_receipts WHERE account = ? AND sha256 = ? ORDER BY taken_at, transaction_id
            """, [.text(account), .blob(digest)]) { (transactionID: $0.string(0), takenAt: $0.int64(1)) }
        try db.execute("INSERT INTO received_receipts (account, sha256, transaction_id, taken_at) VALUES (?, ?, ?, ?)",
                       [.text(account), .blob(digest), .text(transactionID), .integer(now)])
        for other in earlier {
            guard let view = try Store.view(db, transactionID: other.transactionID), view.state != .deleting else { continue }
            let added = view.jobs.first { $0.kind == .create }?.createdMilliseconds
                ?? view.createdAt.flatMap(Timestamp.parse) ?? other.takenAt
            let reason = "the same receipt as \(other.transactionID) (added \(Self.day(added)))"
            try db.execute("""
                UPDATE jobs SET state = 'needs_attention', last_error = ?1, last_error_class = ?2
                WHERE seq = coalesce(
                    (SELECT seq FROM jobs WHERE transaction_id = ?3 AND kind = 'create' AND state = 'queued' AND sends = 0),
                    (SELECT seq FROM jobs WHERE uuid = ?4 AND kind = 'receipt'))
                """, [.text(reason), .text(Store.sameReceiptClass), .text(transactionID), .text(receipt.jobUUID)])
            return reason
        }
        return nil
    }

    /// `2026-12-03 14:13 UTC`: when the other expense was added, to the minute.
    static func day(_ milliseconds: Int64) -> String {
        let stamp = Timestamp.format(milliseconds: milliseconds)
        return String(stamp.prefix(10)) + " " + String(stamp.dropFirst(11).prefix(5)) + " UTC"
    }
}
