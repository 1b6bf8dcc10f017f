import ExpenseCore
@testable import OutboxStore
import ExpenseTestSupport
import Posix
import Testing

extension Store {
    /// Records every upload waiting for its copy as going as it is: what
    /// the daemon's copier does for a small upright JPEG, for tests of the
    /// store alone.
    func recordCopiesAsTheyAre(now: Int64 = 0) async throws {
        for pending in try await pendingCopies(limit: 1000) { try await recordCopy(pending, .original, now: now) }
    }
}

/// An upload is sent only once what it sends was decided: as it is, or a
/// legible copy, which is what the claim then hands the backend; the
/// original of a copy is kept, and the start-up sweep keeps both files.
@Suite struct StoreCopyTests {
    let directory = TemporaryDirectory(prefix: "store-copies")

    func addWithReceipt(_ store: Store) async throws -> (String, StagedReceipt) {
        let path = directory.at("in-\(ClientID.make()).jpg")
        SampleReceipt.write(ReceiptBytes.make(.jpeg, size: 2000), to: path)
        let staged = try store.receipts.stage(from: try FileDescriptor.open(path, .readOnly), jobUUID: ClientID.make(), maxBytes: 1 << 20, digesting: true)
        let added = try await store.enqueueCreate(fields: ExpenseFields(merchant: "Copy Shop"), clientID: ClientID.make(), receipt: staged, now: 1)
        return (added.transactionID, staged)
    }

    /// The copier asks after every add: the uploads waiting for their copy
    /// come from the list of copies to make, never from a scan of the
    /// outbox (which made an add with 20,000 jobs queued four times dearer),
    /// nor of the uploads still queued once copied (an offline scanner's
    /// backlog). The list follows every change: an upload joins it when
    /// queued, leaves it when its copy is recorded or its job goes, and one
    /// whose copy failed is copied again after a retry.
    @Test func uploadsWaitingForTheirCopy_comeFromTheListOfCopiesToMake_notFromAScanOfTheOutbox() async throws {
        let store = try Store(stateDirectory: directory.at("state"))
        for n in 1...30 { _ = try await store.enqueueCreate(fields: ExpenseFields(merchant: "No Receipt"), clientID: ClientID.make(), receipt: nil, now: Int64(n)) }
        var copied: [String] = []
        for _ in 1...5 { copied.append(try await addWithReceipt(store).0) }
        try await store.recordCopiesAsTheyAre()
        let (waiting, _) = try await addWithReceipt(store)
        let (failing, _) = try await addWithReceipt(store)
        let toMake = { try await store.read { db in try db.query("SELECT transaction_id FROM copies_to_make ORDER BY transaction_id") { $0.string(0) } } }
        #expect(try await toMake() == [waiting, failing].sorted(), "the five copied uploads, queued still, are not on the list")
        #expect(try await store.pendingCopies().map(\.transactionID) == [waiting, failing])

        let pending = try #require(try await store.pendingCopies().last)
        try await store.copyFailed(pending, reason: "receipt cannot be read: test")
        #expect(try await store.pendingCopies().map(\.transactionID) == [waiting], "one that needs attention waits for a retry")
        #expect(try await toMake() == [waiting, failing].sorted())
        _ = try await store.retry(ref: failing)
        #expect(try await store.pendingCopies().map(\.transactionID) == [waiting, failing], "a retry copies it again")
        _ = try await store.discard(ref: waiting)
        #expect(try await toMake() == [failing], "a job gone leaves the list")

        let plan = try await store.read { db in
            try db.query("EXPLAIN QUERY PLAN " + Store.pendingCopiesQuery, [.integer(16)]) { $0.string(3) }
        }
        #expect(plan.contains { $0.hasPrefix("SCAN c") } && !plan.contains { $0.hasPrefix("SCAN j") }, "\(plan)")
    }

    /// An upload queued before the list of copies to make existed (schema
    /// 11) is on the list after the migration, else it would wait for a
    /// copy nobody makes and never be sent; one already copied is not.
    @Test func uploadsQueuedBeforeTheList_areOnItAfterTheMigration() async throws {
        let state = directory.at("state")
        let copied: String, waiting: String
        do {
            let store = try Store(stateDirectory: state)
            copied = try await addWithReceipt(store).0
            try await store.recordCopiesAsTheyAre()
            waiting = try await addWithReceipt(store).0
            try await store.write { db, _ in
                try SchemaRollback.back(db, to: 11)
                return ((), [])
            }
        }
        let reopened = try Store(stateDirectory: state)
        #expect(try await reopened.pendingCopies().map(\.transactionID) == [waiting], "not \(copied), copied already")
    }

    @Test func anUpload_waitsForItsCopy_thenSendsTheCopy_andTheOriginalIsKept() async throws {
        let store = try Store(stateDirectory: directory.at("state"))
        let (id, staged) = try await addWithReceipt(store)
        let create = try await store.claim(limit: 10, now: 2)
        #expect(create.map(\.kind) == [.create])
        _ = try await store.complete(create.map { ($0, JobUpdate.applied(CanonicalExpense(transactionID: id, clientID: $0.uuid, fields: ExpenseFields(merchant: "Copy Shop"), receiptURL: nil, version: 1, createdAt: "2026-11-29T09:15:02.123Z", updatedAt: "2026-11-29T09:15:02.123Z")), false) }, now: 3)
        #expect(try await store.claim(limit: 10, now: 4).isEmpty, "the upload waits for its copy")

        let pending = try #require(try await store.pendingCopies().first)
        #expect(pending.fileName == staged.fileName && pending.transactionID == id && pending.kind == .jpeg)
        let copyName = "\(ClientID.make()).jpg"
        let copy = ReceiptBytes.make(.jpeg, size: 900, label: "copy")
        try store.receipts.write(copy, as: copyName)
        #expect(try await store.recordCopy(pending, .copy(fileName: copyName, kind: .jpeg, size: Int64(copy.count), sha256: [1, 2, 3]), now: 5))
        #expect(try await store.recordCopy(pending, .original, now: 6) == false, "made once")
        #expect(try await store.pendingCopies().isEmpty)

        let upload = try #require(try await store.claim(limit: 10, now: 7).first)
        #expect(upload.kind == .receipt && upload.receiptFile == copyName && upload.receiptSize == Int64(copy.count) && upload.receiptSHA256 == [1, 2, 3])
        #expect(try await store.originals(of: id).map(\.fileName) == [staged.fileName])
        // A restart in between keeps the original and the copy, and removes only what nothing names.
        try store.receipts.write([1], as: "\(ClientID.make()).jpg")
        let report = try store.reconcile()
        #expect(report.removedReceipts.count == 1)
        #expect(FileSystem.exists(store.receipts.filePath(copyName)) && FileSystem.exists(store.receipts.filePath(staged.fileName)))
    }

    @Test func aCopyThatCannotBeMade_needsAttention_andRetryTriesAgain() async throws {
        let store = try Store(stateDirectory: directory.at("state"))
        let (id, _) = try await addWithReceipt(store)
        let pending = try #require(try await store.pendingCopies().first)
        try await store.copyFailed(pending, reason: "the decoder crashed (signal 11)")
        #expect(try await store.pendingCopies().isEmpty, "not tried again by itself")
        let view = try await store.view(ref: id)
        #expect(view.jobs.contains { $0.state == .needsAttention && $0.lastError == "receipt cannot be read: the decoder crashed (signal 11)" }, "\(view.jobs)")
        _ = try await store.retry(ref: id)
        #expect(try await store.pendingCopies().map(\.jobUUID) == [pending.jobUUID])
    }
}
