/// What to do with a job after one response (or none), per contract.md's
/// classification table. Pure: the drainer applies it to the store.
public enum JobUpdate: Sendable, Equatable {
    /// Applied: store the expense (when the body held one), remove the job.
    case applied(CanonicalExpense?)
    /// The expense was deleted on the server: this receipt upload is moot;
    /// remove the job and its file.
    case dropReceipt
    /// Back to the queue untouched (transport failure, auth pause): no
    /// attempt counted.
    case requeue
    /// Try again at `nextAttemptAt`.
    case retry(nextAttemptAt: Int64, attempts: Int, transientAttempts: Int, error: String, errorClass: String)
    /// Stop trying; wait for `retry` or `discard`.
    case needsAttention(attempts: Int, transientAttempts: Int, error: String, errorClass: String)
}
