import ExpenseCore
@testable import OutboxStore
import ExpenseTestSupport
import Posix
import Testing

/// Incomplete expenses on a real SQLite file (docs/sync.md, "Incomplete
/// expenses"): the claim holds a create lacking what the backend needs,
/// and what waits behind it, without a failure; the next wake-up does not
/// count them; an edit that completes one lets it go at once; a delete
/// ends it locally; a restart keeps it held.
@Suite struct StoreIncompleteTests {
    let directory = TemporaryDirectory(prefix: "store-incomplete")
    static let ihatemoney = RequiredFields(["amount", "date"], backend: "ihatemoney")
    static let fava = RequiredFields(["amount", "currency", "date"], backend: "fava")

    func staged(_ store: Store, seed: Int) throws -> StagedReceipt {
        let path = directory.at("in-\(seed).jpg")
        SampleReceipt.write(ReceiptBytes.make(.jpeg, size: 2000 + seed), to: path)
        return try store.receipts.stage(from: try FileDescriptor.open(path, .readOnly), jobUUID: ClientID.make(), maxBytes: 1 << 20, digesting: true)
    }

    /// `incompleteCounts` as an array: expenses held, jobs they hold back.
    static func counts(_ store: Store, _ required: RequiredFields, excluding: Set<JobKind> = [], in scope: AccountScope = .all) async throws -> [Int] {
        let (expenses, jobs) = try await store.incompleteCounts(requiring: required, excluding: excluding, in: scope)
        return [expenses, jobs]
    }

    func applied(_ store: Store, _ jobs: [OutboxJob], now: Int64) async throws {
        _ = try await store.complete(jobs.map { job in
            (job, JobUpdate.applied(job.kind == .create ? CanonicalExpense(transactionID: job.transactionID, clientID: job.uuid, fields: job.fields,
                                                                            receiptURL: nil, version: 1, createdAt: "2026-12-01T09:00:00.000Z",
                                                                            updatedAt: "2026-12-01T09:00:00.000Z") : nil), false)
        }, now: now)
    }

    /// The store's claim agrees with `RequiredFields.holds` on every kind
    /// of create, for each backend: the decision written once as SQL.
    @Test(arguments: [(ihatemoney, 0), (fava, 1), (RequiredFields.none, 2)])
    func claim_holdsExactlyTheCreatesTheValueHolds(_ required: RequiredFields, _ n: Int) async throws {
        let store = try Store(stateDirectory: directory.at("state-\(n)"))
        let cases = [ExpenseFields(), ExpenseFields(amount: "12.50", currency: "EUR"), ExpenseFields(date: "2026-12-01"),
                     ExpenseFields(currency: "EUR", date: "2026-12-01"), ExpenseFields(merchant: "Bakery", comment: "bread"),
                     ExpenseFields(amount: "12.50", currency: "EUR", date: "2026-12-01"),
                     ExpenseFields(merchant: "Bakery", amount: "4", currency: "JPY", date: "2026-12-01", category: "Meals")]
        var expected: Set<String> = []
        for fields in cases {
            let id = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: nil, now: 1).transactionID
            if !required.holds(.create, fields: fields, sends: 0) { expected.insert(id) }
        }
        let claimed = try await store.claim(limit: 100, now: 2, requiring: required)
        #expect(Set(claimed.map(\.transactionID)) == expected)
        let held = cases.count - expected.count
        #expect(try await Self.counts(store, required) == [held, held])
        #expect(try await store.incompleteExpenses(requiring: required, after: 0).count == held)
    }

    @Test func heldScans_stayQueuedUntouched_untilAnEditCompletesOne() async throws {
        let state = directory.at("state")
        var store = try Store(stateDirectory: state)
        let required = Self.ihatemoney
        let scan = try await store.enqueueCreate(fields: ExpenseFields(), clientID: ClientID.make(), receipt: try staged(store, seed: 1), now: 1).transactionID
        let dated = try await store.enqueueCreate(fields: ExpenseFields(date: "2026-11-30"), clientID: ClientID.make(), receipt: nil, now: 1,
                                                  account: "bob").transactionID
        let typed = try await store.enqueueCreate(fields: ExpenseFields(merchant: "Bakery", amount: "4.20", currency: "EUR", date: "2026-12-01"),
                                                  clientID: ClientID.make(), receipt: nil, now: 1).transactionID
        try await store.recordCopiesAsTheyAre()

        // Held for ihatemoney: the complete one goes, nothing else is claimed.
        let first = try await store.claim(limit: 10, now: 2, requiring: required)
        #expect(first.map(\.transactionID) == [typed])
        try await applied(store, first, now: 3)
        #expect(try await store.claim(limit: 10, now: 4, requiring: required).isEmpty, "the scan's create and its upload are held")
        let idle = try await store.pendingWork(requiring: required)
        #expect(!idle.queued && idle.earliestRetry == nil, "held expenses wake no timer")
        #expect(try await store.pendingWork(holding: [.receipt], requiring: required).queued == false)
        #expect(try await store.pendingWork().queued, "without the hold they are pending")

        // Counted per expense, and the jobs they hold back.
        #expect(try await Self.counts(store, required) == [2, 3])
        #expect(try await Self.counts(store, required, excluding: [.receipt]) == [2, 2])
        #expect(try await Self.counts(store, required, in: .account("bob")) == [1, 1])
        #expect(try await Self.counts(store, .none) == [0, 0])
        let told = try await store.incompleteExpenses(requiring: required, after: 0)
        #expect(told.map(\.transactionID) == [scan, dated])
        #expect(told.map(\.account) == [AccountName.defaultName, "bob"])
        #expect(try await store.incompleteExpenses(requiring: required, after: told[1].seq).isEmpty, "each is told once")

        // A restart keeps them held: the hold is read from the rows.
        store = try Store(stateDirectory: state)
        _ = try store.reconcile()
        #expect(try await store.claim(limit: 10, now: 5, requiring: required).isEmpty)
        #expect(try await Self.counts(store, required) == [2, 3])

        // An amount alone is not enough for ihatemoney; with a date it is,
        // and the create (then its upload) goes at once, as never failed.
        _ = try await store.edit(ref: scan, fields: ExpenseFields(amount: "7.10", currency: "EUR"), now: 6)
        #expect(try await store.claim(limit: 10, now: 7, requiring: required).isEmpty)
        _ = try await store.edit(ref: scan, fields: ExpenseFields(date: "2026-11-28"), now: 8)
        let create = try await store.claim(limit: 10, now: 9, requiring: required)
        #expect(create.map(\.kind) == [.create] && create.first?.transactionID == scan)
        #expect(create.first.map { $0.fields.amount == "7.10" && $0.fields.date == "2026-11-28" && $0.attempts == 0 && $0.sends == 1 } == true,
                "\(create)")
        #expect(try await store.view(ref: scan).jobs.filter { $0.kind == .edit }.isEmpty, "the edits merged into the create")
        try await applied(store, create, now: 10)
        #expect(try await store.claim(limit: 10, now: 11, requiring: required).map(\.kind) == [.receipt])
        #expect(try await Self.counts(store, required) == [1, 1])
    }

    /// A delete of an incomplete expense that never left ends locally:
    /// its jobs and receipt file go, and nothing is sent.
    @Test func deleteOfAHeldExpense_endsLocally() async throws {
        let store = try Store(stateDirectory: directory.at("state"))
        let receipt = try staged(store, seed: 2)
        let scan = try await store.enqueueCreate(fields: ExpenseFields(), clientID: ClientID.make(), receipt: receipt, now: 1).transactionID
        try await store.recordCopiesAsTheyAre()
        #expect(try await store.claim(limit: 10, now: 2, requiring: Self.fava).isEmpty)
        let deletion = try await store.delete(ref: scan, now: 3)
        #expect(deletion.droppedLocally)
        #expect(try await Self.counts(store, Self.fava) == [0, 0])
        #expect(try await store.claim(limit: 10, now: 4).isEmpty, "nothing is left to send, held or not")
        #expect(!FileSystem.exists(store.receipts.filePath(receipt.fileName)), "the receipt file is gone")
    }

    /// A create already handed to the network is sent again as it is: the
    /// server may hold it, so it is never held back (and the edit after it
    /// is a job of its own).
    @Test func aCreateOnceSent_isNeverHeld() async throws {
        let store = try Store(stateDirectory: directory.at("state"))
        let scan = try await store.enqueueCreate(fields: ExpenseFields(), clientID: ClientID.make(), receipt: nil, now: 1).transactionID
        let sent = try await store.claim(limit: 10, now: 2)
        #expect(sent.map(\.transactionID) == [scan])
        try await store.requeue(sent[0], error: "timeout", errorClass: "transport", wasSent: true)
        let again = try await store.claim(limit: 10, now: 3, requiring: Self.ihatemoney)
        #expect(again.map(\.transactionID) == [scan] && again.first?.sends == 2)
        #expect(try await Self.counts(store, Self.ihatemoney) == [0, 0])
    }
}
