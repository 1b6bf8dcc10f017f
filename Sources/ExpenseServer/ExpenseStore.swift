import Digest
import ExpenseCore
import Posix
import SQLite

/// The server's storage in its data directory: one SQLite database (WAL,
/// `synchronous=FULL`) and the receipt files. Writes are group-committed
/// on one connection; reads use a pool of their own.
final class ExpenseStore: Sendable {
    static let databaseName = "expense-server.db"

    let directory: String
    let receipts: ReceiptFiles
    private let writer: DatabaseQueue
    private let readers: ReaderPool
    let tokens = TokenCache()

    /// Opens (creating if needed) the store in `directory`.
    /// - Throws: ``SystemCallError`` for the directories, ``SQLiteError`` or
    ///   ``MigrationError`` for the database.
    init(directory: String) throws {
        self.directory = directory
        try FileSystem.makeDirectories(directory, mode: 0o700)
        receipts = try ReceiptFiles(dataDirectory: directory)
        let path = "\(directory)/\(Self.databaseName)"
        writer = try DatabaseQueue(path: path, label: "expense-server.db") { connection in
            try Schema.configure(connection)
            try connection.migrate(Schema.migrations)
        }
        readers = ReaderPool(path: path)
    }

    /// Runs `body` on a reader connection, on the calling thread.
    func read<T>(_ body: (Connection) throws -> T) throws -> T {
        try readers.read(body)
    }

    /// Runs `body` inside the next group commit and waits until it is on disk.
    /// A thrown error undoes `body`'s changes only.
    func write<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) throws -> T {
        try writer.writeAndWait(body)
    }
}

/// An expense row: the canonical expense and what only the server sees.
struct StoredExpense: Sendable {
    let rowID: Int64
    let userID: Int64
    var expense: CanonicalExpense
    var receipt: StoredReceipt?
}

/// The receipt file an expense points at.
struct StoredReceipt: Sendable, Equatable {
    /// A name under `receipts/`.
    let file: String
    let contentType: String
    /// SHA-256 of the bytes, hex.
    let sha256: String
    let size: Int64
}

extension ExpenseStore {
    static let columns = """
        id, user_id, transaction_id, client_id, merchant, amount, currency, date, category, comment, tax_tag, \
        receipt_file, receipt_type, receipt_sha256, receipt_size, assigned, version, created_at, updated_at, deleted, conflicts
        """

    /// The expense `transactionID` of `user`; `nil` when there is none (or it is another user's).
    static func load(_ db: Connection, transactionID: String, user: Int64) throws -> StoredExpense? {
        try db.queryFirst("SELECT \(columns) FROM expenses WHERE transaction_id = ? AND user_id = ?",
                          [.text(transactionID), .integer(user)], decode)
    }

    static func decode(_ row: Row) throws -> StoredExpense {
        let transactionID = row.string(2)
        var receipt: StoredReceipt?
        if let file = row.optionalString(11) {
            receipt = StoredReceipt(file: file, contentType: row.string(12), sha256: row.string(13), size: row.int64(14))
        }
        let conflicts = ConflictValues.decode(row.string(20))
        let expense = CanonicalExpense(
            transactionID: transactionID, clientID: row.string(3),
            fields: ExpenseFields(merchant: row.optionalString(4), amount: row.optionalString(5),
                                  currency: row.optionalString(6), date: row.optionalString(7),
                                  category: row.optionalString(8), comment: row.optionalString(9),
                                  taxTag: row.optionalString(10)),
            receiptURL: receipt == nil ? nil : receiptURL(transactionID),
            assigned: row.bool(15), version: row.int(16), createdAt: row.string(17), updatedAt: row.string(18),
            deleted: row.bool(19), conflict: !conflicts.isEmpty, conflicts: conflicts)
        return StoredExpense(rowID: row.int64(0), userID: row.int64(1), expense: expense, receipt: receipt)
    }

    /// Where a receipt's bytes are served (contract.md: clients treat it as opaque).
    static func receiptURL(_ transactionID: String) -> String {
        "/v1/expenses/\(transactionID)/receipt"
    }

    /// The next position in the change feed. Writers are serialized
    /// (`BEGIN IMMEDIATE`), so max + 1 is never handed out twice; the
    /// UNIQUE constraint on `change_seq` would refuse it if it were.
    static func nextChange(_ db: Connection) throws -> Int64 {
        try db.scalarInt("SELECT coalesce(max(change_seq), 0) + 1 FROM expenses") ?? 1
    }

    static func now() -> (milliseconds: Int64, text: String) {
        let ms = Clock.wallMilliseconds
        return (ms, Timestamp.format(milliseconds: ms))
    }
}
