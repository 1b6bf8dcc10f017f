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
