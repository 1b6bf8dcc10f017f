import ExpenseCore
import SQLite

extension ExpenseStore {
    /// `POST /v1/expenses`: makes the expense whose transaction id derives
    /// from the key, or answers as a replay. The UNIQUE constraint on the
    /// transaction id decides every race, also between processes.
    func create(_ operation: IdempotentOperation, _ request: CreateRequest) throws -> WriteOutcome {
        try write { db in
            if let expense = try Self.replay(db, operation) { return .replayed(expense) }
            let transactionID = TransactionID.derive(from: operation.key)
            let now = Self.now()
            let change = try Self.nextChange(db)
            let f = request.fields
            do {
                try db.execute("""
                    INSERT INTO expenses (transaction_id, user_id, client_id, merchant, amount, currency, date,
                        category, comment, tax_tag, device_id, device_seq, created_at_device,
                        version, created_at, updated_at, change_seq)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)
                    """, [.text(transactionID), .integer(operation.user), .text(operation.key),
                          .text(f.merchant), .text(f.amount), .text(f.currency), .text(f.date),
                          .text(f.category), .text(f.comment), .text(f.taxTag),
                          .text(request.deviceID), request.deviceSequence.map(SQLValue.integer) ?? .null,
                          .text(request.createdAtDevice), .text(now.text), .text(now.text), .integer(change)])
            } catch let error as SQLiteError where error.isUniqueConstraint {
                return try Self.resolveDuplicate(db, operation, transactionID: transactionID, error: error)
            }
            try Self.remember(db, operation, status: 201, transactionID: transactionID, nowMilliseconds: now.milliseconds)
            return .created(CanonicalExpense(transactionID: transactionID, clientID: operation.key, fields: f,
                                             createdAt: now.text, updatedAt: now.text))
        }
    }

    /// The transaction id already exists: the loser of a race (or a retry
    /// whose idempotency record expired) answers like a replay; another
    /// user's expense is never revealed.
    private static func resolveDuplicate(_ db: Connection, _ operation: IdempotentOperation, transactionID: String,
                                         error: SQLiteError) throws -> WriteOutcome {
        guard let owner = try db.scalarInt("SELECT user_id FROM expenses WHERE transaction_id = ?", [.text(transactionID)]) else {
            throw error
        }
        guard owner == operation.user else { throw APIError.idempotencyKeyReused }
        if let expense = try replay(db, operation) { return .replayed(expense) }
        try remember(db, operation, status: 201, transactionID: transactionID, nowMilliseconds: now().milliseconds, ifAbsent: true)
        guard let stored = try load(db, transactionID: transactionID, user: operation.user) else { throw error }
        return .replayed(stored.expense)
    }

    /// `PATCH /v1/expenses/{id}`: applies an edit with the contract's
    /// last-writer-wins and conflict rules (``EditMerge``).
    func edit(_ operation: IdempotentOperation, transactionID: String, _ request: PatchRequest) throws -> WriteOutcome {
        try write { db in
            if let expense = try Self.replay(db, operation) { return .replayed(expense) }
            guard var stored = try Self.load(db, transactionID: transactionID, user: operation.user) else {
                throw APIError.expenseNotFound
            }
            guard !stored.expense.deleted else { throw APIError.expenseDeleted }
            let merged = try EditMerge.apply(request, to: stored.expense)
            let now = Self.now()
            let change = try Self.nextChange(db)
            let f = merged.fields
            try db.execute("""
                UPDATE expenses SET merchant = ?, amount = ?, currency = ?, date = ?, category = ?, comment = ?,
                    tax_tag = ?, conflicts = ?, version = version + 1, updated_at = ?, change_seq = ?
                WHERE id = ?
                """, [.text(f.merchant), .text(f.amount), .text(f.currency), .text(f.date), .text(f.category),
                      .text(f.comment), .text(f.taxTag), .text(ConflictValues.encode(merged.conflicts)),
                      .text(now.text), .integer(change), .integer(stored.rowID)])
            stored.expense.fields = f
            stored.expense.conflicts = merged.conflicts
            stored.expense.conflict = !merged.conflicts.isEmpty
            stored.expense.version += 1
            stored.expense.updatedAt = now.text
            try Self.remember(db, operation, status: 200, transactionID: transactionID, nowMilliseconds: now.milliseconds)
            return .applied(stored.expense)
        }
    }

    /// `DELETE /v1/expenses/{id}`: leaves a tombstone. Deleting a tombstone
    /// is a replay.
    func delete(_ operation: IdempotentOperation, transactionID: String) throws -> WriteOutcome {
        try write { db in
            if let expense = try Self.replay(db, operation) { return .replayed(expense) }
            guard var stored = try Self.load(db, transactionID: transactionID, user: operation.user) else {
                throw APIError.expenseNotFound
            }
            let now = Self.now()
            if stored.expense.deleted {
                try Self.remember(db, operation, status: 200, transactionID: transactionID, nowMilliseconds: now.milliseconds)
                return .replayed(stored.expense)
            }
            let change = try Self.nextChange(db)
            try db.execute("UPDATE expenses SET deleted = 1, version = version + 1, updated_at = ?, change_seq = ? WHERE id = ?",
                           [.text(now.text), .integer(change), .integer(stored.rowID)])
            stored.expense.deleted = true
            stored.expense.version += 1
            stored.expense.updatedAt = now.text
            try Self.remember(db, operation, status: 200, transactionID: transactionID, nowMilliseconds: now.milliseconds)
            return .applied(stored.expense)
        }
    }

    /// What attaching a receipt did, and which files the caller must remove
    /// once it returned (never before the commit).
    /// Only an applied upload points the expense at the new file; after a
    /// replay the new file is referenced by nothing and must go.
    struct ReceiptAttachment: Sendable {
        let outcome: WriteOutcome
        /// The file the expense pointed at before, now unreferenced.
        let replacedFile: String?
    }

    /// `PUT /v1/expenses/{id}/receipt`, once the bytes are durable under
    /// `receipt.file`: points the expense at them. The same bytes again are
    /// a replay.
    func attachReceipt(_ operation: IdempotentOperation, transactionID: String, _ receipt: StoredReceipt) throws -> ReceiptAttachment {
        try write { db in
            if let expense = try Self.replay(db, operation) {
                return ReceiptAttachment(outcome: .replayed(expense), replacedFile: nil)
            }
            guard var stored = try Self.load(db, transactionID: transactionID, user: operation.user) else {
                throw APIError.expenseNotFound
            }
            guard !stored.expense.deleted else { throw APIError.expenseDeleted }
            let now = Self.now()
            if let current = stored.receipt, current.sha256 == receipt.sha256, current.contentType == receipt.contentType {
                try Self.remember(db, operation, status: 200, transactionID: transactionID, nowMilliseconds: now.milliseconds)
                return ReceiptAttachment(outcome: .replayed(stored.expense), replacedFile: nil)
            }
            let change = try Self.nextChange(db)
            try db.execute("""
                UPDATE expenses SET receipt_file = ?, receipt_type = ?, receipt_sha256 = ?, receipt_size = ?,
                    version = version + 1, updated_at = ?, change_seq = ?
                WHERE id = ?
                """, [.text(receipt.file), .text(receipt.contentType), .text(receipt.sha256), .integer(receipt.size),
                      .text(now.text), .integer(change), .integer(stored.rowID)])
            let replaced = stored.receipt?.file
            stored.expense.receiptURL = Self.receiptURL(transactionID)
            stored.expense.version += 1
            stored.expense.updatedAt = now.text
            try Self.remember(db, operation, status: 200, transactionID: transactionID, nowMilliseconds: now.milliseconds)
            return ReceiptAttachment(outcome: .applied(stored.expense), replacedFile: replaced)
        }
    }
}
