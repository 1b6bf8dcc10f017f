import ExpenseCore
import SQLite

// The cache of the server's expenses: upserts and refresh pages.
extension Store {
    /// Stores the server's version of an expense, unless the cache already
    /// holds a newer one. `transaction_id` is the primary key: one row per
    /// expense, however many responses and refreshes overlap. `account` is
    /// whose it is: the account whose token brought it (the server shows a
    /// user only their own), kept as first stored.
    ///
    /// `ownAnswer`: `e` answers a job of this device's, which accounts for
    /// one version step (`contract.md`: one per change). Any step beyond
    /// those is a change made elsewhere, which may have replaced the
    /// receipt: the digest recorded for the receipt this device uploaded
    /// no longer vouches for the server's, and goes (the server's
    /// `Repr-Digest` checks its bytes then).
    static func upsert(_ db: Connection, _ e: CanonicalExpense, account: String, now: Int64, ownAnswer: Bool) throws {
        try db.execute("""
            DELETE FROM receipt_digests WHERE transaction_id = ?1 AND applied = 1
                AND ?2 > (SELECT version FROM expenses WHERE transaction_id = ?1) + ?3
            """, [.text(e.transactionID), .integer(Int64(e.version)), .integer(ownAnswer ? 1 : 0)])
        let conflicts = ConflictValues.encode(e.conflicts)
        try db.execute("""
            INSERT INTO expenses (transaction_id, client_id, merchant, amount, currency, date, category, comment, tax_tag,
                                  receipt_url, assigned, version, created_at, updated_at, deleted, conflict, conflicts, stored_at, account)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (transaction_id) DO UPDATE SET
                client_id = excluded.client_id, merchant = excluded.merchant, amount = excluded.amount,
                currency = excluded.currency, date = excluded.date, category = excluded.category,
                comment = excluded.comment, tax_tag = excluded.tax_tag, receipt_url = excluded.receipt_url,
                assigned = excluded.assigned, version = excluded.version, created_at = excluded.created_at,
                updated_at = excluded.updated_at, deleted = excluded.deleted, conflict = excluded.conflict,
                conflicts = excluded.conflicts, stored_at = excluded.stored_at
            WHERE excluded.version >= expenses.version
            """, [.text(e.transactionID), .text(e.clientID), .text(e.merchant), .text(e.amount), .text(e.currency),
                  .text(e.date), .text(e.category), .text(e.comment), .text(e.taxTag), .text(e.receiptURL),
                  .bool(e.assigned), .integer(Int64(e.version)), .text(e.createdAt), .text(e.updatedAt),
                  .bool(e.deleted), .bool(e.conflict), .text(conflicts), .integer(now), .text(account)])
    }

    /// Stores one page of a refresh with `account`'s token and the cursor
    /// after it (each account has its own), together.
    /// - Returns: transaction ids of tombstones that arrived.
    public func storeRefreshPage(_ expenses: [CanonicalExpense], cursor: String?, now: Int64,
                                 account: String = AccountName.defaultName) async throws -> [String] {
        // Deferred: a lost page is fetched again from the older cursor.
        try await write(durability: .deferred, usingHeadroom: true) { db, watched in
            let states = try StateChanges(db, watched: watched, expenses.map(\.transactionID))
            var versions: [String: Int] = [:]
            var held: Set<String> = []
            for expense in expenses {
                if watched, let version = try db.queryFirst("SELECT version FROM expenses WHERE transaction_id = ?", [.text(expense.transactionID)], { $0.int(0) }) {
                    versions[expense.transactionID] = versions[expense.transactionID] ?? version
                }
                try Store.upsert(db, expense, account: account, now: now, ownAnswer: false)
                if expense.deleted {
                    // Deleted elsewhere: a change still waiting here cannot apply.
                    // Say so instead of dropping the user's edit silently.
                    try db.execute("""
                        UPDATE jobs SET state = 'needs_attention', last_error_class = 'gone',
                            last_error = 'the expense was deleted on another device; this edit was not applied'
                        WHERE transaction_id = ? AND kind = 'edit' AND state = 'queued'
                        """, [.text(expense.transactionID)])
                    if db.changes > 0 { held.insert(expense.transactionID) }
                }
            }
            if let cursor {
                try db.execute("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                               [.text(Store.cursorKey(account)), .text(cursor)])
            }
            let newest = Dictionary(expenses.map { ($0.transactionID, $0) }, uniquingKeysWith: { $0.version >= $1.version ? $0 : $1 })
            let made = try states.changes(db) { id, to in
                guard let expense = newest[id] else { return nil }
                if expense.deleted { return held.contains(id) ? "deleted on the server; the edit waiting here was not applied" : "deleted on the server" }
                guard let version = versions[id] else {
                    // Not cached before: made elsewhere, unless this device's own create is still waiting for its answer.
                    return to == "synced" || to == "conflict" ? "from the server" : nil
                }
                return expense.version > version ? "changed on the server (version \(expense.version))" : nil
            }
            return (expenses.filter(\.deleted).map(\.transactionID), made)
        }
    }

    /// Where `account`'s last refresh stopped (opaque to the client).
    public func refreshCursor(account: String = AccountName.defaultName) async throws -> String? {
        try await database.read { db in
            try db.queryFirst("SELECT value FROM settings WHERE key = ?", [.text(Store.cursorKey(account))]) { $0.string(0) }
        }
    }

    /// The settings key of an account's cursor; the default account's is
    /// the one of before accounts, so an upgrade goes on where it was.
    static func cursorKey(_ account: String) -> String {
        account == AccountName.defaultName ? "refresh_cursor" : "refresh_cursor/\(account)"
    }
}
