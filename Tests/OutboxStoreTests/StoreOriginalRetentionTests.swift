import ExpenseCore
@testable import OutboxStore
import ExpenseTestSupport
import Digest
import Posix
import Testing

/// The original of a receipt sent as a copy is removed once the retention
/// has passed and its copy was sent, never while its upload waits; its
/// row stays, saying when it went, and the start-up sweep neither misses
/// nor resurrects it.
@Suite struct StoreOriginalRetentionTests {
    let directory = TemporaryDirectory(prefix: "store-retention")

    /// An expense whose create was sent and whose upload's copy was made at `now`.
    func uploadWithCopy(_ store: Store, now: Int64) async throws -> (id: String, original: String) {
        let path = directory.at("in-\(ClientID.make()).jpg")
        SampleReceipt.write(ReceiptBytes.make(.jpeg, size: 2000, label: "receipt \(now)"), to: path)
        let staged = try store.receipts.stage(from: try FileDescriptor.open(path, .readOnly), jobUUID: ClientID.make(), maxBytes: 1 << 20, digesting: true)
        let id = try await store.enqueueCreate(fields: ExpenseFields(merchant: "Copy Shop"), clientID: ClientID.make(), receipt: staged, now: now).transactionID
        let create = try await store.claim(limit: 10, now: now)
        _ = try await store.complete(create.map { ($0, JobUpdate.applied(Self.expense(id, version: 1)), false) }, now: now)
        let pending = try #require(try await store.pendingCopies().first { $0.transactionID == id })
        let copy = ReceiptBytes.make(.jpeg, size: 900, label: "copy \(now)")
        let copyName = "\(ClientID.make()).jpg"
        try store.receipts.write(copy, as: copyName)
        #expect(try await store.recordCopy(pending, .copy(fileName: copyName, kind: .jpeg, size: Int64(copy.count), sha256: SHA256.hash(copy)), now: now))
        return (id, staged.fileName)
    }

    static func expense(_ id: String, version: Int) -> CanonicalExpense {
        CanonicalExpense(transactionID: id, clientID: id, fields: ExpenseFields(merchant: "Copy Shop"), receiptURL: version > 1 ? "/v1/expenses/\(id)/receipt" : nil,
                         version: version, createdAt: "2026-12-03T09:15:02.123Z", updatedAt: "2026-12-03T09:15:02.123Z")
    }

    @Test func anOriginal_goesOnceItsCopyWasSentAndTheRetentionPassed_notBefore() async throws {
        let store = try Store(stateDirectory: directory.at("state"))
        let (sent, sentOriginal) = try await uploadWithCopy(store, now: 1_000)
        let upload = try #require(try await store.claim(limit: 10, now: 1_500).first)
        #expect(upload.transactionID == sent && upload.kind == .receipt)
        _ = try await store.complete([(upload, JobUpdate.applied(Self.expense(sent, version: 2)), false)], now: 1_500)
        let (waiting, waitingOriginal) = try await uploadWithCopy(store, now: 2_000)
        let path = { (name: String) in store.receipts.filePath(name) }

        #expect(try await store.removeOriginals(receivedBy: 999, now: 3_100).isEmpty, "received after the cutoff: kept")
        #expect(FileSystem.exists(path(sentOriginal)))

        let removed = try await store.removeOriginals(receivedBy: 5_000, now: 3_200)
        #expect(removed == [RemovedOriginal(transactionID: sent, account: "", fileName: sentOriginal)], "the waiting upload's original stays")
        #expect(!FileSystem.exists(path(sentOriginal)) && FileSystem.exists(path(waitingOriginal)))
        let kept = try #require(try await store.originals(of: sent).first)
        #expect(kept.removedAt == 3_200 && kept.receivedAt == 1_000 && kept.fileName == sentOriginal)
        #expect(try await store.originals(of: waiting).first?.removedAt == nil)
        #expect(try await store.removeOriginals(receivedBy: 5_000, now: 3_300).isEmpty, "removed once")

        let report = try store.reconcile()
        // (It sweeps the sent copy, which the drain removes after the commit; this test is not the drain.)
        #expect(report.missingReceipts.isEmpty && !report.removedReceipts.contains(waitingOriginal), "\(report)")
        #expect(FileSystem.exists(path(waitingOriginal)))
    }
}
