/// The classes of contract.md's table ("How a client classifies an
/// outcome"): what `show`, `status` and `stats` name a failure by. Each
/// backend sorts its own answers into them (``SyncOutcome``).
public enum Outcome: Sendable, Equatable {
    /// `2xx`: store the returned expense, remove the job.
    case applied
    /// No HTTP response at all: end the pass, count no attempt.
    case transport
    /// `408 425 429 500 502 503 504`: count a transient attempt, back off.
    case transient
    /// `409 request_in_progress`: retry later, count nothing.
    case inProgress
    /// `401 403`: pause everything until the credentials change.
    case auth
    /// Any other `4xx` (and other statuses): count an attempt toward needs-attention.
    case rejected

    /// The name stored with a job's last error and shown by `show` and `status`.
    public var className: String {
        switch self {
        case .applied: "applied"
        case .transport: "transport"
        case .transient: "transient"
        case .inProgress: "in_progress"
        case .auth: "auth"
        case .rejected: "rejected"
        }
    }
}
