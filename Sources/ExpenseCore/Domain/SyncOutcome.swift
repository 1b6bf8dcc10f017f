/// What one request to a backend came to, in the terms of contract.md's
/// table ("How a client classifies an outcome"). Each backend maps its own
/// answers to it (for expense-server: the HTTP status and error code); the
/// sync engine and ``RetryPolicy`` decide what follows from it alone, so
/// they never see HTTP.
public enum SyncOutcome: Sendable, Equatable {
    /// The backend applied the job: the record as it now holds it (nil
    /// when its answer carried none), and whether it recognised a repeat.
    /// `code` names the answer in log lines (`201`).
    case applied(CanonicalExpense?, replayed: Bool, code: String)
    /// No answer at all (transport): the job goes back, nothing counted.
    /// `requestSent` is false when not one byte left this machine, so the
    /// backend cannot have it.
    case unanswered(reason: String, requestSent: Bool)
    /// The backend refused our credentials (auth): sending pauses; no job
    /// is blamed. `summary` is the job's last error.
    case refused(code: String, summary: String)
    /// The backend answered without applying the job.
    case failed(SyncFailure)
    /// The job's receipt file could not be read, so nothing was sent: the
    /// job needs attention (class `local`).
    case receiptUnreadable(reason: String)
}

/// An answer that did not apply a job, and how the policy treats it.
public struct SyncFailure: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// Try again later, in a budget of its own (5xx, 429, a timeout
        /// the backend answered).
        case transient
        /// The same job is still being processed: come back shortly,
        /// counting nothing.
        case inProgress
        /// Refused for what it asks: counts toward needs attention.
        case rejected
        /// Refused because what it refers to is not there (yet): a
        /// receipt waits for its expense; anything else is rejected.
        case notFound
        /// Refused because what it refers to was deleted for good: a
        /// receipt is dropped, a delete is done, an edit can never apply.
        case gone
        /// The backend cannot make this change at all (fava cannot edit or
        /// delete an entry through its API): needs attention at once, its
        /// summary saying what to do by hand.
        case unsupported
        /// The backend refuses a receipt this large (a `413`, its limit in
        /// the summary): needs attention at once; sending the same bytes
        /// again helps only once the limit is raised.
        case tooLarge
    }

    public var kind: Kind
    /// What the backend said, without personal data, as the job's last
    /// error: "422 invalid_field: amount has 3 fraction digits".
    public var summary: String
    /// How long the backend asked us to wait (`Retry-After`).
    public var retryAfterMilliseconds: Int64?

    public init(_ kind: Kind, summary: String, retryAfterMilliseconds: Int64? = nil) {
        self.kind = kind
        self.summary = summary
        self.retryAfterMilliseconds = retryAfterMilliseconds
    }

    /// The class the failure is named by.
    public var outcome: Outcome {
        switch kind {
        case .transient: .transient
        case .inProgress: .inProgress
        case .rejected, .notFound, .gone, .unsupported, .tooLarge: .rejected
        }
    }
}
