import ExpenseCore
import Testing

/// What a backend needs before it creates an expense, and which jobs wait
/// for it (docs/sync.md, "Incomplete expenses"): the decision as a value.
@Suite struct RequiredFieldsTests {
    static let ihatemoney = RequiredFields(["amount", "date"], backend: "ihatemoney")
    static let fava = RequiredFields(["date", "currency", "amount"], backend: "fava")
    static let scan = ExpenseFields()
    static let amountOnly = ExpenseFields(amount: "12.50", currency: "EUR")
    static let dateOnly = ExpenseFields(date: "2026-12-01")
    static let currencyAndDate = ExpenseFields(currency: "EUR", date: "2026-12-01")
    static let complete = ExpenseFields(amount: "12.50", currency: "EUR", date: "2026-12-01")
    static let typed = ExpenseFields(merchant: "Bakery", amount: "4.20", currency: "EUR", date: "2026-12-01")

    /// (required, kind, fields, sends) → held, and what it lacks.
    static let cases: [(RequiredFields, JobKind, ExpenseFields, Int, Bool, [String])] = [
        // expense-server takes a receipt alone: nothing is ever held.
        (.none, .create, scan, 0, false, []),
        (.none, .create, complete, 0, false, []),
        // ihatemoney: an amount and a date.
        (ihatemoney, .create, scan, 0, true, ["amount", "date"]),
        (ihatemoney, .create, amountOnly, 0, true, ["date"]),
        (ihatemoney, .create, dateOnly, 0, true, ["amount"]),
        (ihatemoney, .create, complete, 0, false, []),
        (ihatemoney, .create, typed, 0, false, []),
        // fava: an amount, its currency and a date.
        (fava, .create, scan, 0, true, ["amount", "currency", "date"]),
        (fava, .create, amountOnly, 0, true, ["date"]),
        (fava, .create, currencyAndDate, 0, true, ["amount"]),
        (fava, .create, complete, 0, false, []),
        // A create once handed to the network may be on the server: sent
        // again as it is (a replay), never held back.
        (ihatemoney, .create, scan, 1, false, ["amount", "date"]),
        (fava, .create, amountOnly, 2, false, ["date"]),
        // Only a create is held; what waits behind it waits for it anyway.
        (ihatemoney, .receipt, scan, 0, false, ["amount", "date"]),
        (ihatemoney, .edit, amountOnly, 0, false, ["date"]),
        (fava, .delete, scan, 0, false, ["amount", "currency", "date"]),
    ]

    @Test(arguments: cases.indices)
    func holds_onlyANeverSentCreateLackingARequiredField(_ index: Int) {
        let (required, kind, fields, sends, held, missing) = Self.cases[index]
        #expect(required.holds(kind, fields: fields, sends: sends) == held, "case \(index)")
        #expect(required.missing(in: fields) == missing, "case \(index)")
    }

    @Test func names_keepTheFieldsOrder_andExplainWhatIsMissing() {
        #expect(Self.fava.names == ["amount", "currency", "date"])
        #expect(RequiredFields.none.isEmpty && RequiredFields.none.rule == nil)
        #expect(Self.ihatemoney.rule == "ihatemoney needs an amount and a date to create an expense")
        #expect(Self.fava.rule == "fava needs an amount, a currency and a date to create an expense")
        #expect(Self.ihatemoney.explanation(for: Self.amountOnly) == "ihatemoney needs a date to create it")
        #expect(Self.ihatemoney.explanation(for: Self.complete) == nil)
        #expect(RequiredFields.phrase(["amount"]) == "an amount")
        #expect(RequiredFields.phrase(["tax_tag", "merchant"]) == "a tax tag and a merchant")
    }

    /// A view is marked held only while its create is queued and unsent.
    @Test func missingWhileHeld_readsTheViewsCreate() {
        func view(_ jobs: [PendingJob]) -> ExpenseView {
            ExpenseView.fold(cached: nil, jobs: jobs, transactionID: "cp-0206e11a39722b8b0b0d34")!
        }
        let queued = PendingJob(seq: 1, uuid: "u", kind: .create, state: .queued, fields: Self.amountOnly)
        #expect(Self.ihatemoney.missing(whileHeld: view([queued])) == ["date"])
        var sending = queued
        sending.state = .sending
        sending.sends = 1
        #expect(Self.ihatemoney.missing(whileHeld: view([sending])).isEmpty)
        var attention = queued
        attention.state = .needsAttention
        #expect(Self.ihatemoney.missing(whileHeld: view([attention])).isEmpty)
        let synced = ExpenseView.fold(cached: CanonicalExpense(transactionID: "cp-0206e11a39722b8b0b0d34", clientID: "c", fields: Self.scan, receiptURL: nil,
                                                               version: 1, createdAt: "2026-12-01T09:00:00Z", updatedAt: "2026-12-01T09:00:00Z"),
                                      jobs: [PendingJob(seq: 2, uuid: "e", kind: .edit, state: .queued)], transactionID: "cp-0206e11a39722b8b0b0d34")!
        #expect(Self.ihatemoney.missing(whileHeld: synced).isEmpty, "synced: no create")
        #expect(RequiredFields.none.missing(whileHeld: view([queued])).isEmpty)
    }
}
