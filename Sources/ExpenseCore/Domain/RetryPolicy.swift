/// The knobs of the policy.
public struct RetryPolicy: Sendable, Equatable {
    public var backoff: Backoff
    /// Rejections (other 4xx) before a job needs attention.
    public var maxAttempts: Int
    /// Transient failures (5xx, 429, …) before a job needs attention.
    public var maxTransientAttempts: Int

    public init(backoff: Backoff = Backoff(), maxAttempts: Int = 5, maxTransientAttempts: Int = 50) {
        self.backoff = backoff
        self.maxAttempts = maxAttempts
        self.maxTransientAttempts = maxTransientAttempts
    }

    /// The update for `job` after `outcome`.
    /// - Parameter random: uniform in `0...1`, for backoff jitter.
    public func update(for job: OutboxJob, after outcome: SyncOutcome, now: Int64, random: () -> Double) -> JobUpdate {
        switch outcome {
        case .applied(let expense, _, _):
            return .applied(expense)
        case .unanswered, .refused, .receiptUnreadable:
            return .requeue
        case .failed(let failure):
            return update(for: job, after: failure, now: now, random: random)
        }
    }

    private func update(for job: OutboxJob, after failure: SyncFailure, now: Int64, random: () -> Double) -> JobUpdate {
        let message = failure.summary
        let className = failure.outcome.className
        switch failure.kind {
        case .inProgress:
            // The first request with this key is still being processed: come
            // back shortly, without blaming the job.
            let delay = backoff.delay(attempt: 1, retryAfterMilliseconds: failure.retryAfterMilliseconds, random: random)
            return .retry(nextAttemptAt: now + max(delay, 200), attempts: job.attempts, transientAttempts: job.transientAttempts,
                          error: message, errorClass: className)
        case .transient:
            let transient = job.transientAttempts + 1
            if transient >= maxTransientAttempts {
                return .needsAttention(attempts: job.attempts, transientAttempts: transient, error: message, errorClass: className)
            }
            let delay = backoff.delay(attempt: transient, retryAfterMilliseconds: failure.retryAfterMilliseconds, random: random)
            return .retry(nextAttemptAt: now + delay, attempts: job.attempts, transientAttempts: transient,
                          error: message, errorClass: className)
        case .gone where job.kind == .receipt:
            return .dropReceipt
        case .notFound where job.kind == .receipt:
            // The backend does not have the expense (yet): the upload waits
            // for it like a transient failure, within that budget.
            let transient = job.transientAttempts + 1
            if transient >= maxTransientAttempts {
                return .needsAttention(attempts: job.attempts, transientAttempts: transient, error: message, errorClass: "waiting")
            }
            let delay = backoff.delay(attempt: transient, retryAfterMilliseconds: nil, random: random)
            return .retry(nextAttemptAt: now + delay, attempts: job.attempts, transientAttempts: transient,
                          error: message, errorClass: "waiting")
        case .gone where job.kind == .delete:
            return .applied(nil)
        case .gone where job.kind == .edit:
            // Deleted on the backend: retrying cannot help (AttentionHint);
            // the user discards it.
            return .needsAttention(attempts: job.attempts + 1, transientAttempts: job.transientAttempts,
                                   error: message, errorClass: "gone")
        case .unsupported:
            // Sending it again can never help: said at once, not after N tries.
            return .needsAttention(attempts: job.attempts + 1, transientAttempts: job.transientAttempts,
                                   error: message, errorClass: "unsupported")
        case .tooLarge:
            // The same bytes are refused until the limit changes: at once too.
            return .needsAttention(attempts: job.attempts + 1, transientAttempts: job.transientAttempts,
                                   error: message, errorClass: "too_large")
        case .rejected, .notFound, .gone:
            let attempts = job.attempts + 1
            if attempts >= maxAttempts {
                return .needsAttention(attempts: attempts, transientAttempts: job.transientAttempts, error: message, errorClass: className)
            }
            let delay = backoff.delay(attempt: attempts, retryAfterMilliseconds: failure.retryAfterMilliseconds, random: random)
            return .retry(nextAttemptAt: now + delay, attempts: attempts, transientAttempts: job.transientAttempts,
                          error: message, errorClass: className)
        }
    }
}
