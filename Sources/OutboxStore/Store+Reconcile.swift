import Posix
import SQLite

/// What start-up reconciliation found and did.
public struct ReconcileReport: Sendable, Equatable {
    /// Jobs found `sending` (the daemon died mid-request), now queued again;
    /// their resend is a replay thanks to their idempotency key.
    public var requeued = 0
    /// Receipt files no job references, removed.
    public var removedReceipts: [String] = []
    /// Receipt files jobs reference that are missing (left as they are;
    /// sending those jobs will say so).
    public var missingReceipts: [String] = []
}

extension Store {
    /// Brings the store back to a consistent state after whatever stopped
    /// the last run. Blocking; called once at start-up, before `READY=1`.
    ///
    /// Receipt files are swept only after the job table was read cleanly,
    /// and only files named the way the daemon names them.
    public func reconcile() throws -> ReconcileReport {
        var report = ReconcileReport()
        let referenced: [String] = try database.sync { db in
            try db.transaction {
                try db.execute("UPDATE jobs SET state = 'queued' WHERE state = 'sending'", [])
                report.requeued = db.changes
                // An upload's file, its copy, and the originals kept of copies sent.
                return try db.query("""
                    SELECT receipt_file FROM jobs WHERE receipt_file IS NOT NULL
                    UNION SELECT file FROM receipt_copies WHERE file IS NOT NULL
                    UNION SELECT file FROM receipt_originals WHERE removed_at IS NULL
                    """) { $0.string(0) }
            }
        }
        report.removedReceipts = try receipts.sweep(keeping: Set(referenced))
        report.missingReceipts = referenced.filter { !FileSystem.exists(receipts.filePath($0)) }
        return report
    }
}
