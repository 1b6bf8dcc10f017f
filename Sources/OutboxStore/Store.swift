import DaemonSupport
import ExpenseCore
import Posix
import SQLite

/// The daemon's one SQLite database (`expensed.db` in the state directory):
/// the outbox of jobs and the cache of server expenses, plus the receipt
/// files beside it. Every write commits durably (WAL, `synchronous=FULL`)
/// before it returns.
public final class Store: Sendable {
    public let databasePath: String
    public let receipts: ReceiptDirectory
    /// A stable id of this install, sent with every create as `device_id`.
    public let deviceID: String
    let database: DatabaseQueue
    /// Each committed transition of an expense's state, for `watch`.
    public let changes = ChangeFeed()
    /// The limits an add is checked against, and the drain's headroom.
    let room: Room
    /// Whether receipts are read (`reading = on`): each upload queued is
    /// then also a reading to do (``pendingReadings(limit:)``).
    public let readsReceipts: Bool

    /// `PRAGMA application_id` of an expensed database ("EXPD").
    static let applicationID: Int64 = 0x4558_5044

    /// Opens (creating if needed) the store in `stateDirectory` and brings
    /// its schema up to date. Never deletes or rewrites a file it does not
    /// recognize: it refuses with a message saying what to do.
    /// - Parameters:
    ///   - room: the outbox's limits and the drain's headroom (none by
    ///     default); the headroom is set aside by ``establishHeadroom()``.
    ///   - readsReceipts: whether receipts are read (`reading = on`).
    public init(stateDirectory: String, room: RoomSettings = RoomSettings(), readsReceipts: Bool = false) throws(StoreError) {
        self.readsReceipts = readsReceipts
        do {
            try FileSystem.makeDirectories(stateDirectory, mode: 0o700)
        } catch {
            throw StoreError(.io, "Failed to create state directory '\(stateDirectory)': \(error.reason)")
        }
        let path = "\(stateDirectory)/expensed.db"
        databasePath = path
        self.room = Room(room, directory: stateDirectory)
        do {
            receipts = try ReceiptDirectory(path: "\(stateDirectory)/receipts")
        } catch {
            throw StoreError(.io, "Failed to create receipts directory: \(error)")
        }
        var device = ""
        do {
            database = try DatabaseQueue(path: path, label: "store") { db in
                try Store.prepare(db, path: path)
                device = try Store.loadDeviceID(db)
            }
        } catch let error as StoreError {
            throw error
        } catch let error as SQLiteError where error.isNotADatabase {
            throw StoreError(.notADatabase, "'\(path)' is not an SQLite database (\(error.message)). It was not modified. Move it aside to start with an empty queue, or point --state-dir elsewhere.")
        } catch let error as MigrationError {
            if case .newerSchema(let found, let known) = error {
                throw StoreError(.newerSchema, "'\(path)' has schema version \(found), newer than this expensed knows (\(known)). It was not modified. Run the newer expensed, or point --state-dir elsewhere.")
            }
            throw StoreError(.io, "Failed to migrate '\(path)': \(error)")
        } catch {
            throw StoreError(.io, "Failed to open database '\(path)': \(error)")
        }
        deviceID = device
    }

    private static func prepare(_ db: Connection, path: String) throws {
        db.setBusyTimeout(milliseconds: 5000)
        // Reading the header first: a file that is not a database fails
        // here, before anything could be written to it.
        let appID = try db.scalarInt("PRAGMA application_id") ?? 0
        let tables = try db.scalarInt("SELECT count(*) FROM sqlite_master") ?? 0
        if tables > 0 && appID != applicationID {
            throw StoreError(.notADatabase, "'\(path)' is an SQLite database of another program (application_id \(appID)). It was not modified. Point --state-dir elsewhere.")
        }
        // WAL with synchronous=FULL: a commit returns only after the WAL is
        // fsynced, so an acknowledged add survives power loss.
        try db.execute("PRAGMA journal_mode = WAL")
        try db.execute("PRAGMA synchronous = FULL")
        try db.execute("PRAGMA foreign_keys = ON")
        // Savepoints keep their undo data (the statement journal) in memory,
        // not in a temporary file: it only ever serves a rollback within a
        // live transaction, and answers are recorded a savepoint each.
        try db.execute("PRAGMA temp_store = MEMORY")
        // A drain rewrites the same index pages many times over; a larger
        // log (16 MiB) copies each back once per checkpoint, a quarter as often.
        try db.execute("PRAGMA wal_autocheckpoint = 4000")
        try db.migrate(Schema.migrations)
    }

    private static func loadDeviceID(_ db: Connection) throws -> String {
        try db.execute("INSERT OR IGNORE INTO settings (key, value) VALUES ('device_id', ?)", [.text(ClientID.make(milliseconds: Clock.wallMilliseconds))])
        return try db.queryFirst("SELECT value FROM settings WHERE key = 'device_id'") { $0.string(0) } ?? ""
    }

    /// Calls `answer` from the store's queue once it has finished the work
    /// before it: proof that the store is not wedged (the watchdog asks this).
    public func probe(_ answer: @escaping @Sendable () -> Void) {
        database.probe {
            FaultPoints.hit("store-probe")
            answer()
        }
    }

    /// Runs a read on the store's queue. For tests and tools that inspect the outbox.
    public func read<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await database.read(body)
    }
}
