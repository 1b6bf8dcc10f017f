import ExpenseCore
import Postgres
import ServerStorage

/// The steps of a write on one pooled connection, inside its transaction
/// (`READ COMMITTED`). Other processes write at the same time: rows that
/// are changed are locked first (`FOR UPDATE`), inserts are arbitrated by
/// their UNIQUE constraints with `ON CONFLICT DO NOTHING` (which waits for
/// a concurrent insert of the same key to end, and never aborts the
/// transaction), and locks are always taken in the same order (the
/// idempotency key, the expense, the user's change lock), so two writes
/// never wait on each other in a circle.
struct PostgresWriter: ExpenseWriter {
    let db: Connection

    static let columns = ExpenseColumns.list(receiptLocator: "CAST(receipt_id AS text)")

    func insertKeyRecord(_ operation: IdempotentOperation, status: Int, transactionID: String, nowMilliseconds: Int64) throws -> Bool {
        try db.execute("""
            INSERT INTO idempotency_keys (user_id, key, method, path, fingerprint, status, transaction_id, created_at_ms)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (user_id, key) DO NOTHING
            """, [.integer(operation.user), .text(operation.key), .text(operation.method), .text(operation.path),
                  .text(operation.fingerprint), .integer(Int64(status)), .text(transactionID), .integer(nowMilliseconds)]) == 1
    }

    func keyRecord(user: Int64, key: String) throws -> KeyRecord? {
        try db.queryFirst("SELECT fingerprint, transaction_id FROM idempotency_keys WHERE user_id = $1 AND key = $2",
                          [.integer(user), .text(key)]) { KeyRecord(fingerprint: $0.string(0), transactionID: $0.string(1)) }
    }

    func lockedExpense(_ transactionID: String, user: Int64) throws -> StoredExpense? {
        try db.queryFirst("SELECT \(Self.columns) FROM expenses WHERE transaction_id = $1 AND user_id = $2 FOR UPDATE",
                          [.text(transactionID), .integer(user)]) { ExpenseColumns.decode($0) }
    }

    func owner(of transactionID: String) throws -> Int64? {
        try db.scalarInt("SELECT user_id FROM expenses WHERE transaction_id = $1", [.text(transactionID)])
    }

    func insertExpense(_ transactionID: String, user: Int64, clientID: String, _ request: CreateRequest, now: String) throws -> Bool {
        let f = request.fields
        try lockChanges(of: user)
        return try db.execute("""
            INSERT INTO expenses (transaction_id, user_id, client_id, merchant, amount, currency, date,
                category, comment, tax_tag, device_id, device_seq, created_at_device,
                version, created_at, updated_at, change_seq)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 1, $14, $15, \(Self.nextChange("$2")))
            ON CONFLICT (transaction_id) DO NOTHING
            """, [.text(transactionID), .integer(user), .text(clientID),
                  .text(f.merchant), .text(f.amount), .text(f.currency), .text(f.date),
                  .text(f.category), .text(f.comment), .text(f.taxTag),
                  .text(request.deviceID), .integer(request.deviceSequence),
                  .text(request.createdAtDevice), .text(now), .text(now)]) == 1
    }

    func updateFields(_ expense: StoredExpense, _ fields: ExpenseFields, conflicts: String, now: String) throws {
        let f = fields
        try lockChanges(of: expense.userID)
        try db.execute("""
            UPDATE expenses SET merchant = $1, amount = $2, currency = $3, date = $4, category = $5, comment = $6,
                tax_tag = $7, conflicts = $8, version = version + 1, updated_at = $9, change_seq = \(Self.nextChange("$10"))
            WHERE id = $11
            """, [.text(f.merchant), .text(f.amount), .text(f.currency), .text(f.date), .text(f.category),
                  .text(f.comment), .text(f.taxTag), .text(conflicts), .text(now), .integer(expense.userID),
                  .integer(expense.rowID)])
    }

    func markDeleted(_ expense: StoredExpense, now: String) throws {
        try lockChanges(of: expense.userID)
        try db.execute("UPDATE expenses SET deleted = true, version = version + 1, updated_at = $1, change_seq = \(Self.nextChange("$2")) WHERE id = $3",
                       [.text(now), .integer(expense.userID), .integer(expense.rowID)])
    }

    /// Points the expense at the receipt `receiptID` (whose chunks this
    /// transaction wrote) and drops the receipt it replaces, chunks and all.
    func pointAtReceipt(_ expense: StoredExpense, receiptID: Int64, contentType: String, sha256: String, size: Int64, now: String) throws {
        try lockChanges(of: expense.userID)
        try db.execute("""
            UPDATE expenses SET receipt_id = $1, receipt_type = $2, receipt_sha256 = $3, receipt_size = $4,
                version = version + 1, updated_at = $5, change_seq = \(Self.nextChange("$6"))
            WHERE id = $7
            """, [.integer(receiptID), .text(contentType), .text(sha256), .integer(size), .text(now),
                  .integer(expense.userID), .integer(expense.rowID)])
        if let old = expense.receipt.flatMap({ Int64($0.locator) }) {
            try db.execute("DELETE FROM receipts WHERE id = $1", [.integer(old)])
        }
    }

    /// Takes `user`'s change lock, held until the transaction ends, before
    /// the statement that numbers the change (``nextChange(_:)``).
    ///
    /// One user's changes are numbered in commit order so that a reader
    /// that sees position n sees every position before it: the number is
    /// one past the user's last, computed by a statement that starts after
    /// the lock was granted, so after the last holder committed. (A lock
    /// rather than a counter row: a row updated by every write of a user
    /// would pile up dead versions and make its waiters chase them.)
    private func lockChanges(of user: Int64) throws {
        guard let key = Int32(exactly: user) else { throw StorageError(.failed, "user id \(user) is beyond the change locks' range") }
        try db.execute("SELECT pg_advisory_xact_lock($1::integer, $2::integer)", [.integer(Int64(PostgresSchema.changeLockSpace)), .integer(Int64(key))])
    }

    /// The expression of the user's next position, for the user id in `parameter`.
    private static func nextChange(_ parameter: String) -> String {
        "(SELECT coalesce(max(c.change_seq), 0) + 1 FROM expenses c WHERE c.user_id = \(parameter))"
    }
}

extension Row: StorageRow {}
