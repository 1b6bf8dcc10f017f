import ExpenseCore
import Posix
import Postgres
import ServerStorage

extension PostgresStore {
    public func expense(_ transactionID: String, user: Int64) throws -> StoredExpense? {
        try read { db in
            try db.queryFirst("SELECT \(PostgresWriter.columns) FROM expenses WHERE transaction_id = $1 AND user_id = $2",
                              [.text(transactionID), .integer(user)]) { ExpenseColumns.decode($0) }
        }
    }

    public func changes(user: Int64, after: Int64, limit: Int) throws -> ChangePage {
        let rows = try read { db in
            try db.query("""
                SELECT \(PostgresWriter.columns), change_seq FROM expenses
                WHERE user_id = $1 AND change_seq > $2 ORDER BY change_seq LIMIT $3
                """, [.integer(user), .integer(after), .integer(Int64(limit + 1))]) { row in
                (ExpenseColumns.decode(row).expense, row.int64(ExpenseColumns.count))
            }
        }
        return ChangePage(rows: rows, limit: limit, after: after)
    }

    /// The chunks are copied, as they arrive, into a file of the staging
    /// folder that has no name: the bytes are never whole in memory, and
    /// the connection goes back to the pool before a slow client reads
    /// them. One statement reads them, so it sees all of one receipt's
    /// chunks or, when a replacement committed since the row was read,
    /// none: then the row is read again, once.
    public func receipt(of transactionID: String, user: Int64) throws -> ReceiptContent {
        for _ in 0..<2 {
            guard let stored = try expense(transactionID, user: user) else { throw StorageError.expenseNotFound }
            guard !stored.expense.deleted else { throw StorageError.expenseDeleted }
            guard let receipt = stored.receipt, let receiptID = Int64(receipt.locator) else { throw StorageError.receiptNotFound }
            let file: FileDescriptor
            var copied: Int64 = 0
            do {
                file = try staging.makeAnonymousFile()
                try read { db in
                    try db.stream("SELECT bytes FROM receipt_chunks WHERE receipt_id = $1 ORDER BY seq", [.integer(receiptID)]) { row in
                        try row.withBytes(0) { try file.writeAll($0) }
                        copied += Int64(row.withBytes(0) { $0.count })
                    }
                }
            } catch {
                throw Self.storageError(error)
            }
            if copied == 0 && receipt.size > 0 { continue }
            guard copied == receipt.size else {
                throw StorageError(.failed, "the receipt of \(transactionID) has \(copied) bytes, not \(receipt.size)")
            }
            return ReceiptContent(contentType: receipt.contentType, sha256: receipt.sha256, size: receipt.size, file: file)
        }
        throw StorageError.receiptNotFound
    }

    public func hasIdempotencyRecord(user: Int64, key: String) throws -> Bool {
        try read { db in
            try db.scalarInt("SELECT count(*) FROM idempotency_keys WHERE user_id = $1 AND key = $2", [.integer(user), .text(key)]) ?? 0 > 0
        }
    }
}
