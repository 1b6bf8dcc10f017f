internal import CSQLite

/// One SQLite connection. Not `Sendable`: a connection belongs to one
/// thread (a ``DatabaseQueue`` owns it and runs everything on its queue).
public final class Connection {
    let handle: OpaquePointer
    public let path: String
    /// Compiled statements by SQL text: the store runs the same few
    /// statements on every add, and compiling costs more than running them.
    private var cache: [String: Statement] = [:]

    /// Opens (or creates, unless `readOnly`) the database at `path`.
    /// Wraps `sqlite3_open_v2`.
    public init(path: String, readOnly: Bool = false, create: Bool = true) throws(SQLiteError) {
        var db: OpaquePointer?
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        flags |= readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0))
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: rc, message: message)
        }
        handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
        // Defensive mode: SQL cannot corrupt the file through writable_schema & co.
        var ignored: Int32 = 0
        _ = csqlite_db_config_int(db, SQLITE_DBCONFIG_DEFENSIVE, 1, &ignored)
    }

    deinit {
        cache.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that return no rows. Wraps `sqlite3_exec`.
    public func execute(_ sql: String) throws(SQLiteError) {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        if rc != SQLITE_OK {
            let message = errorMessage.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(errorMessage)
            throw SQLiteError(code: sqlite3_extended_errcode(handle), message: message, sql: sql)
        }
    }

    /// Runs one statement with bound values, for writes.
    public func execute(_ sql: String, _ values: [SQLValue]) throws(SQLiteError) {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        while try statement.step() {}
    }

    /// A compiled statement for `sql`, compiled once per connection.
    /// Callers reset it when done (an unreset statement holds a read snapshot).
    func cachedStatement(_ sql: String) throws(SQLiteError) -> Statement {
        if let statement = cache[sql] { return statement }
        let statement = try prepare(sql)
        cache[sql] = statement
        return statement
    }

    /// Compiles `sql`. Wraps `sqlite3_prepare_v2`.
    public func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        try Statement(connection: self, sql: sql)
    }

    /// Rows of a query, each decoded by `row`.
    public func query<T>(_ sql: String, _ values: [SQLValue] = [], _ row: (Row) throws -> T) throws -> [T] {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        var result: [T] = []
        while try statement.step() {
            result.append(try row(Row(statement: statement)))
        }
        return result
    }

    /// The first row of a query, decoded by `row`, or `nil`.
    public func queryFirst<T>(_ sql: String, _ values: [SQLValue] = [], _ row: (Row) throws -> T) throws -> T? {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        return try statement.step() ? try row(Row(statement: statement)) : nil
    }

    /// The single integer a query returns, or `nil` when it returns no row.
    public func scalarInt(_ sql: String, _ values: [SQLValue] = []) throws(SQLiteError) -> Int64? {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        return try statement.step() ? statement.int64(0) : nil
    }

    /// Rows changed by the last statement (`sqlite3_changes64`).
    public var changes: Int { Int(sqlite3_changes64(handle)) }

    /// True while a transaction is open (`sqlite3_get_autocommit` is 0).
    /// SQLite rolls a whole transaction back by itself on some errors
    /// (`SQLITE_FULL`, `SQLITE_IOERR`, `SQLITE_NOMEM`): this tells.
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Runs `body` inside `BEGIN IMMEDIATE … COMMIT`, rolling back when it throws.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE", [])
        do {
            let result = try body()
            try execute("COMMIT", [])
            return result
        } catch {
            try? execute("ROLLBACK", [])
            throw error
        }
    }

    /// Runs `body` inside a savepoint, undoing only its own changes when it throws.
    public func savepoint<T>(_ body: () throws -> T) throws -> T {
        try execute("SAVEPOINT item", [])
        do {
            let result = try body()
            try execute("RELEASE item", [])
            return result
        } catch {
            try? execute("ROLLBACK TO item", [])
            try? execute("RELEASE item", [])
            throw error
        }
    }

    /// Sets the busy timeout (`sqlite3_busy_timeout`).
    public func setBusyTimeout(milliseconds: Int32) {
        sqlite3_busy_timeout(handle, milliseconds)
    }

    func lastError(sql: String?) -> SQLiteError {
        SQLiteError(code: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }
}

@available(*, unavailable)
extension Connection: Sendable {}

extension Connection {
    /// Copies this whole database into `destination` (replacing what it
    /// holds) in one step of SQLite's online backup API, under one read
    /// transaction: a consistent snapshot, taken while writers go on (WAL).
    /// A lock it must wait for is waited for by the busy timeout.
    /// Wraps `sqlite3_backup_init`, `sqlite3_backup_step` and `sqlite3_backup_finish`.
    public func backup(into destination: Connection) throws(SQLiteError) {
        guard let backup = sqlite3_backup_init(destination.handle, "main", handle, "main") else {
            throw destination.lastError(sql: nil)
        }
        let step = sqlite3_backup_step(backup, -1)
        let finish = sqlite3_backup_finish(backup)
        let rc = step == SQLITE_DONE ? finish : step
        guard rc == SQLITE_OK else { throw SQLiteError(code: rc, message: String(cString: sqlite3_errstr(rc))) }
    }
}

extension Connection {
    /// Hands the rows of a query to `row` one at a time, as SQLite steps
    /// to them: nothing is collected, so a result of any size is read in
    /// constant memory.
    public func forEach(_ sql: String, _ values: [SQLValue] = [], _ row: (Row) throws -> Void) throws {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        while try statement.step() {
            try row(Row(statement: statement))
        }
    }
}
