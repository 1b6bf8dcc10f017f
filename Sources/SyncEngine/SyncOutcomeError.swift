import ExpenseCore

/// A ``SyncOutcome`` as the failure of a `Result`: the outcome a backend's
/// step already decided (an answer that refused, failed or could not be
/// read) before the job's own request, or instead of a listing.
public struct SyncOutcomeError: Error, Sendable {
    public let outcome: SyncOutcome
    /// Answered 2xx with a body that is not what the backend sends.
    public var isUnreadable: Bool

    public init(_ outcome: SyncOutcome, isUnreadable: Bool = false) {
        self.outcome = outcome
        self.isUnreadable = isUnreadable
    }

    /// What this failure of a listing tells the engine.
    public var changesReply: ChangesReply {
        if isUnreadable { return .malformed }
        switch outcome {
        case .unanswered(let reason, _): return .unanswered(reason: reason)
        case .refused(let code, _): return .refused(code: code)
        case .failed(let failure): return .failed(failure)
        case .applied, .receiptUnreadable: return .malformed
        }
    }
}
