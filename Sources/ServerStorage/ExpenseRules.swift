import ExpenseCore
import Posix

/// contract.md's writes, once for every engine, in the steps of an
/// ``ExpenseWriter``. Each runs inside one transaction: a thrown error
/// rolls all of it back, so only successful outcomes are recorded.
///
/// Every write first inserts its idempotency record: UNIQUE(user, key) is
/// the arbiter of repeats, and a racing repeat waits on it for the first
/// to end, then answers as a replay. A create then inserts the expense,
/// and UNIQUE(transaction_id) decides between two users' keys. Nothing is
/// checked first and inserted after.
public enum ExpenseRules {
    /// `POST /v1/expenses`: makes the expense whose transaction id derives
    /// from the key, or answers as a replay.
    public static func create(_ writer: some ExpenseWriter, _ operation: IdempotentOperation, _ request: CreateRequest) throws -> WriteOutcome {
        let transactionID = TransactionID.derive(from: operation.key)
        let now = Self.now()
        guard try writer.insertKeyRecord(operation, status: 201, transactionID: transactionID, nowMilliseconds: now.milliseconds) else {
            return try replay(writer, operation)
        }
        if try writer.insertExpense(transactionID, user: operation.user, clientID: operation.key, request, now: now.text) {
            return .created(CanonicalExpense(transactionID: transactionID, clientID: operation.key, fields: request.fields,
                                             createdAt: now.text, updatedAt: now.text))
        }
        // The transaction id exists: a retry whose idempotency record
        // expired (answered like a replay; the record just written stays),
        // or another user's (the record goes with the rollback; that
        // user's expense is never revealed).
        guard let owner = try writer.owner(of: transactionID) else {
            throw StorageError(.failed, "the transaction id \(transactionID) exists and has no owner")
        }
        guard owner == operation.user else { throw StorageError.idempotencyKeyReused }
        return .replayed(try current(writer, transactionID, user: operation.user))
    }

    /// `PATCH /v1/expenses/{id}`: applies an edit with the contract's
    /// last-writer-wins and conflict rules (``EditMerge``).
    public static func edit(_ writer: some ExpenseWriter, _ operation: IdempotentOperation, transactionID: String,
                            _ request: PatchRequest) throws -> WriteOutcome {
        let now = Self.now()
        guard try writer.insertKeyRecord(operation, status: 200, transactionID: transactionID, nowMilliseconds: now.milliseconds) else {
            return try replay(writer, operation)
        }
        guard var stored = try writer.lockedExpense(transactionID, user: operation.user) else { throw StorageError.expenseNotFound }
        guard !stored.expense.deleted else { throw StorageError.expenseDeleted }
        let merged = try EditMerge.apply(request, to: stored.expense)
        try writer.updateFields(stored, merged.fields, conflicts: ConflictValues.encode(merged.conflicts), now: now.text)
        stored.expense.fields = merged.fields
        stored.expense.conflicts = merged.conflicts
        stored.expense.conflict = !merged.conflicts.isEmpty
        stored.expense.version += 1
        stored.expense.updatedAt = now.text
        return .applied(stored.expense)
    }

    /// `DELETE /v1/expenses/{id}`: leaves a tombstone. Deleting a tombstone
    /// is a replay, whatever the key.
    public static func delete(_ writer: some ExpenseWriter, _ operation: IdempotentOperation, transactionID: String) throws -> WriteOutcome {
        let now = Self.now()
        guard try writer.insertKeyRecord(operation, status: 200, transactionID: transactionID, nowMilliseconds: now.milliseconds) else {
            return try replay(writer, operation)
        }
        guard var stored = try writer.lockedExpense(transactionID, user: operation.user) else { throw StorageError.expenseNotFound }
        if stored.expense.deleted { return .replayed(stored.expense) }
        try writer.markDeleted(stored, now: now.text)
        stored.expense.deleted = true
        stored.expense.version += 1
        stored.expense.updatedAt = now.text
        return .applied(stored.expense)
    }

    /// `PUT /v1/expenses/{id}/receipt`: points the expense at new bytes
    /// through `attach` (the engine's step: it stores them, or points the
    /// row at where they already are, with `version + 1` and a new change
    /// position). The same bytes again are a replay, whatever the key, and
    /// `attach` is not called.
    public static func attachReceipt(_ writer: some ExpenseWriter, _ operation: IdempotentOperation, transactionID: String,
                                     contentType: String, sha256: String,
                                     attach: (StoredExpense, _ now: String) throws -> Void) throws -> WriteOutcome {
        let now = Self.now()
        guard try writer.insertKeyRecord(operation, status: 200, transactionID: transactionID, nowMilliseconds: now.milliseconds) else {
            return try replay(writer, operation)
        }
        guard var stored = try writer.lockedExpense(transactionID, user: operation.user) else { throw StorageError.expenseNotFound }
        guard !stored.expense.deleted else { throw StorageError.expenseDeleted }
        if let current = stored.receipt, current.sha256 == sha256, current.contentType == contentType {
            return .replayed(stored.expense)
        }
        try attach(stored, now.text)
        stored.expense.receiptURL = CanonicalExpense.receiptURL(transactionID)
        stored.expense.version += 1
        stored.expense.updatedAt = now.text
        return .applied(stored.expense)
    }

    /// The answer to a key used before by the same user: the expense that
    /// request concerned, as it is now.
    /// - Throws: `idempotencyKeyReused` when the key came with another request.
    public static func replay(_ writer: some ExpenseWriter, _ operation: IdempotentOperation) throws -> WriteOutcome {
        guard let record = try writer.keyRecord(user: operation.user, key: operation.key) else {
            // The insert saw a record, so one committed; records are only
            // purged after a day, and never while a request uses the key.
            throw StorageError(.unavailable, "the idempotency record of this key vanished; retry")
        }
        guard record.fingerprint == operation.fingerprint else { throw StorageError.idempotencyKeyReused }
        return .replayed(try current(writer, record.transactionID, user: operation.user))
    }

    /// Expenses are never removed (deletes leave tombstones): one a record
    /// names exists.
    private static func current(_ writer: some ExpenseWriter, _ transactionID: String, user: Int64) throws -> CanonicalExpense {
        guard let stored = try writer.lockedExpense(transactionID, user: user) else {
            throw StorageError(.failed, "the expense \(transactionID) of an idempotency record is missing")
        }
        return stored.expense
    }

    /// The server's clock, as milliseconds and as RFC 3339 text.
    public static func now() -> (milliseconds: Int64, text: String) {
        let ms = Clock.wallMilliseconds
        return (ms, Timestamp.format(milliseconds: ms))
    }
}
