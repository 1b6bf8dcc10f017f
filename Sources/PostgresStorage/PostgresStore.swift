import ExpenseCore
import Posix
import Postgres
import ServerStorage

/// The server's storage in a PostgreSQL database, shared by any number of
/// server processes on any number of machines: expenses, idempotency
/// records, users and receipt bytes are all in the database, and every
/// rule of contract.md is decided there (UNIQUE constraints, row locks,
/// advisory locks). Each process keeps a pool of connections; uploads
/// are staged in a local folder while they arrive.
public final class PostgresStore: ExpenseStorage {
    public struct Options: Sendable {
        /// Connections of this process's pool.
        public var poolSize = 16
        /// Where uploads are staged; a private temporary folder when `nil`.
        public var stagingDirectory: String?

        public init() {}
    }

    public let staging: UploadStaging
    /// The staging folder this store made, and removes when it goes.
    private let privateStaging: String?
    let pool: ConnectionPool
    private let claims: ClaimLocks

    /// Session settings of every connection, unless the URL sets `options`:
    /// no statement runs forever, no transaction stays open forever.
    static let sessionDefaults = [
        ("connect_timeout", "10"), ("fallback_application_name", "expense-server"),
        ("keepalives_idle", "30"), ("keepalives_interval", "10"), ("keepalives_count", "3"),
        ("options", "-c statement_timeout=60000 -c idle_in_transaction_session_timeout=120000"),
    ]

    /// Connects to the database at `url` and brings its schema to this
    /// program's version.
    /// - Throws: ``PostgresError`` when the database cannot be reached,
    ///   ``MigrationError`` for a schema newer than this program knows,
    ///   ``SystemCallError`` for the staging folder.
    public init(url: String, options: Options = Options()) throws {
        if let directory = options.stagingDirectory {
            staging = try UploadStaging(directory: directory)
            privateStaging = nil
        } else {
            let base = Environment["TMPDIR"] ?? "/tmp"
            let directory = try FileSystem.makeTemporaryDirectory(in: base, prefix: "expense-server-uploads.")
            staging = try UploadStaging(directory: directory)
            privateStaging = directory
        }
        var poolOptions = ConnectionPool.Options()
        poolOptions.size = options.poolSize
        poolOptions.defaults = Self.sessionDefaults
        pool = ConnectionPool(url, options: poolOptions)
        claims = ClaimLocks(url: url, defaults: Self.sessionDefaults)
        try pool.withConnection { db in
            try db.migrate(PostgresSchema.migrations, lock: PostgresSchema.migrationLock)
        }
    }

    deinit {
        if let privateStaging {
            for name in (try? FileSystem.contents(of: privateStaging)) ?? [] {
                if let text = name.string { try? FileSystem.remove("\(privateStaging)/\(text)") }
            }
            try? FileSystem.removeDirectory(privateStaging)
        }
    }

    /// The schema version of the database and this program's.
    public func schemaVersions() throws -> (database: Int, known: Int) {
        (try read { try $0.schemaVersion() }, PostgresSchema.version)
    }

    /// Runs `body` on a pooled connection, outside a transaction: each
    /// statement sees the latest committed data.
    func read<T>(_ body: (Connection) throws -> T) throws -> T {
        do { return try pool.withConnection(body) } catch { throw Self.storageError(error) }
    }

    /// Runs `body` in a transaction on a pooled connection. It runs again,
    /// up to twice more, when the transaction was rolled back by a
    /// deadlock or when the connection was lost before `COMMIT` was sent
    /// (nothing of it was stored then; a connection that broke while it sat
    /// in the pool is the usual case after a restart of the server).
    func write<T>(_ body: (PostgresWriter) throws -> T) throws -> T {
        var attempt = 1
        while true {
            do {
                return try pool.withConnection { db in try db.transaction { try body(PostgresWriter(db: db)) } }
            } catch let error as PostgresError where attempt < 3 && (error.isTransient || (error.isConnectionLost && !error.isOutcomeUnknown)) {
                attempt += 1
            } catch {
                throw Self.storageError(error)
            }
        }
    }

    /// A database that cannot serve now (unreachable, restarting, out of
    /// connections, this pool busy) is worth a retry later; anything else
    /// is a failure.
    static func storageError(_ error: Error) -> Error {
        switch error {
        case is StorageError: return error
        case let postgres as PostgresError where postgres.isUnavailable:
            return StorageError(.unavailable, "the database is unavailable", cause: postgres)
        case is SystemCallError: return StorageError(.unavailable, "the staging folder failed", cause: error)
        default: return StorageError(.failed, "the database failed", cause: error)
        }
    }

    // MARK: In progress

    public func claim(user: Int64, key: String) throws -> Bool {
        do { return try claims.claim(user: user, key: key) } catch { throw Self.storageError(error) }
    }

    public func release(user: Int64, key: String) {
        claims.release(user: user, key: key)
    }

    // MARK: Upkeep

    public func purgeIdempotencyRecords(retentionMilliseconds: Int64) throws -> Int {
        let cutoff = ExpenseRules.now().milliseconds - retentionMilliseconds
        return try write { try $0.db.execute("DELETE FROM idempotency_keys WHERE created_at_ms < $1", [.integer(cutoff)]) }
    }

    /// Uploads a crash left in the staging folder. Receipt bytes in the
    /// database are written and removed with the rows that point at them:
    /// none can be left over.
    public func removeLeftovers(graceNanoseconds: Int64, now: Int64) throws -> [String] {
        do { return try staging.sweep(graceNanoseconds: graceNanoseconds, now: now) } catch { throw Self.storageError(error) }
    }
}
