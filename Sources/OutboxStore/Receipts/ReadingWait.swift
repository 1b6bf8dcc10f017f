import ExpenseCore

/// How long a receipt-only expense's create waits for its receipt's
/// reading (docs/sync.md, "Readings"): so that a backend gets the fields
/// read with the create, not an empty expense and then an edit. The wait
/// is bounded (`reading_wait`); after it the create goes as it is and the
/// reading, when it comes, is an edit like any other.
public enum ReadingWait {
    /// An expense is receipt-only when its create carries none of the
    /// fields a reading can fill: one with an amount or a merchant typed
    /// (or from a sidecar) goes at once, and a reading fills the rest later.
    public static func isReceiptOnly(_ fields: ExpenseFields) -> Bool {
        ["merchant", "amount", "currency", "date"].allSatisfy { fields[$0] == nil }
    }

    /// The claim's condition (SQL over `jobs`) that holds a create whose
    /// receipt-only expense's reading is still to do and was queued less
    /// than the wait (milliseconds, bound at `?wait`) before now (`?1`).
    static func holdsCreate(wait: Int) -> String {
        """
        NOT (jobs.kind = 'create' AND EXISTS (SELECT 1 FROM receipt_readings r
            WHERE r.transaction_id = jobs.transaction_id AND r.receipt_only = 1 AND r.queued_at > ?1 - ?\(wait)))
        """
    }
}
