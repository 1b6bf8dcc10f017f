import Posix
import SQLite

/// What start-up reconciliation found and did.
public struct ReconcileReport: Sendable, Equatable {
    /// Jobs found `sending` (the daemon died mid-request), now queued again;
    /// their resend is a replay thanks to their idempotency key, or a
    /// lookup of their marker.
    public var requeued = 0
    /// Of those, the creates that wait before their marker is looked up
    /// (``Store/reconcile(settlingCreatesFor:now:)``).
    public var settling = 0
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
    ///
    /// - Parameter settle: for a backend without idempotency keys (its
    ///   resend of a create is a lookup of the marker first), how long the
    ///   creates the last run was sending wait before they are tried: a
    ///   request it handed to the network may still be committing at the
    ///   backend (the process that sent it is gone, the request is not), and
    ///   a lookup before it commits would find nothing and send the create
    ///   twice. The longest a request may take, as the running daemon waits
    ///   for its own; counted as a transient attempt, so that `show` says
    ///   why and the drain wakes for it. 0: requeued at once (a replay is safe).
    public func reconcile(settlingCreatesFor settle: Int64 = 0, now: Int64 = Clock.wallMilliseconds) throws -> ReconcileReport {
        var report = ReconcileReport()
        let referenced: [String] = try database.sync { db in
            try db.transaction {
                if settle > 0 {
                    try db.execute("""
                        UPDATE jobs SET transient_attempts = transient_attempts + 1, next_attempt_at = max(next_attempt_at, ?1),
                            last_error_class = 'transient', last_error = ?2
                        WHERE state = 'sending' AND kind = 'create'
                        """, [.integer(now + settle),
                              .text("interrupted while sending: its marker is looked up once a request the last run sent can no longer be committing")])
                    report.settling = db.changes
                }
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
