import Testing
@testable import ExpenseCore

@Suite struct OutcomeTests {
    @Test(arguments: [
        (200, nil, Outcome.applied), (201, nil, .applied),
        (408, nil, .transient), (425, nil, .transient), (429, nil, .transient),
        (500, nil, .transient), (502, nil, .transient), (503, nil, .transient), (504, nil, .transient),
        (409, "request_in_progress", .inProgress), (409, "other", .rejected),
        (401, nil, .auth), (403, nil, .auth),
        (400, "invalid_field", .rejected), (404, nil, .rejected), (422, "idempotency_key_reused", .rejected),
        (413, nil, .rejected), (415, nil, .rejected),
    ] as [(Int, String?, Outcome)])
    func classify_followsTheContractTable(status: Int, code: String?, expected: Outcome) {
        #expect(Outcome.classify(status: status, errorCode: code) == expected)
    }

    @Test func backoff_isCappedAndJittered() {
        let backoff = Backoff(baseMilliseconds: 1000, capMilliseconds: 300_000)
        #expect(backoff.delay(attempt: 1, random: { 1 }) == 1000)
        #expect(backoff.delay(attempt: 3, random: { 1 }) == 4000)
        #expect(backoff.delay(attempt: 3, random: { 0.5 }) == 2000)
        #expect(backoff.delay(attempt: 3, random: { 0 }) == 0)
        #expect(backoff.delay(attempt: 30, random: { 1 }) == 300_000)
        #expect(backoff.delay(attempt: 1000, random: { 1 }) == 300_000)
    }

    @Test func backoff_honoursRetryAfter() {
        let backoff = Backoff(baseMilliseconds: 1000, capMilliseconds: 300_000)
        #expect(backoff.delay(attempt: 1, retryAfterMilliseconds: 7000, random: { 0 }) == 7000)
        #expect(backoff.delay(attempt: 1, retryAfterMilliseconds: 10_000_000, random: { 0 }) == 300_000)
        #expect(Backoff.parseRetryAfter("7") == 7000)
        #expect(Backoff.parseRetryAfter(" 2 ") == 2000)
        #expect(Backoff.parseRetryAfter("-1") == nil)
        #expect(Backoff.parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT") == nil)
    }
}

@Suite struct RetryPolicyTests {
    let policy = RetryPolicy(backoff: Backoff(baseMilliseconds: 1000, capMilliseconds: 60_000), maxAttempts: 5, maxTransientAttempts: 3)
    let create = OutboxJob(seq: 1, uuid: "1b4e28ba-2fa1-11d2-883f-0000f87d3b6e", kind: .create, transactionID: "cp-0206e11a39722b8b0b0d34")

    func error(_ code: String) -> [UInt8] { Array(#"{"error":{"code":"\#(code)","message":"m"}}"#.utf8) }

    @Test func applied_carriesTheCanonicalExpense() {
        let body = Array(#"{"transaction_id":"cp-0206e11a39722b8b0b0d34","client_id":"1b4e28ba-2fa1-11d2-883f-0000f87d3b6e","merchant":"A","version":2,"future_field":[1,2]}"#.utf8)
        guard case .applied(let expense?) = policy.update(for: create, status: 201, body: body, retryAfter: nil, now: 0, random: { 0 }) else {
            Issue.record("expected applied with an expense")
            return
        }
        #expect(expense.merchant == "A")
        #expect(expense.version == 2)
    }

    @Test func rejected_countsUntilNeedsAttention() {
        var job = create
        for attempt in 1...4 {
            guard case .retry(_, let attempts, _, let message, let errorClass) = policy.update(for: job, status: 422, body: error("x"), retryAfter: nil, now: 0, random: { 1 }) else {
                Issue.record("expected a retry at attempt \(attempt)")
                return
            }
            #expect(attempts == attempt)
            #expect(errorClass == "rejected")
            #expect(message == "422 x: m")
            job.attempts = attempts
        }
        #expect(policy.update(for: job, status: 400, body: error("x"), retryAfter: nil, now: 0, random: { 1 })
                == .needsAttention(attempts: 5, transientAttempts: 0, error: "400 x: m", errorClass: "rejected"))
    }

    @Test func transient_honoursRetryAfterAndHasItsOwnBudget() {
        guard case .retry(let next, let attempts, let transient, _, let errorClass) = policy.update(for: create, status: 503, body: [], retryAfter: "7", now: 1000, random: { 0 }) else {
            Issue.record("expected a retry")
            return
        }
        #expect(next == 8000)
        #expect(attempts == 0)
        #expect(transient == 1)
        #expect(errorClass == "transient")
        var job = create
        job.transientAttempts = 2
        guard case .needsAttention = policy.update(for: job, status: 500, body: [], retryAfter: nil, now: 0, random: { 0 }) else {
            Issue.record("expected needs attention after the transient budget")
            return
        }
    }

    @Test func inProgressAndAuthAndTransport_countNothing() {
        guard case .retry(_, 0, 0, _, "in_progress") = policy.update(for: create, status: 409, body: error("request_in_progress"), retryAfter: nil, now: 0, random: { 0 }) else {
            Issue.record("409 request_in_progress must retry without counting")
            return
        }
        #expect(policy.update(for: create, status: 401, body: [], retryAfter: nil, now: 0, random: { 0 }) == .requeue)
        #expect(policy.update(for: create, status: 403, body: [], retryAfter: nil, now: 0, random: { 0 }) == .requeue)
    }

    @Test func receiptOfADeletedExpense_isDroppedAndAMissingOneWaits() {
        var receipt = create
        receipt.kind = .receipt
        #expect(policy.update(for: receipt, status: 410, body: error("expense_deleted"), retryAfter: nil, now: 0, random: { 0 }) == .dropReceipt)
        guard case .retry(_, 0, 1, _, "waiting") = policy.update(for: receipt, status: 404, body: error("expense_not_found"), retryAfter: nil, now: 0, random: { 0 }) else {
            Issue.record("404 on a receipt waits")
            return
        }
    }

    @Test func editOfADeletedExpense_needsAttentionAtOnce() {
        var edit = create
        edit.kind = .edit
        guard case .needsAttention(1, 0, _, "gone") = policy.update(for: edit, status: 410, body: error("expense_deleted"), retryAfter: nil, now: 0, random: { 0 }) else {
            Issue.record("an edit of a deleted expense needs attention")
            return
        }
    }

    /// Every class a job can stop with gets a hint, and each hint names only
    /// what can work: a change to an expense gone from the server is never
    /// told to retry.
    @Test func everyStoppingClass_getsAHintThatIsTrue() {
        var classes: Set<String> = ["local", "gone"]
        var job = create
        for (kind, status) in [(JobKind.create, 400), (.create, 503), (.receipt, 404), (.edit, 410), (.edit, 422), (.delete, 404)] {
            job.kind = kind
            job.attempts = 100
            job.transientAttempts = 100
            if case .needsAttention(_, _, _, let errorClass) = policy.update(for: job, status: status, body: error("x"), retryAfter: nil, now: 0, random: { 0 }) {
                classes.insert(errorClass)
            } else {
                Issue.record("\(kind) \(status) with its budgets spent should need attention")
            }
        }
        #expect(classes == ["rejected", "transient", "waiting", "gone", "local"])
        for errorClass in classes {
            let hint = AttentionHint.text(errorClass: errorClass, transactionID: "cp-1")
            #expect(hint.contains("'expensectl discard cp-1'"), "\(errorClass): \(hint)")
            #expect(hint.contains("'expensectl retry cp-1'") == AttentionHint.canRetry(errorClass: errorClass), "\(errorClass): \(hint)")
        }
        #expect(!AttentionHint.canRetry(errorClass: "gone"))
    }
}
