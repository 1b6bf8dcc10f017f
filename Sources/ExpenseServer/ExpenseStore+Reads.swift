import ExpenseCore
import SQLite

extension ExpenseStore {
    /// One expense of `user`, tombstones included; `nil` when there is none
    /// (another user's expense is "none").
    func expense(_ transactionID: String, user: Int64) throws -> StoredExpense? {
        try read { db in try Self.load(db, transactionID: transactionID, user: user) }
    }

    /// A page of the change feed: `user`'s expenses changed after `cursor`,
    /// oldest change first, each once, in its latest state.
    func changes(user: Int64, after cursor: ListCursor, limit: Int) throws -> (expenses: [CanonicalExpense], next: ListCursor, hasMore: Bool) {
        let rows = try read { db in
            try db.query("""
                SELECT \(Self.columns), change_seq FROM expenses
                WHERE user_id = ? AND change_seq > ? ORDER BY change_seq LIMIT ?
                """, [.integer(user), .integer(cursor.sequence), .integer(limit + 1)]) { row in
                (try Self.decode(row).expense, row.int64(21))
            }
        }
        let page = rows.prefix(limit)
        let next = page.last.map { ListCursor(sequence: $0.1) } ?? cursor
        return (page.map(\.0), next, rows.count > limit)
    }

    /// Every receipt file a row points at.
    func referencedReceiptFiles() throws -> Set<String> {
        Set(try read { db in
            try db.query("SELECT receipt_file FROM expenses WHERE receipt_file IS NOT NULL") { $0.string(0) }
        })
    }
}
