import ExpenseCore
import ServerStorage
import SQLite

/// The steps of a write on the writer connection, inside its group
/// commit's savepoint. The writer is alone (`BEGIN IMMEDIATE`), so
/// nothing it reads can change before it commits.
struct SQLiteWriter: ExpenseWriter {
    let db: Connection

    func insertKeyRecord(_ operation: IdempotentOperation, status: Int, transactionID: String, nowMilliseconds: Int64) throws -> Bool {
        try db.execute("""
            INSERT INTO idempotency_keys (user_id, key, method, path, fingerprint, status, transaction_id, created_at_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, key) DO NOTHING
            """, [.integer(operation.user), .text(operation.key), .text(operation.method), .text(operation.path),
                  .text(operation.fingerprint), .integer(status), .text(transactionID), .integer(nowMilliseconds)])
        return db.changes == 1
    }

    func keyRecord(user: Int64, key: String) throws -> KeyRecord? {
        try db.queryFirst("SELECT fingerprint, transaction_id FROM idempotency_keys WHERE user_id = ? AND key = ?",
                          [.integer(user), .text(key)]) { KeyRecord(fingerprint: $0.string(0), transactionID: $0.string(1)) }
    }

    func lockedExpense(_ transactionID: String, user: Int64) throws -> StoredExpense? {
        try Self.load(db, transactionID: transactionID, user: user)
    }

    static func load(_ db: Connection, transactionID: String, user: Int64) throws -> StoredExpense? {
        try db.queryFirst("SELECT \(SQLiteStore.columns) FROM expenses WHERE transaction_id = ? AND user_id = ?",
                          [.text(transactionID), .integer(user)]) { ExpenseColumns.decode($0) }
    }

    func owner(of transactionID: String) throws -> Int64? {
        try db.scalarInt("SELECT user_id FROM expenses WHERE transaction_id = ?", [.text(transactionID)])
    }

    func insertExpense(_ transactionID: String, user: Int64, clientID: String, _ request: CreateRequest, now: String) throws -> Bool {
        let f = request.fields
        try db.execute("""
            INSERT INTO expenses (transaction_id, user_id, client_id, merchant, amount, currency, date,
                category, comment, tax_tag, device_id, device_seq, created_at_device,
                version, created_at, updated_at, change_seq)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)
            ON CONFLICT (transaction_id) DO NOTHING
            """, [.text(transactionID), .integer(user), .text(clientID),
                  .text(f.merchant), .text(f.amount), .text(f.currency), .text(f.date),
                  .text(f.category), .text(f.comment), .text(f.taxTag),
                  .text(request.deviceID), request.deviceSequence.map(SQLValue.integer) ?? .null,
                  .text(request.createdAtDevice), .text(now), .text(now), .integer(try nextChange())])
        return db.changes == 1
    }

    func updateFields(_ expense: StoredExpense, _ fields: ExpenseFields, conflicts: String, now: String) throws {
        let f = fields
        try db.execute("""
            UPDATE expenses SET merchant = ?, amount = ?, currency = ?, date = ?, category = ?, comment = ?,
                tax_tag = ?, conflicts = ?, version = version + 1, updated_at = ?, change_seq = ?
            WHERE id = ?
            """, [.text(f.merchant), .text(f.amount), .text(f.currency), .text(f.date), .text(f.category),
                  .text(f.comment), .text(f.taxTag), .text(conflicts), .text(now), .integer(try nextChange()),
                  .integer(expense.rowID)])
    }

    func markDeleted(_ expense: StoredExpense, now: String) throws {
        try db.execute("UPDATE expenses SET deleted = 1, version = version + 1, updated_at = ?, change_seq = ? WHERE id = ?",
                       [.text(now), .integer(try nextChange()), .integer(expense.rowID)])
    }

    /// Points the expense at the receipt file `receipt` names.
    func pointAtReceipt(_ expense: StoredExpense, _ receipt: StoredReceipt, now: String) throws {
        try db.execute("""
            UPDATE expenses SET receipt_file = ?, receipt_type = ?, receipt_sha256 = ?, receipt_size = ?,
                version = version + 1, updated_at = ?, change_seq = ?
            WHERE id = ?
            """, [.text(receipt.locator), .text(receipt.contentType), .text(receipt.sha256), .integer(receipt.size),
                  .text(now), .integer(try nextChange()), .integer(expense.rowID)])
    }

    /// The next position in the change feed. Writers are serialized
    /// (`BEGIN IMMEDIATE`), so max + 1 is never handed out twice; the
    /// UNIQUE constraint on `change_seq` would refuse it if it were.
    private func nextChange() throws -> Int64 {
        try db.scalarInt("SELECT coalesce(max(change_seq), 0) + 1 FROM expenses") ?? 1
    }
}
