internal import CPQ
#if canImport(Glibc)
import Glibc
#endif

/// One connection to a PostgreSQL server. Not `Sendable`: a connection is
/// used by one thread at a time (a ``ConnectionPool`` lends it out).
///
/// Statements with values are prepared once per connection (per SQL text
/// and parameter types) and run with `PQexecPrepared`; results come back
/// in binary.
public final class Connection {
    let handle: OpaquePointer
    /// Statement names by SQL text and parameter types.
    private var prepared: [String: String] = [:]
    /// Prepared statements kept at most; past it they are all deallocated.
    private let preparedLimit = 256

    /// Connects. `conninfo` is a `postgresql://` URL or `key=value` pairs;
    /// `defaults` are keywords it may override (`connect_timeout`, say).
    /// Wraps `PQconnectdbParams`.
    /// - Throws: ``PostgresError`` of kind ``PostgresError/Kind/connection``.
    public init(_ conninfo: String, defaults: [(String, String)] = []) throws(PostgresError) {
        // Later keywords win: the defaults come first, then the caller's string.
        let pairs = defaults + [("dbname", conninfo)]
        let keywords = pairs.map { strdup($0.0) }
        let values = pairs.map { strdup($0.1) }
        defer { (keywords + values).forEach { free($0) } }
        let connection = (keywords.map { UnsafePointer($0) } + [nil]).withUnsafeBufferPointer { k in
            (values.map { UnsafePointer($0) } + [nil]).withUnsafeBufferPointer { v in
                PQconnectdbParams(k.baseAddress, v.baseAddress, 1)
            }
        }
        guard let connection else { throw PostgresError(.connection, message: "out of memory") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.message(PQerrorMessage(connection))
            PQfinish(connection)
            throw PostgresError(.connection, message: message)
        }
        handle = connection
        // libpq prints notices to stderr unless told otherwise; a library
        // does not log ("relation already exists, skipping" and the like).
        PQsetNoticeReceiver(connection, { _, _ in }, nil)
    }

    deinit { PQfinish(handle) }

    /// The database connected to (`PQdb`).
    public var databaseName: String { String(cString: PQdb(handle)) }

    /// The server's version as a number, 150018 for 15.18 (`PQserverVersion`).
    public var serverVersion: Int { Int(PQserverVersion(handle)) }

    /// False once the connection is broken, also when the server closed it
    /// while it sat idle (a restart, `pg_terminate_backend`). An idle
    /// connection of ours has nothing to say: it listens to no channel and
    /// sends no query, so a readable socket means the server spoke first,
    /// which it does only to say goodbye (the FATAL "terminating
    /// connection" it flushes before it exits, then the end of the
    /// connection). Such a connection is unusable as soon as that message
    /// is readable, even while its end is still on the way. Wraps
    /// `PQstatus` and `poll` on `PQsocket`.
    public var isUsable: Bool {
        guard PQstatus(handle) == CONNECTION_OK else { return false }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) == 0
    }

    /// True while a transaction is open (`PQtransactionStatus`).
    public var isInTransaction: Bool {
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    /// Runs one or more statements without values, with the simple query
    /// protocol (migrations, `BEGIN`). Wraps `PQexec`.
    public func execute(_ sql: String) throws(PostgresError) {
        _ = try check(PQexec(handle, sql), sql: sql)
    }

    /// Runs one statement with bound values.
    /// - Returns: the rows it changed.
    @discardableResult
    public func execute(_ sql: String, _ values: [PostgresValue]) throws(PostgresError) -> Int {
        try run(sql, values).changes
    }

    /// Rows of a query, each decoded by `row`.
    public func query<T>(_ sql: String, _ values: [PostgresValue] = [], _ row: (Row) throws -> T) throws -> [T] {
        let result = try run(sql, values)
        return try (0..<Int32(result.rowCount)).map { try row(Row(result: result, index: $0)) }
    }

    /// The first row of a query, decoded by `row`, or `nil`.
    public func queryFirst<T>(_ sql: String, _ values: [PostgresValue] = [], _ row: (Row) throws -> T) throws -> T? {
        let result = try run(sql, values)
        return result.rowCount > 0 ? try row(Row(result: result, index: 0)) : nil
    }

    /// The single integer a query returns; `nil` when it returns no row or NULL.
    public func scalarInt(_ sql: String, _ values: [PostgresValue] = []) throws(PostgresError) -> Int64? {
        let result = try run(sql, values)
        guard result.rowCount > 0 else { return nil }
        let row = Row(result: result, index: 0)
        return row.isNull(0) ? nil : row.int64(0)
    }

    /// Hands the rows of a query to `row` one at a time, as they arrive,
    /// so a result larger than memory can be read (a receipt's chunks).
    /// Wraps `PQsendQueryPrepared`, `PQsetSingleRowMode` and `PQgetResult`.
    /// - Throws: the server's error, or the first error `row` threw (the
    ///   remaining rows are read and dropped, so the connection stays usable).
    public func stream(_ sql: String, _ values: [PostgresValue] = [], _ row: (Row) throws -> Void) throws {
        let parameters = try Parameters(values)
        let name = try statement(for: sql, parameters)
        let sent = parameters.withPointers { pointers, lengths, formats in
            PQsendQueryPrepared(handle, name, Int32(values.count), pointers, lengths, formats, 1)
        }
        guard sent == 1 else { throw connectionError(sql: sql) }
        var failure: Error?
        if PQsetSingleRowMode(handle) != 1 {
            failure = PostgresError(.client, message: "single-row mode could not be set", sql: sql)
        }
        while let next = PQgetResult(handle) {
            let result = QueryResult(next)
            guard failure == nil else { continue }
            switch PQresultStatus(next) {
            case PGRES_SINGLE_TUPLE, PGRES_TUPLES_OK, PGRES_COMMAND_OK:
                // One row per result in single-row mode; the last result has none.
                do {
                    for index in 0..<Int32(result.rowCount) { try row(Row(result: result, index: index)) }
                } catch {
                    failure = error
                }
            default:
                failure = error(from: next, sql: sql)
            }
        }
        if let failure { throw failure }
    }

    /// Runs `body` inside `BEGIN … COMMIT`, rolling back when it throws.
    /// - Throws: `body`'s error; the error of `COMMIT`, marked
    ///   ``PostgresError/isOutcomeUnknown`` when the connection was lost
    ///   on the way; or an error when `COMMIT` found the transaction
    ///   aborted by an earlier statement whose error was caught (the server
    ///   then rolls back and says only `ROLLBACK`).
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let value = try body()
            let commit: QueryResult
            do {
                commit = try check(PQexec(handle, "COMMIT"), sql: "COMMIT")
            } catch {
                throw error.duringCommit()
            }
            guard String(cString: PQcmdStatus(commit.handle)) == "COMMIT" else {
                throw PostgresError(.client, message: "the transaction was rolled back: a statement in it had failed", sql: "COMMIT")
            }
            return value
        } catch {
            if isInTransaction { try? execute("ROLLBACK") }
            throw error
        }
    }

    // MARK: Running statements

    private func run(_ sql: String, _ values: [PostgresValue]) throws(PostgresError) -> QueryResult {
        let parameters = try Parameters(values)
        let name = try statement(for: sql, parameters)
        let result = parameters.withPointers { pointers, lengths, formats in
            PQexecPrepared(handle, name, Int32(values.count), pointers, lengths, formats, 1)
        }
        return try check(result, sql: sql)
    }

    /// The name of the prepared statement for `sql` with these parameter
    /// types, preparing it the first time. Wraps `PQprepare`.
    private func statement(for sql: String, _ parameters: Parameters) throws(PostgresError) -> String {
        let key = parameters.signature + "|" + sql
        if let name = prepared[key] { return name }
        if prepared.count >= preparedLimit {
            try execute("DEALLOCATE ALL")
            prepared = [:]
        }
        let name = "s\(prepared.count + 1)"
        let result = PQprepare(handle, name, sql, Int32(parameters.types.count), parameters.types)
        _ = try check(result, sql: sql)
        prepared[key] = name
        return name
    }

    private func check(_ result: OpaquePointer?, sql: String?) throws(PostgresError) -> QueryResult {
        guard let result else { throw connectionError(sql: sql) }
        let owned = QueryResult(result)
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_SINGLE_TUPLE, PGRES_EMPTY_QUERY:
            return owned
        default:
            throw error(from: result, sql: sql)
        }
    }

    /// The error a failed result carries. Messages of SQLSTATE class 22
    /// (data exceptions) quote the value that failed and are left out.
    private func error(from result: OpaquePointer, sql: String?) -> PostgresError {
        if isLost { return connectionError(sql: sql) }
        guard let state = PQresultErrorField(result, cpq_diag_sqlstate()).map({ String(cString: $0) }) else {
            return PostgresError(.client, message: Self.message(PQresultErrorMessage(result)), sql: sql)
        }
        var message = PQresultErrorField(result, cpq_diag_message_primary()).map { String(cString: $0) } ?? "no message"
        if state.hasPrefix("22") { message = "a value does not fit its column or parameter (data exception)" }
        return PostgresError(.server, sqlState: state, message: message, sql: sql)
    }

    private func connectionError(sql: String?) -> PostgresError {
        let kind: PostgresError.Kind = isLost ? .connection : .client
        return PostgresError(kind, message: Self.message(PQerrorMessage(handle)), sql: sql)
    }

    /// Whether the server is gone, asked after a statement failed.
    /// `PQstatus` alone can still say `CONNECTION_OK` then: a write that
    /// failed because the server went away is reported as "server closed
    /// the connection unexpectedly", without a SQLSTATE, when what libpq
    /// read meanwhile was not yet the end of the connection (the notice
    /// a server stopped at once sends as it exits). Reading what is
    /// pending (`PQconsumeInput`, which never blocks) reaches that end,
    /// and libpq marks the connection bad.
    private var isLost: Bool {
        if PQstatus(handle) == CONNECTION_BAD { return true }
        _ = PQconsumeInput(handle)
        return PQstatus(handle) == CONNECTION_BAD
    }

    /// libpq's message text on one line.
    private static func message(_ text: UnsafePointer<CChar>?) -> String {
        let lines = (text.map { String(cString: $0) } ?? "").split(whereSeparator: \.isNewline)
        return lines.isEmpty ? "unknown error" : lines.map { $0.trimmingCharacters(in: " \t") }.joined(separator: "; ")
    }
}

@available(*, unavailable)
extension Connection: Sendable {}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> Substring {
        var s = self
        while let c = s.first, set.contains(c) { s.removeFirst() }
        while let c = s.last, set.contains(c) { s.removeLast() }
        return s
    }
}
