import ExpenseCore
import Testing

@Suite struct BackoffTests {
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
