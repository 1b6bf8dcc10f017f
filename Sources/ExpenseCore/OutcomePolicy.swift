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

    /// The update for `job` after `status` with `body` and `headers`.
    /// - Parameter random: uniform in `0...1`, for backoff jitter.
    public func update(for job: OutboxJob, status: Int, body: [UInt8], retryAfter: String?, now: Int64,
                       random: () -> Double) -> JobUpdate {
        if (200..<300).contains(status) {
            return .applied((try? JSONValue.parse(body)).flatMap(CanonicalExpense.init(json:)))
        }
        let serverError = ServerError(body: body)
        let outcome = Outcome.classify(status: status, errorCode: serverError.code)
        let message = serverError.summary(status: status)
        switch outcome {
        case .applied:
            return .applied(nil)
        case .transport, .auth:
            return .requeue
        case .inProgress:
            // The first request with this key is still being processed: come
            // back shortly, without blaming the job.
            let delay = backoff.delay(attempt: 1, retryAfterMilliseconds: retryAfter.flatMap(Backoff.parseRetryAfter), random: random)
            return .retry(nextAttemptAt: now + max(delay, 200), attempts: job.attempts, transientAttempts: job.transientAttempts,
                          error: message, errorClass: outcome.className)
        case .transient:
            let transient = job.transientAttempts + 1
            if transient >= maxTransientAttempts {
                return .needsAttention(attempts: job.attempts, transientAttempts: transient, error: message, errorClass: outcome.className)
            }
            let delay = backoff.delay(attempt: transient, retryAfterMilliseconds: retryAfter.flatMap(Backoff.parseRetryAfter), random: random)
            return .retry(nextAttemptAt: now + delay, attempts: job.attempts, transientAttempts: transient,
                          error: message, errorClass: outcome.className)
        case .rejected:
            if job.kind == .receipt && status == 410 { return .dropReceipt }
            if job.kind == .receipt && status == 404 {
                // The server does not have the expense (yet): the upload waits
                // for it like a transient failure, within that budget.
                let transient = job.transientAttempts + 1
                if transient >= maxTransientAttempts {
                    return .needsAttention(attempts: job.attempts, transientAttempts: transient, error: message, errorClass: "waiting")
                }
                let delay = backoff.delay(attempt: transient, retryAfterMilliseconds: nil, random: random)
                return .retry(nextAttemptAt: now + delay, attempts: job.attempts, transientAttempts: transient,
                              error: message, errorClass: "waiting")
            }
            if job.kind == .delete && status == 410 { return .applied(nil) }
            if job.kind == .edit && status == 410 {
                // Deleted on the server: retrying cannot help (AttentionHint);
                // the user discards it.
                return .needsAttention(attempts: job.attempts + 1, transientAttempts: job.transientAttempts,
                                       error: message, errorClass: "gone")
            }
            let attempts = job.attempts + 1
            if attempts >= maxAttempts {
                return .needsAttention(attempts: attempts, transientAttempts: job.transientAttempts, error: message, errorClass: outcome.className)
            }
            let delay = backoff.delay(attempt: attempts, retryAfterMilliseconds: retryAfter.flatMap(Backoff.parseRetryAfter), random: random)
            return .retry(nextAttemptAt: now + delay, attempts: attempts, transientAttempts: job.transientAttempts,
                          error: message, errorClass: outcome.className)
        }
    }
}
