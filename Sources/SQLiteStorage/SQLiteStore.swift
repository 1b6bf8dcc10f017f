import ExpenseCore
import Posix
import ServerStorage
import SQLite

/// The server's storage in its data directory: one SQLite database (WAL,
/// `synchronous=FULL`) and the receipt files. Writes are group-committed
/// on one connection, so they are serialized; reads use a pool of their
/// own. Several processes may share the file (SQLite's locks and the
/// UNIQUE constraints keep it right), but "in progress" is known only to
/// the process that holds it: the PostgreSQL engine is the one for many.
public final class SQLiteStore: ExpenseStorage {
    public static let databaseName = "expense-server.db"

    public let directory: String
    public let databasePath: String
    public let staging: UploadStaging
    let receipts: ReceiptFiles
    private let writer: DatabaseQueue
    private let readers: ReaderPool
    private let inFlight = InFlightKeys()

    /// Opens (creating if needed) the store in `directory`, with its
    /// database at `databasePath` (default `directory/expense-server.db`).
    /// - Throws: ``SystemCallError`` for the directories, ``SQLiteError`` or
    ///   ``MigrationError`` for the database.
    public init(directory: String, databasePath: String? = nil) throws {
        self.directory = directory
        try FileSystem.makeDirectories(directory, mode: 0o700)
        receipts = try ReceiptFiles(directory: "\(directory)/receipts")
        staging = try UploadStaging(directory: "\(directory)/tmp")
        let path = databasePath ?? "\(directory)/\(Self.databaseName)"
        self.databasePath = path
        writer = try DatabaseQueue(path: path, label: "expense-server.db") { connection in
            try Schema.configure(connection)
            try connection.migrate(Schema.migrations)
        }
        readers = ReaderPool(path: path)
    }

    /// Runs `body` on a reader connection, on the calling thread.
    func read<T>(_ body: (Connection) throws -> T) throws -> T {
        do { return try readers.read(body) } catch { throw Self.storageError(error) }
    }

    /// Runs `body` inside the next group commit and waits until it is on disk.
    /// A thrown error undoes `body`'s changes only.
    func write<T: Sendable>(_ body: @escaping @Sendable (SQLiteWriter) throws -> T) throws -> T {
        do { return try writer.writeAndWait { try body(SQLiteWriter(db: $0)) } } catch { throw Self.storageError(error) }
    }

    /// SQLite being busy, or the disk full or failing, is worth a retry
    /// later; anything else is a failure.
    static func storageError(_ error: Error) -> Error {
        switch error {
        case is StorageError: return error
        case let sqlite as SQLiteError where sqlite.isBusy || sqlite.isIOFailure:
            return StorageError(.unavailable, "the database is busy or failing", cause: sqlite)
        case is SystemCallError: return StorageError(.unavailable, "the data directory failed", cause: error)
        default: return StorageError(.failed, "the database failed", cause: error)
        }
    }

    // MARK: In progress

    public func claim(user: Int64, key: String) throws -> Bool { inFlight.claim(user: user, key: key) }

    public func release(user: Int64, key: String) { inFlight.release(user: user, key: key) }

    // MARK: Upkeep

    public func schemaVersions() throws -> (database: Int, known: Int) {
        (try read { try $0.schemaVersion() }, Schema.migrations.map(\.version).max() ?? 0)
    }

    public func purgeIdempotencyRecords(retentionMilliseconds: Int64) throws -> Int {
        let cutoff = ExpenseRules.now().milliseconds - retentionMilliseconds
        return try write { db in
            try db.db.execute("DELETE FROM idempotency_keys WHERE created_at_ms < ?", [.integer(cutoff)])
            return db.db.changes
        }
    }

    /// Uploads in `tmp/`, and files in `receipts/` that no row names.
    public func removeLeftovers(graceNanoseconds: Int64, now: Int64) throws -> [String] {
        do {
            let referenced = try referencedReceiptFiles()
            return try staging.sweep(graceNanoseconds: graceNanoseconds, now: now)
                + receipts.sweep(referenced: referenced, graceNanoseconds: graceNanoseconds, now: now)
        } catch {
            throw Self.storageError(error)
        }
    }
}

extension Row: StorageRow {}
