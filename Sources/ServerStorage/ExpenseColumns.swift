import ExpenseCore

/// A row as both engines' wrappers read it.
public protocol StorageRow {
    func string(_ column: Int) -> String
    func optionalString(_ column: Int) -> String?
    func int64(_ column: Int) -> Int64
    func int(_ column: Int) -> Int
    func bool(_ column: Int) -> Bool
}

/// The columns of an expense row, in the order every engine selects them.
public enum ExpenseColumns {
    /// The select list, with the engine's expression for the receipt's
    /// locator (a file name, a receipt id as text) in position 11.
    public static func list(receiptLocator: String) -> String {
        """
        id, user_id, transaction_id, client_id, merchant, amount, currency, date, category, comment, tax_tag, \
        \(receiptLocator), receipt_type, receipt_sha256, receipt_size, assigned, version, created_at, updated_at, deleted, conflicts
        """
    }

    /// ``list(receiptLocator:)`` for the table aliased `e`, in a join
    /// (`receiptLocator` written for that alias too).
    public static func qualified(receiptLocator: String) -> String {
        list(receiptLocator: "\u{1}").split(separator: ",").map { column in
            let name = String(column.drop { $0 == " " || $0 == "\n" })
            return name == "\u{1}" ? receiptLocator : "e.\(name)"
        }.joined(separator: ", ")
    }

    /// How many columns ``list(receiptLocator:)`` has.
    public static let count = 21

    public static func decode(_ row: some StorageRow) -> StoredExpense {
        let transactionID = row.string(2)
        var receipt: StoredReceipt?
        if let locator = row.optionalString(11) {
            receipt = StoredReceipt(locator: locator, contentType: row.string(12), sha256: row.string(13), size: row.int64(14))
        }
        let conflicts = ConflictValues.decode(row.string(20))
        let expense = CanonicalExpense(
            transactionID: transactionID, clientID: row.string(3),
            fields: ExpenseFields(merchant: row.optionalString(4), amount: row.optionalString(5),
                                  currency: row.optionalString(6), date: row.optionalString(7),
                                  category: row.optionalString(8), comment: row.optionalString(9),
                                  taxTag: row.optionalString(10)),
            receiptURL: receipt == nil ? nil : CanonicalExpense.receiptURL(transactionID),
            assigned: row.bool(15), version: row.int(16), createdAt: row.string(17), updatedAt: row.string(18),
            deleted: row.bool(19), conflict: !conflicts.isEmpty, conflicts: conflicts)
        return StoredExpense(rowID: row.int64(0), userID: row.int64(1), expense: expense, receipt: receipt)
    }
}
