import Testing
@testable import ExpenseCore

@Suite struct ExpenseViewTests {
    let cached = CanonicalExpense(transactionID: "cp-0206e11a39722b8b0b0d34", clientID: "1b4e28ba-2fa1-11d2-883f-0000f87d3b6e",
                                  fields: ExpenseFields(merchant: "Blue Bottle", amount: "12.50", currency: "EUR", date: "2026-11-29"),
                                  version: 3, createdAt: "2026-11-29T12:00:00.000Z", updatedAt: "2026-11-29T12:00:00.000Z")

    @Test func syncedExpense_withoutJobs_isSynced() {
        let view = ExpenseView.fold(cached: cached, jobs: [], transactionID: cached.transactionID)
        #expect(view?.state == .synced)
        #expect(view?.pendingFields == [])
        #expect(view?.receipt == ExpenseCore.ReceiptState.none)
    }

    @Test func queuedEdits_areFoldedInSequenceOrder() {
        let jobs = [
            PendingJob(seq: 9, uuid: "b", kind: .edit, state: .queued, fields: ExpenseFields(amount: "14.00")),
            PendingJob(seq: 7, uuid: "a", kind: .edit, state: .sending, fields: ExpenseFields(amount: "13.00", comment: "x")),
        ]
        let view = ExpenseView.fold(cached: cached, jobs: jobs, transactionID: cached.transactionID)
        #expect(view?.fields.amount == "14.00")
        #expect(view?.fields.comment == "x")
        #expect(view?.pendingFields == ["amount", "comment"])
        #expect(view?.state == .sending)
    }

    @Test func neverSentCreate_showsItsFields() {
        let job = PendingJob(seq: 1, uuid: "u", kind: .create, state: .queued, fields: ExpenseFields(merchant: "Taxi"))
        let view = ExpenseView.fold(cached: nil, jobs: [job], transactionID: "cp-x")
        #expect(view?.fields.merchant == "Taxi")
        #expect(view?.clientID == "u")
        #expect(view?.state == .queued)
    }

    @Test func deleteJob_showsDeletingAndNeedsAttentionWins() {
        let delete = PendingJob(seq: 4, uuid: "d", kind: .delete, state: .queued)
        #expect(ExpenseView.fold(cached: cached, jobs: [delete], transactionID: cached.transactionID)?.state == .deleting)
        let stuck = PendingJob(seq: 5, uuid: "r", kind: .receipt, state: .needsAttention)
        let view = ExpenseView.fold(cached: cached, jobs: [delete, stuck], transactionID: cached.transactionID)
        #expect(view?.state == .needsAttention)
        #expect(view?.receipt == .pending)
    }

    @Test func tombstone_withNothingPending_isHidden() {
        var tombstone = cached
        tombstone.deleted = true
        #expect(ExpenseView.fold(cached: tombstone, jobs: [], transactionID: cached.transactionID) == nil)
        #expect(ExpenseView.fold(cached: nil, jobs: [PendingJob(seq: 1, uuid: "r", kind: .receipt, state: .queued)], transactionID: "x") == nil)
    }
}
