import ExpenseCore
import Testing

/// What each outcome does to a job, whatever backend it came from
/// (expense-server's statuses through it: AnswerClassificationTests).
@Suite struct RetryPolicyTests {
    let policy = RetryPolicy(backoff: Backoff(baseMilliseconds: 1000, capMilliseconds: 60_000), maxAttempts: 2, maxTransientAttempts: 2)

    static func job(_ kind: JobKind, attempts: Int = 0, transient: Int = 0) -> OutboxJob {
        OutboxJob(seq: 1, uuid: "1b4e28ba-2fa1-11d2-883f-0000f87d3b6e", kind: kind, transactionID: "cp-0206e11a39722b8b0b0d34",
                  attempts: attempts, transientAttempts: transient)
    }

    static func failed(_ kind: SyncFailure.Kind, retryAfter: Int64? = nil) -> SyncOutcome {
        .failed(SyncFailure(kind, summary: "x", retryAfterMilliseconds: retryAfter))
    }

    @Test(arguments: [
        // (job, outcome, expected) with random() = 1 and now = 1000.
        (job(.create), SyncOutcome.unanswered(reason: "r", requestSent: true), JobUpdate.requeue),
        (job(.create), .refused(code: "401", summary: "401"), .requeue),
        (job(.receipt), .receiptUnreadable(reason: "gone"), .requeue),
        (job(.create), .applied(nil, replayed: true, code: "200"), .applied(nil)),
        (job(.create), failed(.rejected), .retry(nextAttemptAt: 2000, attempts: 1, transientAttempts: 0, error: "x", errorClass: "rejected")),
        (job(.create, attempts: 1), failed(.rejected), .needsAttention(attempts: 2, transientAttempts: 0, error: "x", errorClass: "rejected")),
        (job(.create), failed(.transient, retryAfter: 7000), .retry(nextAttemptAt: 8000, attempts: 0, transientAttempts: 1, error: "x", errorClass: "transient")),
        (job(.create, transient: 1), failed(.transient), .needsAttention(attempts: 0, transientAttempts: 2, error: "x", errorClass: "transient")),
        (job(.edit, attempts: 1, transient: 1), failed(.inProgress), .retry(nextAttemptAt: 2000, attempts: 1, transientAttempts: 1, error: "x", errorClass: "in_progress")),
        (job(.receipt), failed(.notFound, retryAfter: 9000), .retry(nextAttemptAt: 2000, attempts: 0, transientAttempts: 1, error: "x", errorClass: "waiting")),
        (job(.receipt, transient: 1), failed(.notFound), .needsAttention(attempts: 0, transientAttempts: 2, error: "x", errorClass: "waiting")),
        (job(.edit), failed(.notFound), .retry(nextAttemptAt: 2000, attempts: 1, transientAttempts: 0, error: "x", errorClass: "rejected")),
        (job(.receipt), failed(.gone), .dropReceipt),
        (job(.delete), failed(.gone), .applied(nil)),
        (job(.edit), failed(.gone), .needsAttention(attempts: 1, transientAttempts: 0, error: "x", errorClass: "gone")),
        (job(.create), failed(.gone), .retry(nextAttemptAt: 2000, attempts: 1, transientAttempts: 0, error: "x", errorClass: "rejected")),
        // Over the server's limit: said at once, whatever budget is left.
        (job(.receipt), failed(.tooLarge), .needsAttention(attempts: 1, transientAttempts: 0, error: "x", errorClass: "too_large")),
        (job(.receipt, attempts: 3, transient: 2), failed(.tooLarge), .needsAttention(attempts: 4, transientAttempts: 2, error: "x", errorClass: "too_large")),
    ] as [(OutboxJob, SyncOutcome, JobUpdate)])
    func outcome_decidesTheJobsFate(job: OutboxJob, outcome: SyncOutcome, expected: JobUpdate) {
        #expect(policy.update(for: job, after: outcome, now: 1000, random: { 1 }) == expected)
    }
}
