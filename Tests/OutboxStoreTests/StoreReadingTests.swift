import ExpenseCore
@testable import OutboxStore
import ExpenseTestSupport
import Posix
import ReceiptReading
import SQLite
import Testing

/// A receipt queued while reading is on is a reading to do, recorded with
/// its upload; what it suggests is an edit that fills only empty fields,
/// merged into a create still queued, and marked as read until edited.
@Suite struct StoreReadingTests {
    let directory = TemporaryDirectory(prefix: "store-readings")

    func stage(_ store: Store) throws -> StagedReceipt {
        let path = directory.at("in-\(ClientID.make()).jpg")
        SampleReceipt.write(ReceiptBytes.make(.jpeg, size: 2000, label: ClientID.make()), to: path)
        return try store.receipts.stage(from: try FileDescriptor.open(path, .readOnly), jobUUID: ClientID.make(), maxBytes: 1 << 20, digesting: true)
    }

    func add(_ store: Store, _ fields: ExpenseFields = ExpenseFields(), now: Int64 = 1_000) async throws -> String {
        try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: try stage(store), now: now).transactionID
    }

    static let read = ReceiptSuggestions(total: Suggestion("18.90", confidence: 0.91, note: "the line labelled 'total'"),
                                         currency: Suggestion("EUR", confidence: 0.8, note: "the sign on the total's line"),
                                         date: Suggestion("2026-03-12", confidence: 0.88, note: "a date"),
                                         merchant: Suggestion("Bäckerei Sonne", confidence: 0.7, note: "the heading"))

    @Test func aReceiptOnlyExpense_isReadOnce_andItsFieldsMergeIntoTheQueuedCreate_marked() async throws {
        let store = try Store(stateDirectory: directory.at("state"), readsReceipts: true)
        let id = try await add(store)
        let pending = try await store.pendingReadings()
        #expect(pending.map(\.transactionID) == [id])
        let outcome = try #require(try await store.applyReading(transactionID: id, jobUUID: pending[0].jobUUID, Self.read, now: 2_000))
        #expect(outcome.filled.map(\.field) == ["merchant", "amount", "currency", "date"] && outcome.kept.isEmpty)
        #expect(try await store.pendingReadings().isEmpty)
        #expect(try await store.applyReading(transactionID: id, jobUUID: pending[0].jobUUID, Self.read, now: 2_001) == nil, "applied once")

        let view = try await store.view(ref: id)
        #expect(view.jobs.map(\.kind) == [.create, .receipt], "no edit job: merged into the create")
        #expect(view.jobs[0].fields == ExpenseFields(merchant: "Bäckerei Sonne", amount: "18.90", currency: "EUR", date: "2026-03-12"))
        #expect(view.read == ["merchant": 0.7, "amount": 0.91, "currency": 0.8, "date": 0.88])
        #expect(try await store.list(ListQuery()).views.first?.read == view.read, "list shows what show shows")

        // A person's edit of a field ends its mark; the others stay.
        let edited = try await store.edit(ref: id, fields: ExpenseFields(amount: "19.90"), now: 3_000)
        #expect(edited.read == ["merchant": 0.7, "currency": 0.8, "date": 0.88])
    }

    /// A conflict resolved is the person's choice: the fields it sends are
    /// no longer marked as read, even when the value kept is the one read
    /// (else a later reading could replace it).
    @Test func aResolvedConflict_endsTheMarksOfTheFieldsItSends() async throws {
        let store = try Store(stateDirectory: directory.at("state"), readsReceipts: true)
        let id = try await add(store)
        let pending = try #require(try await store.pendingReadings().first)
        _ = try #require(try await store.applyReading(transactionID: id, jobUUID: pending.jobUUID, Self.read, now: 2_000))
        // Sent, and the server flags the merchant: it has another one.
        try await store.read { db in
            try db.execute("DELETE FROM jobs WHERE transaction_id = ?", [.text(id)])
            try db.execute("""
                INSERT INTO expenses (transaction_id, client_id, merchant, amount, currency, date, version, created_at, updated_at,
                                      conflict, conflicts, stored_at)
                VALUES (?, ?, 'Bäckerei Sonne', '18.90', 'EUR', '2026-03-12', 2, 'x', 'x', 1, ?, 3000)
                """, [.text(id), .text(ClientID.make()), .text(#"{"merchant":{"client":"Bäckerei Sonne","server":"Sonne GmbH"}}"#)])
        }
        #expect(try await store.view(ref: id).read["merchant"] == 0.7, "marked while it keeps the value read")
        let resolved = try await store.resolve(ref: id, takeMine: true, now: 4_000)
        #expect(resolved.read["merchant"] == nil, "\(resolved.read)")
        #expect(resolved.read["amount"] == 0.91, "the fields it does not send keep their marks")
    }

    @Test func aFieldTyped_isKept_evenWhenTypedAfterTheReadingBegan() async throws {
        let store = try Store(stateDirectory: directory.at("state"), readsReceipts: true)
        let id = try await add(store, ExpenseFields(comment: "lunch"))
        let pending = try #require(try await store.pendingReadings().first)
        // The reader runs; meanwhile the person types a merchant and an amount.
        _ = try await store.edit(ref: id, fields: ExpenseFields(merchant: "Sonne", amount: "20.00", currency: "EUR"), now: 1_500)
        let outcome = try #require(try await store.applyReading(transactionID: id, jobUUID: pending.jobUUID, Self.read, now: 2_000))
        #expect(outcome.filled.map(\.field) == ["date"])
        #expect(outcome.kept.map(\.field) == ["merchant", "amount", "currency"])
        let view = try await store.view(ref: id)
        #expect(view.fields.merchant == "Sonne" && view.fields.amount == "20.00" && view.fields.date == "2026-03-12")
        #expect(view.read == ["date": 0.88])
    }

    @Test func anExpenseAlreadySent_getsTheReadingAsAnEditAfterItsCreate() async throws {
        let store = try Store(stateDirectory: directory.at("state"), readsReceipts: true)
        let id = try await add(store, ExpenseFields(merchant: "Typed"))
        let create = try await store.claim(limit: 10, now: 1_100, readingWait: 60_000)
        #expect(create.map(\.kind) == [.create], "not receipt-only: it does not wait")
        let pending = try #require(try await store.pendingReadings().first)
        _ = try #require(try await store.applyReading(transactionID: id, jobUUID: pending.jobUUID, Self.read, now: 2_000))
        let view = try await store.view(ref: id)
        #expect(view.jobs.map(\.kind) == [.create, .receipt, .edit])
        #expect(view.jobs[2].fields == ExpenseFields(amount: "18.90", currency: "EUR", date: "2026-03-12"))
    }

    /// The claim's decision, as values: a receipt-only create waits for
    /// its reading, at most the wait; its upload waits for the reading
    /// whatever the wait; without a wait (reading off) nothing waits.
    @Test(arguments: [
        (wait: Int64?.some(60_000), now: Int64(1_100), read: false, claimed: [JobKind]()),
        (wait: 60_000, now: 61_001, read: false, claimed: [.create]),
        (wait: 60_000, now: 1_100, read: true, claimed: [.create]),
        (wait: nil, now: 1_100, read: false, claimed: [.create]),
    ])
    func theClaim_holdsAReceiptOnlyCreate_whileItsReadingIsToDo_atMostTheWait(wait: Int64?, now: Int64, read: Bool, claimed: [JobKind]) async throws {
        let store = try Store(stateDirectory: directory.at("state-\(ClientID.make())"), readsReceipts: true)
        let id = try await add(store)
        try await store.recordCopiesAsTheyAre()
        if read {
            let pending = try #require(try await store.pendingReadings().first)
            try await store.readingEnded(pending)
        }
        let jobs = try await store.claim(limit: 10, now: now, readingWait: wait)
        #expect(jobs.map(\.kind) == claimed)
        #expect(jobs.allSatisfy { $0.transactionID == id })
        let due = try await store.pendingWork(readingWait: wait, now: now)
        let waitEnds: Int64? = wait != nil && !read && claimed.isEmpty ? 1_000 + 60_000 : nil
        #expect(due.earliestRetry == waitEnds)
        if let create = jobs.first {
            _ = try await store.complete([(create, JobUpdate.applied(CanonicalExpense(transactionID: id, clientID: create.uuid, fields: ExpenseFields(),
                receiptURL: nil, version: 1, createdAt: "2026-11-29T09:15:02.123Z", updatedAt: "2026-11-29T09:15:02.123Z")), false)], now: now + 1)
            let upload = try await store.claim(limit: 10, now: now + 2, readingWait: wait)
            #expect(upload.map(\.kind) == (read ? [.receipt] : []), "an upload waits for its reading")
        }
    }

    @Test func aReceiptAttached_isReadToo_withoutHoldingTheCreate_andAReplacedOnesReadingGoesWithIt() async throws {
        let store = try Store(stateDirectory: directory.at("state"), readsReceipts: true)
        let id = try await store.enqueueCreate(fields: ExpenseFields(), clientID: ClientID.make(), receipt: nil, now: 1_000).transactionID
        _ = try await store.attachReceipt(ref: id, try stage(store), fields: ExpenseFields(), now: 1_100)
        let first = try #require(try await store.pendingReadings().first)
        #expect(first.transactionID == id)
        #expect(try await store.claim(limit: 10, now: 1_200, readingWait: 60_000).map(\.kind) == [.create], "an attached receipt holds no create")
        _ = try await store.attachReceipt(ref: id, try stage(store), fields: ExpenseFields(), now: 1_300)
        let readings = try await store.pendingReadings()
        #expect(readings.count == 1 && readings[0].jobUUID != first.jobUUID, "the replaced upload took its reading with it")
    }

    @Test func aLateSidecar_replacesWhatWasRead_andItsFieldsAreNoLongerMarked() async throws {
        let store = try Store(stateDirectory: directory.at("state"), readsReceipts: true)
        let source = SourceRecord.spool(name: FileName("scan.jpg")!, sidecar: nil, droppedMilliseconds: 990)
        let id = try await store.enqueueSpoolCreate(fields: ExpenseFields(), clientID: ClientID.make(), receipt: try stage(store), files: [],
                                                    source: source, now: 1_000).transactionID
        let pending = try #require(try await store.pendingReadings().first)
        _ = try await store.applyReading(transactionID: id, jobUUID: pending.jobUUID, Self.read, now: 1_500)
        let outcome = try await store.enqueueLateSidecar(fields: ExpenseFields(merchant: "Sonne", amount: "20.00", currency: "EUR"),
                                                         sidecarName: FileName("scan.json")!, account: "", since: 0, files: [], now: 2_000)
        #expect(outcome == .edited(transactionID: id, receiptName: FileName("scan.jpg")!, filled: ["merchant", "amount", "currency"], kept: []))
        let view = try await store.view(ref: id)
        #expect(view.fields.merchant == "Sonne" && view.fields.amount == "20.00" && view.fields.date == "2026-03-12")
        #expect(view.read == ["date": 0.88])
    }

    @Test func readingOff_recordsNoReading_andDroppedReadingsHoldNothing() async throws {
        let off = try Store(stateDirectory: directory.at("off"))
        _ = try await add(off)
        #expect(try await off.pendingReadings().isEmpty)

        let state = directory.at("on")
        _ = try await add(try Store(stateDirectory: state, readsReceipts: true))
        let reopened = try Store(stateDirectory: state)
        #expect(try await reopened.readingsToDo() == 1, "left by the previous run")
        #expect(try await reopened.dropReadings() == 1)
        try await reopened.recordCopiesAsTheyAre()
        #expect(try await reopened.claim(limit: 10, now: 2_000).map(\.kind) == [.create])
    }

    @Test func aDiscardedExpense_takesItsReading_andAReadingOfADeletedOneAppliesNothing() async throws {
        let store = try Store(stateDirectory: directory.at("state"), readsReceipts: true)
        let gone = try await add(store)
        _ = try await store.discard(ref: gone)
        #expect(try await store.pendingReadings().isEmpty)

        let id = try await add(store)
        let pending = try #require(try await store.pendingReadings().first)
        _ = try await store.delete(ref: id, now: 2_000)
        #expect(try await store.applyReading(transactionID: id, jobUUID: pending.jobUUID, Self.read, now: 3_000) == nil)
    }

    @Test func aReadingAskedAgain_replacesWhatTheLastReadingFilled_notWhatAPersonTyped() async throws {
        let store = try Store(stateDirectory: directory.at("state"), readsReceipts: true)
        let id = try await add(store)
        let pending = try #require(try await store.pendingReadings().first)
        _ = try await store.applyReading(transactionID: id, jobUUID: pending.jobUUID, Self.read, now: 2_000)
        _ = try await store.edit(ref: id, fields: ExpenseFields(merchant: "Sonne Bakery"), now: 2_500)
        var again = Self.read
        again.total = Suggestion("19.80", confidence: 0.95, note: "the line labelled 'total'")
        let outcome = try #require(try await store.applyReading(transactionID: id, jobUUID: nil, again, now: 3_000))
        #expect(outcome.filled.map(\.field) == ["amount", "currency", "date"])
        #expect(outcome.kept.map(\.field) == ["merchant"])
        let view = try await store.view(ref: id)
        #expect(view.fields.amount == "19.80" && view.fields.merchant == "Sonne Bakery")
        #expect(view.read == ["amount": 0.95, "currency": 0.8, "date": 0.88])
    }

    @Test func aDatabaseOfSchema10_isMigrated_andReadsFromThen() async throws {
        let state = directory.at("state")
        let id = try await add(try Store(stateDirectory: state))
        let db = try Connection(path: "\(state)/expensed.db")
        try SchemaRollback.back(db, to: 10)
        #expect(try db.schemaVersion() == 10)
        let store = try Store(stateDirectory: state, readsReceipts: true)
        #expect(try await store.read { try $0.schemaVersion() } == Schema.migrations.map(\.version).max())
        #expect(try await store.pendingReadings().isEmpty, "what was queued before is not read")
        #expect(try await store.view(ref: id).read.isEmpty)
        let later = try await add(store)
        #expect(try await store.pendingReadings().map(\.transactionID) == [later])
    }
}
