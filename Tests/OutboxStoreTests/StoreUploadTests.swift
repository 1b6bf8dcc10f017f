import ExpenseCore
@testable import OutboxStore
import ExpenseTestSupport
import Posix
import Testing

/// A receipt job's resumable upload is recorded with it, and a job that
/// goes without completing it lists the upload to cancel on the server,
/// whichever path removes the job; one the server finished is not listed.
@Suite struct StoreUploadTests {
    let directory = TemporaryDirectory(prefix: "store-uploads")

    func stage(_ store: Store, seed: Int) throws -> StagedReceipt {
        let path = directory.at("in-\(seed).jpg")
        SampleReceipt.write(SampleReceipt.jpeg(size: 3000 + seed, seed: UInt8(seed)), to: path)
        return try store.receipts.stage(from: try FileDescriptor.open(path, .readOnly), jobUUID: ClientID.make(), maxBytes: 1 << 20, digesting: true)
    }

    /// Claims the job of `transactionID` (and puts back what else was claimed).
    func claim(_ store: Store, _ transactionID: String, now: Int64) async throws -> OutboxJob {
        let claimed = try await store.claim(limit: 10, now: now)
        let others = claimed.filter { $0.transactionID != transactionID }
        if !others.isEmpty { _ = try await store.complete(others.map { ($0, JobUpdate.requeue, false) }, now: now) }
        return try #require(claimed.first { $0.transactionID == transactionID })
    }

    /// An expense with a receipt whose create the server applied; the
    /// upload is claimed, recorded at `url`, and back in the queue.
    func expenseWithUploadUnderWay(_ store: Store, seed: Int, url: String) async throws -> (transactionID: String, job: OutboxJob) {
        let added = try await store.enqueueCreate(fields: ExpenseFields(merchant: "Rail \(seed)"), clientID: ClientID.make(),
                                                  receipt: try stage(store, seed: seed), now: 1)
        try await store.recordCopiesAsTheyAre()
        let create = try await claim(store, added.transactionID, now: 2)
        _ = try await store.complete([(create, .applied(StoreOriginalRetentionTests.expense(added.transactionID, version: 1)), false)], now: 2)
        var upload = try await claim(store, added.transactionID, now: 3)
        #expect(upload.kind == .receipt)
        #expect(upload.uploadURL == nil)
        try await store.recordUpload(jobUUID: upload.uuid, url: url, offset: 4096)
        _ = try await store.complete([(upload, .requeue, false)], now: 3)
        upload = try await claim(store, added.transactionID, now: 4)
        #expect(upload.uploadURL == url)
        #expect(upload.uploadOffset == 4096)
        _ = try await store.complete([(upload, .requeue, false)], now: 4)
        return (added.transactionID, upload)
    }

    func cancellations(_ store: Store) async throws -> [String] { try await store.uploadCancellations().map(\.url) }

    @Test func replacedDeletedOrDiscarded_listTheUpload_completedOrDroppedDoNot() async throws {
        let store = try Store(stateDirectory: directory.at("state"))
        let replaced = try await expenseWithUploadUnderWay(store, seed: 1, url: "http://s/v1/uploads/1")
        let deleted = try await expenseWithUploadUnderWay(store, seed: 2, url: "http://s/v1/uploads/2")
        let discarded = try await expenseWithUploadUnderWay(store, seed: 3, url: "http://s/v1/uploads/3")
        let completed = try await expenseWithUploadUnderWay(store, seed: 4, url: "http://s/v1/uploads/4")
        let dropped = try await expenseWithUploadUnderWay(store, seed: 5, url: "http://s/v1/uploads/5")
        #expect(try await cancellations(store).isEmpty)

        _ = try await store.attachReceipt(ref: replaced.transactionID, try stage(store, seed: 6), fields: ExpenseFields(), now: 5)
        _ = try await store.delete(ref: deleted.transactionID, now: 5)
        try await store.markNeedsAttention(discarded.job, error: "test")
        _ = try await store.discard(ref: discarded.transactionID)
        for (answer, update) in [(completed, JobUpdate.applied(nil)), (dropped, .dropReceipt)] {
            let job = try await claim(store, answer.transactionID, now: 6)
            _ = try await store.complete([(job, update, false)], now: 6)
        }
        #expect(try await cancellations(store) == ["http://s/v1/uploads/1", "http://s/v1/uploads/2", "http://s/v1/uploads/3"])
        #expect(try await store.uploadCancellations().allSatisfy { $0.account == AccountName.defaultName })
        try await store.forgetCancellation(url: "http://s/v1/uploads/2")
        #expect(try await cancellations(store) == ["http://s/v1/uploads/1", "http://s/v1/uploads/3"])
        // A job that is gone records nothing.
        try await store.recordUpload(jobUUID: completed.job.uuid, url: "http://s/v1/uploads/9", offset: 1)
        #expect(try await store.read { db in try db.scalarInt("SELECT count(*) FROM jobs WHERE upload_url IS NOT NULL") } == 0)
    }
}
