import ExpenseCore
@testable import OutboxStore
import ExpenseTestSupport
import Posix
import Testing

/// A metered link holds jobs of some kinds: the claim leaves them where
/// they are, attempts and retry time untouched (a hold is no failure), the
/// drain's next wake-up does not count them, and they are counted for
/// `status`. An edit still goes while its expense's upload is held.
@Suite struct StoreMeteredHoldTests {
    let directory = TemporaryDirectory(prefix: "store-metered")

    @Test func heldUploads_stayQueuedUntouched_whileACreateAndAnEditGo() async throws {
        let store = try Store(stateDirectory: directory.at("state"))
        let path = directory.at("in.jpg")
        SampleReceipt.write(ReceiptBytes.make(.jpeg, size: 2000), to: path)
        let staged = try store.receipts.stage(from: try FileDescriptor.open(path, .readOnly), jobUUID: ClientID.make(), maxBytes: 1 << 20, digesting: true)
        let id = try await store.enqueueCreate(fields: ExpenseFields(merchant: "Taxi"), clientID: ClientID.make(), receipt: staged, now: 1).transactionID
        let other = try await store.enqueueCreate(fields: ExpenseFields(merchant: "Bus"), clientID: ClientID.make(), receipt: nil, now: 1,
                                                  account: "bob").transactionID
        try await store.recordCopiesAsTheyAre()
        #expect(try await store.queuedCount(of: [.receipt]) == 1)
        #expect(try await store.queuedCount(of: [.receipt], in: .account("bob")) == 0)
        #expect(try await store.queuedCount(of: Set(JobKind.allCases), in: .account("bob")) == 1)
        #expect(try await store.queuedCount(of: []) == 0)

        // The creates go; the upload waits for its create, then for the link.
        let creates = try await store.claim(limit: 10, now: 2, holding: [.receipt])
        #expect(Set(creates.map(\.transactionID)) == [id, other] && creates.allSatisfy { $0.kind == .create })
        _ = try await store.complete(creates.map { job in
            (job, JobUpdate.applied(CanonicalExpense(transactionID: job.transactionID, clientID: job.uuid, fields: job.fields, receiptURL: nil, version: 1,
                                                     createdAt: "2026-11-29T09:15:02.123Z", updatedAt: "2026-11-29T09:15:02.123Z")), false)
        }, now: 3)
        #expect(try await store.claim(limit: 10, now: 4, holding: [.receipt]).isEmpty, "the upload is held")
        #expect(try await store.claim(limit: 10, now: 4, holding: Set(JobKind.allCases)).isEmpty)
        let nothingElse = try await store.pendingWork(holding: [.receipt])
        #expect(!nothingElse.queued && nothingElse.earliestRetry == nil, "a held upload wakes no timer")
        #expect(try await store.pendingWork().queued, "without the hold it is pending")

        // An edit of the expense whose upload is held goes.
        _ = try await store.edit(ref: id, fields: ExpenseFields(comment: "airport"), now: 5)
        let edit = try await store.claim(limit: 10, now: 6, holding: [.receipt])
        #expect(edit.map(\.kind) == [.edit] && edit.first?.transactionID == id)
        _ = try await store.complete(edit.map { job in
            (job, JobUpdate.applied(CanonicalExpense(transactionID: id, clientID: job.uuid, fields: ExpenseFields(merchant: "Taxi", comment: "airport"),
                                                     receiptURL: nil, version: 2, createdAt: "2026-11-29T09:15:02.123Z", updatedAt: "2026-11-29T09:15:03.123Z")),
             false)
        }, now: 7)

        // Held, not failed: once the hold is lifted it is claimed as it was.
        let upload = try await store.claim(limit: 10, now: 8)
        #expect(upload.map(\.kind) == [.receipt])
        #expect(upload.first.map { $0.attempts == 0 && $0.transientAttempts == 0 && $0.sends == 1 } == true, "\(upload)")
        let view = try await store.view(ref: id)
        #expect(view.jobs.first { $0.kind == .receipt }.map { $0.lastError == nil && $0.lastErrorClass == nil } == true)
    }
}
