import ExpenseCore
@testable import OutboxStore
import ExpenseTestSupport
import Testing

/// The network came back: jobs that failed for the transport are due at
/// once; a rejection and a server's 503 keep their backoff (system.md:
/// retries back off; only the transport's failures are the network's).
@Suite struct StoreTransportBackoffTests {
    let directory = TemporaryDirectory(prefix: "store-transport")

    @Test func networkRegain_clearsTheTransportsBackoffOnly() async throws {
        let store = try Store(stateDirectory: directory.at("state"))
        var ids: [String: String] = [:]
        for errorClass in ["transport", "transient", "rejected"] {
            ids[errorClass] = try await store.enqueueCreate(fields: ExpenseFields(merchant: errorClass), clientID: ClientID.make(), receipt: nil, now: 1).transactionID
        }
        let claimed = try await store.claim(limit: 10, now: 2)
        #expect(claimed.count == 3)
        _ = try await store.complete(claimed.map { job in
            let errorClass = ids.first { $0.value == job.transactionID }!.key
            return (job, JobUpdate.retry(nextAttemptAt: 1_000_000, attempts: 1, transientAttempts: 1, error: "failed", errorClass: errorClass), false)
        }, now: 3)
        #expect(try await store.claim(limit: 10, now: 4).isEmpty, "all back off")

        #expect(try await store.clearTransportBackoff(now: 5) == 1)
        #expect(try await store.claim(limit: 10, now: 6).map(\.transactionID) == [ids["transport"]!])
        #expect(try await store.clearTransportBackoff(now: 7) == 0, "nothing else waits for the transport")
    }
}
