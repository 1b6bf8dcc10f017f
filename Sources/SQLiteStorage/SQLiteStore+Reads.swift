import ExpenseCore
import Posix
import ServerStorage
import SQLite

extension SQLiteStore {
    static let columns = ExpenseColumns.list(receiptLocator: "receipt_file")

    public func expense(_ transactionID: String, user: Int64) throws -> StoredExpense? {
        try read { db in try SQLiteWriter.load(db, transactionID: transactionID, user: user) }
    }

    public func changes(user: Int64, after: Int64, limit: Int) throws -> ChangePage {
        let rows = try read { db in
            try db.query("""
                SELECT \(Self.columns), change_seq FROM expenses
                WHERE user_id = ? AND change_seq > ? ORDER BY change_seq LIMIT ?
                """, [.integer(user), .integer(after), .integer(limit + 1)]) { row in
                (ExpenseColumns.decode(row).expense, row.int64(ExpenseColumns.count))
            }
        }
        return ChangePage(rows: rows, limit: limit, after: after)
    }

    public func receipt(of transactionID: String, user: Int64) throws -> ReceiptContent {
        // A replacement may remove the old file between reading the row
        // and opening it: read again once.
        for attempt in 0..<2 {
            guard let stored = try expense(transactionID, user: user) else { throw StorageError.expenseNotFound }
            guard !stored.expense.deleted else { throw StorageError.expenseDeleted }
            guard let receipt = stored.receipt else { throw StorageError.receiptNotFound }
            do {
                let file = try receipts.open(receipt.locator)
                return ReceiptContent(contentType: receipt.contentType, sha256: receipt.sha256, size: receipt.size, file: file)
            } catch where error.isNotFound && attempt == 0 {
                continue
            } catch {
                throw Self.storageError(error)
            }
        }
        throw StorageError.receiptNotFound
    }

    public func hasIdempotencyRecord(user: Int64, key: String) throws -> Bool {
        try read { db in
            try db.scalarInt("SELECT count(*) FROM idempotency_keys WHERE user_id = ? AND key = ?", [.integer(user), .text(key)]) ?? 0 > 0
        }
    }

    /// Every receipt file a row points at.
    func referencedReceiptFiles() throws -> Set<String> {
        Set(try read { db in
            try db.query("SELECT receipt_file FROM expenses WHERE receipt_file IS NOT NULL") { $0.string(0) }
        })
    }
}
