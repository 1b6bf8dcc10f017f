import Testing
@testable import ExpenseCore

/// One form for every value, whichever interface it came through, and one
/// rule for clearing a field.
@Suite struct NormalizationTests {
    static let base = ExpenseFields(merchant: "Blue Bottle", amount: nil, currency: nil, date: "2026-11-29")

    @Test(arguments: [
        ("10", "EUR", "10.00"), ("10.5", "EUR", "10.50"), ("10.55", "EUR", "10.55"), ("-3", "EUR", "-3.00"), ("0", "EUR", "0.00"),
        ("10", "JPY", "10"), ("1.5", "KWD", "1.500"), ("1", "BHD", "1.000"), ("7", "CLF", "7.0000"), ("999999999999", "USD", "999999999999.00"),
    ])
    func amount_isWrittenWithTheCurrencysMinorUnits(_ amount: String, currency: String, expected: String) throws {
        var fields = Self.base
        fields.amount = amount
        fields.currency = currency
        #expect(try Validation.normalizedCreate(fields, hasReceipt: false).amount == expected)
        #expect(try Validation.normalized(fields).amount == expected)
    }

    @Test(arguments: ["-0", "-0.0", "-0.00", "-0.000"])
    func negativeZero_isRefusedForEveryCurrency(_ amount: String) {
        for currency in ["EUR", "JPY", "KWD", "CLF"] {
            #expect(throws: FieldError.self, "\(amount) \(currency)") { try Validation.checkAmount(amount, currency: currency) }
        }
        #expect(throws: FieldError.self) { try Validation.checkAmount(amount, currency: nil) }
    }

    @Test func amountEditedAlone_takesTheExpensesCurrency() throws {
        let euro = ExpenseFields(merchant: "M", amount: "12.50", currency: "EUR", date: "2026-11-29")
        #expect(try Validation.normalizedEdit(ExpenseFields(amount: "13"), of: euro).amount == "13.00")
        var yen = euro
        yen.amount = "1500"
        yen.currency = "JPY"
        #expect(try Validation.normalizedEdit(ExpenseFields(amount: "1600"), of: yen).amount == "1600")
        #expect(throws: FieldError.self, "JPY has no fraction digits") { try Validation.normalizedEdit(ExpenseFields(amount: "16.5"), of: yen) }
        // Both in one edit: the new currency decides.
        #expect(try Validation.normalizedEdit(ExpenseFields(amount: "2", currency: "KWD"), of: euro).amount == "2.000")
        // A receipt-only expense has no currency yet: an amount alone cannot be stored.
        #expect(throws: FieldError.self) { try Validation.normalizedEdit(ExpenseFields(amount: "3"), of: ExpenseFields()) }
    }

    @Test func emptyOptionalField_isCleared_andARequiredOneIsRefused() throws {
        let change = try Validation.normalized(ExpenseFields(category: "", comment: "  ", taxTag: ""), amountNeedsCurrency: false)
        #expect(change.cleared == ["category", "comment", "tax_tag"])
        #expect(change.changedNames == ["category", "comment", "tax_tag"])
        #expect(change.setNames.isEmpty && !change.isEmpty)
        #expect(change.jsonMembers == ["category": .null, "comment": .null, "tax_tag": .null])
        for name in ["merchant", "amount", "currency", "date"] {
            var blank = ExpenseFields()
            blank[name] = ""
            #expect(throws: FieldError.self, "\(name) ''") { try Validation.normalized(blank, amountNeedsCurrency: false) }
            var cleared = ExpenseFields()
            cleared.clear(name)
            #expect(throws: FieldError.self, "\(name) null") { try Validation.normalized(cleared, amountNeedsCurrency: false) }
        }
    }

    @Test func createsDropClears_editsKeepThem() throws {
        var fields = ExpenseFields(merchant: "M", amount: "1", currency: "EUR", date: "2026-11-29", comment: "")
        let create = try Validation.normalizedCreate(fields, hasReceipt: false)
        #expect(create.comment == nil && create.cleared.isEmpty)
        #expect(create.jsonMembers["comment"] == nil, "a create leaves the field out")
        fields.clear("comment")
        #expect(fields.jsonMembers["comment"] == .null, "an edit sends null")
        #expect(ExpenseFields(jsonMembers: .object(fields.jsonMembers)) == fields, "a stored payload reads back with its clear")
    }

    @Test func merging_aClearWinsOverAnEarlierValue_andAValueOverAnEarlierClear() {
        var first = ExpenseFields(comment: "first")
        var second = ExpenseFields()
        second.clear("comment")
        let merged = first.merging(second)
        #expect(merged.comment == nil && merged.cleared == ["comment"])
        first = merged.merging(ExpenseFields(comment: "again"))
        #expect(first.comment == "again" && first.cleared.isEmpty)
    }

    @Test func fold_showsAClearedFieldAsNullAndPending() {
        let cached = CanonicalExpense(transactionID: "cp-1", clientID: "c", fields: ExpenseFields(merchant: "M", comment: "note"),
                                      createdAt: "", updatedAt: "")
        var clear = ExpenseFields()
        clear.clear("comment")
        let edit = PendingJob(seq: 2, uuid: "e", kind: .edit, state: .queued, fields: clear)
        let view = ExpenseView.fold(cached: cached, jobs: [edit], transactionID: "cp-1")
        #expect(view?.fields.comment == nil)
        #expect(view?.fields.cleared.isEmpty == true, "a view holds values only")
        #expect(view?.pendingFields == ["comment"])
        #expect(view?.fields.merchant == "M")
    }
}
