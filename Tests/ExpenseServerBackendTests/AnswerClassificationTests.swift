import Curl
import ExpenseCore
@testable import ExpenseServerBackend
import SyncEngine
import Testing

/// contract.md's table: expense-server's statuses as the engine's outcomes.
@Suite struct AnswerClassificationTests {
    @Test(arguments: [
        (408, nil, SyncFailure.Kind.transient), (425, nil, .transient), (429, nil, .transient),
        (500, nil, .transient), (502, nil, .transient), (503, nil, .transient), (504, nil, .transient),
        (409, "request_in_progress", .inProgress), (409, "other", .rejected),
        (400, "invalid_field", .rejected), (404, nil, .notFound), (410, "expense_deleted", .gone), (422, "idempotency_key_reused", .rejected),
        (413, nil, .tooLarge), (415, nil, .rejected), (302, nil, .rejected), (100, nil, .rejected),
    ] as [(Int, String?, SyncFailure.Kind)])
    func failures_followTheContractTable(status: Int, code: String?, expected: SyncFailure.Kind) {
        let body = code.map { Array(#"{"error":{"code":"\#($0)","message":"m"}}"#.utf8) } ?? []
        guard case .failed(let failure) = ExpenseServerBackend.outcome(status: status, body: body, retryAfter: "7", replayed: false) else {
            Issue.record("\(status) is not a failure")
            return
        }
        #expect(failure.kind == expected, "\(status)")
        #expect(failure.summary == "\(status)" + (code.map { " \($0): m" } ?? ""))
        #expect(failure.retryAfterMilliseconds == 7000)
    }

    @Test(arguments: [401, 403])
    func refusals_areAuth(status: Int) {
        #expect(ExpenseServerBackend.outcome(status: status, body: Array(#"{"error":{"code":"unauthorized","message":"no"}}"#.utf8), retryAfter: nil, replayed: false)
                == .refused(code: "\(status)", summary: "\(status) unauthorized: no"))
    }

    @Test func applied_carriesTheExpenseAndTheReplay() {
        let body = Array(#"{"transaction_id":"cp-0206e11a39722b8b0b0d34","client_id":"c","merchant":"A","version":2}"#.utf8)
        guard case .applied(let expense?, true, "200") = ExpenseServerBackend.outcome(status: 200, body: body, retryAfter: nil, replayed: true) else {
            Issue.record("expected applied with an expense")
            return
        }
        #expect(expense.merchant == "A" && expense.version == 2)
        #expect(ExpenseServerBackend.outcome(status: 201, body: Array("not json".utf8), retryAfter: nil, replayed: false) == .applied(nil, replayed: false, code: "201"))
    }

    @Test func aListing_isAPage_orMalformed_orAFailure() {
        func reply(_ status: Int, _ body: String) -> ChangesReply {
            ExpenseServerBackend.changes(from: .success(HTTPResponse(status: status, headers: [], body: Array(body.utf8))))
        }
        #expect(reply(200, #"{"expenses":[{"transaction_id":"cp-1","version":3}],"next_cursor":"c2","has_more":true}"#)
                == .page(ChangesPage(expenses: [CanonicalExpense(json: ["transaction_id": "cp-1", "version": 3])!], nextCursor: "c2", hasMore: true)))
        #expect(reply(200, #"{"expenses":[{"version":3}]}"#) == .malformed, "an expense without its id")
        #expect(reply(200, "<html>") == .malformed)
        #expect(reply(401, "") == .refused(code: "401"))
        #expect(reply(503, "") == .failed(SyncFailure(.transient, summary: "503")))
        #expect(ExpenseServerBackend.changes(from: .failure(TransportError(code: 7, message: "refused", requestSent: false))) == .unanswered(reason: "refused"))
    }

    @Test func cursors_arePercentEncoded() {
        #expect(ExpenseServerBackend.percentEncoded("a b/c~d-e_f.g+h") == "a%20b%2Fc~d-e_f.g%2Bh")
    }
}

/// The retry policy applied to expense-server's answers: what each status
/// does to a job, end to end through the classification.
@Suite struct ExpenseServerRetryTests {
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

extension RetryPolicy {
    /// The update for `job` after expense-server answered `status` with
    /// `body`: the classification, then the policy, as the engine applies them.
    func update(for job: OutboxJob, status: Int, body: [UInt8], retryAfter: String?, now: Int64, random: () -> Double) -> JobUpdate {
        update(for: job, after: ExpenseServerBackend.outcome(status: status, body: body, retryAfter: retryAfter, replayed: false), now: now, random: random)
    }
}
