import Posix

/// What the server needs of a database: the seam between the HTTP layer
/// and the storage engines (SQLite for one process, PostgreSQL for many).
///
/// Every write is one transaction that follows contract.md through
/// ``ExpenseRules``; the database's UNIQUE constraints decide every race,
/// also between processes. Methods block the calling thread (the HTTP
/// server's connection thread): never call them from async code.
/// Errors are ``StorageError``s.
public protocol ExpenseStorage: UserDirectory, SessionDirectory, ExpenseListing, ResumableUploads {
    /// `POST /v1/expenses`.
    func create(_ operation: IdempotentOperation, _ request: CreateRequest) throws -> WriteOutcome
    /// `PATCH /v1/expenses/{id}`.
    func edit(_ operation: IdempotentOperation, transactionID: String, _ request: PatchRequest) throws -> WriteOutcome
    /// `DELETE /v1/expenses/{id}`.
    func delete(_ operation: IdempotentOperation, transactionID: String) throws -> WriteOutcome
    /// `PUT /v1/expenses/{id}/receipt`, once the bytes are staged and
    /// checked. The staged file is the engine's from then on: kept or
    /// removed, whatever the outcome.
    func attachReceipt(_ operation: IdempotentOperation, transactionID: String, _ upload: StagedReceipt) throws -> WriteOutcome

    /// One expense of `user`, tombstones included; `nil` when there is none
    /// (another user's expense is "none").
    func expense(_ transactionID: String, user: Int64) throws -> StoredExpense?
    /// `user`'s expenses changed after position `after`, oldest change first.
    func changes(user: Int64, after: Int64, limit: Int) throws -> ChangePage
    /// The bytes of the receipt of `transactionID`, ready to send.
    /// - Throws: ``StorageError`` `expenseNotFound`, `expenseDeleted` or `receiptNotFound`.
    func receipt(of transactionID: String, user: Int64) throws -> ReceiptContent
    /// True when `user` used `key` before (for any request).
    func hasIdempotencyRecord(user: Int64, key: String) throws -> Bool

    /// Marks `key` as in progress (contract.md: `409 request_in_progress`),
    /// for every server process on this database.
    /// - Returns: false when another request holds it.
    func claim(user: Int64, key: String) throws -> Bool
    /// Ends a claim ``claim(user:key:)`` granted.
    func release(user: Int64, key: String)

    /// Where uploads are written while they arrive.
    var staging: UploadStaging { get }

    /// The schema version of the database, and the latest this program knows.
    func schemaVersions() throws -> (database: Int, known: Int)

    /// Forgets idempotency records older than `retentionMilliseconds`.
    /// - Returns: how many were removed.
    func purgeIdempotencyRecords(retentionMilliseconds: Int64) throws -> Int
    /// Removes what a crash can leave behind, once older than
    /// `graceNanoseconds` (a younger leftover may belong to a request in
    /// progress, in this or another process).
    /// - Returns: the names removed, for the log.
    func removeLeftovers(graceNanoseconds: Int64, now: Int64) throws -> [String]
}
