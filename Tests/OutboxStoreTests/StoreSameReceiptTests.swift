import ExpenseCore
@testable import OutboxStore
import ExpenseTestSupport
import Posix
import SQLite
import Testing

/// The same receipt twice (docs/receipts.md): an expense whose receipt has
/// the bytes of another expense's of the same account is held, not sent
/// and not dropped; `retry` sends it anyway, `discard` drops it. Equal
/// fields never hold anything.
@Suite struct StoreSameReceiptTests {
    let directory = TemporaryDirectory(prefix: "same-receipt")
    let fields = ExpenseFields(merchant: "Blue Bottle", amount: "12.50", currency: "EUR", date: "2026-11-29")

    func stage(_ bytes: [UInt8], _ store: Store) throws -> StagedReceipt {
        let path = directory.at("in-\(ClientID.make()).jpg")
        SampleReceipt.write(bytes, to: path)
        return try store.receipts.stage(from: try FileDescriptor.open(path, .readOnly), jobUUID: ClientID.make(), maxBytes: 1 << 20, digesting: true)
    }

    func add(_ store: Store, _ bytes: [UInt8]?, account: String = AccountName.defaultName, now: Int64) async throws -> EnqueueResult {
        try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: try bytes.map { try stage($0, store) }, now: now,
                                      account: account)
    }

    /// The expenses whose jobs a drain would send now.
    func sendable(_ store: Store) async throws -> Set<String> {
        try await store.recordCopiesAsTheyAre()
        let claimed = try await store.claim(limit: 100, now: 1 << 40)
        _ = try await store.release(claimed)
        return Set(claimed.map(\.transactionID))
    }

    @Test func sameBytesAgain_holdTheNewExpenseWithTheFirstOnesID_andRetrySendsIt() async throws {
        let store = try Store(stateDirectory: directory.at("state"))
        let bytes = SampleReceipt.jpeg(seed: 1)
        let first = try await add(store, bytes, now: 1_764_410_000_000)
        #expect(first.state == .queued && first.held == nil)
        let second = try await add(store, bytes, now: 1_764_410_060_000)
        #expect(second.state == .needsAttention)
        #expect(second.held == "the same receipt as \(first.transactionID) (added 2025-11-29 09:53 UTC)")
        let view = try await store.view(ref: second.transactionID)
        #expect(view.state == .needsAttention)
        let create = view.jobs.first { $0.kind == .create }
        #expect(create?.state == .needsAttention && create?.lastErrorClass == Store.sameReceiptClass)
        #expect(create?.lastError == second.held)
        #expect(try await sendable(store) == [first.transactionID], "nothing of the held expense is sent, not even its upload")

        _ = try await store.retry(ref: second.transactionID)
        #expect(try await sendable(store) == [first.transactionID, second.transactionID], "retry sends it anyway")
    }

    @Test func discard_dropsTheHeldExpense() async throws {
        let store = try Store(stateDirectory: directory.at("state"))
        let bytes = SampleReceipt.png(size: 3000)
        _ = try await add(store, bytes, now: 1)
        let second = try await add(store, bytes, now: 2)
        #expect(second.state == .needsAttention)
        #expect(try await store.discard(ref: second.transactionID).removed == 2)
        #expect(try await store.views().count == 1)
    }

    @Test func equalFieldsWithOtherBytes_otherAccounts_andExpensesGone_holdNothing() async throws {
        let store = try Store(stateDirectory: directory.at("state"))
        let bytes = SampleReceipt.jpeg(seed: 2)
        _ = try await add(store, bytes, now: 1)
        #expect(try await add(store, SampleReceipt.jpeg(seed: 3), now: 2).state == .queued, "the same fields, another receipt")
        #expect(try await add(store, nil, now: 3).state == .queued, "the same fields, no receipt")
        #expect(try await add(store, bytes, account: "alice", now: 4).state == .queued, "another account's receipt is not this one's")

        let gone = try await add(store, SampleReceipt.jpeg(seed: 4), now: 5)
        _ = try await store.discard(ref: gone.transactionID)
        #expect(try await add(store, SampleReceipt.jpeg(seed: 4), now: 6).state == .queued, "the expense that had it is gone")
    }

    @Test func replacedReceipt_isNoLongerTheExpensesReceipt() async throws {
        let store = try Store(stateDirectory: directory.at("state"))
        let old = SampleReceipt.jpeg(seed: 5)
        let first = try await add(store, old, now: 1)
        _ = try await store.attachReceipt(ref: first.transactionID, try stage(SampleReceipt.jpeg(seed: 6), store), fields: ExpenseFields(), now: 2)
        #expect(try await add(store, old, now: 3).state == .queued, "the first expense's receipt is the new one now")
        #expect(try await add(store, SampleReceipt.jpeg(seed: 6), now: 4).state == .needsAttention)
    }

    /// A receipt attached to an expense already sent holds the upload only.
    @Test func attachingAnotherExpensesReceipt_holdsTheUpload() async throws {
        let store = try Store(stateDirectory: directory.at("state"))
        let bytes = SampleReceipt.jpeg(seed: 7)
        let first = try await add(store, bytes, now: 1)
        let second = try await add(store, nil, now: 2)
        let created = try await store.claim(limit: 10, now: 3).filter { $0.transactionID == second.transactionID }
        #expect(created.count == 1)
        let answer = CanonicalExpense(transactionID: second.transactionID, clientID: second.clientID, fields: fields, receiptURL: nil,
                                      version: 1, createdAt: "2026-11-29T09:15:02.123Z", updatedAt: "2026-11-29T09:15:02.123Z")
        for result in try await store.complete(created.map { ($0, JobUpdate.applied(answer), false) }, now: 4) { _ = try result.get() }

        let view = try await store.attachReceipt(ref: second.transactionID, try stage(bytes, store), fields: ExpenseFields(), now: 5)
        let upload = view.jobs.first { $0.kind == .receipt }
        #expect(upload?.state == .needsAttention)
        #expect(upload?.lastError?.hasPrefix("the same receipt as \(first.transactionID) (added ") == true, "\(String(describing: upload))")
    }

    @Test func receiptsTakenBeforeTheRule_areKnownAfterTheMigration() async throws {
        let state = directory.at("state")
        let bytes = SampleReceipt.jpeg(seed: 8)
        let first: EnqueueResult
        do {
            let store = try Store(stateDirectory: state)
            first = try await add(store, bytes, now: 1)
            try await store.write { db, _ in
                try SchemaRollback.back(db, to: 8)
                return ((), [])
            }
        }
        let reopened = try Store(stateDirectory: state)
        let second = try await add(reopened, bytes, now: 2)
        #expect(second.held?.hasPrefix("the same receipt as \(first.transactionID)") == true)
    }
}
