import ExpenseCore

/// The steps of a write, inside one transaction of an engine: what
/// ``ExpenseRules`` are written in. Each engine implements them in its own
/// SQL; none of them checks and then inserts: an insert that a UNIQUE
/// constraint refuses reports it, and the rules decide what that means.
public protocol ExpenseWriter {
    /// Records that `operation` is answered with `status` about
    /// `transactionID`, unless (user, key) has a record: UNIQUE(user, key)
    /// decides. A concurrent transaction holding the same key makes this
    /// wait for its end.
    /// - Returns: false when there was a record (the request is a repeat,
    ///   or reuses the key); nothing was written then.
    func insertKeyRecord(_ operation: IdempotentOperation, status: Int, transactionID: String, nowMilliseconds: Int64) throws -> Bool
    /// The record of (user, key).
    func keyRecord(user: Int64, key: String) throws -> KeyRecord?
    /// The expense `transactionID` of `user`, locked against other writers
    /// until the transaction ends.
    func lockedExpense(_ transactionID: String, user: Int64) throws -> StoredExpense?
    /// Who owns `transactionID`, whoever asks.
    func owner(of transactionID: String) throws -> Int64?
    /// Inserts a new expense at version 1: UNIQUE(transaction_id) decides.
    /// - Returns: false when the transaction id exists; nothing was written then.
    func insertExpense(_ transactionID: String, user: Int64, clientID: String, _ request: CreateRequest, now: String) throws -> Bool
    /// Stores `fields` and `conflicts` (JSON), `version + 1`, a new change position.
    func updateFields(_ expense: StoredExpense, _ fields: ExpenseFields, conflicts: String, now: String) throws
    /// Makes the expense a tombstone: `deleted`, `version + 1`, a new change position.
    func markDeleted(_ expense: StoredExpense, now: String) throws
}
