internal import CSQLite

/// A value bound to a statement parameter or read from a column.
public enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// `.text` for a string, `.null` for `nil`.
    public static func text(_ value: String?) -> SQLValue { value.map(SQLValue.text) ?? .null }
    /// `.integer` for a number, `.null` for `nil`.
    public static func integer(_ value: Int?) -> SQLValue { value.map { .integer(Int64($0)) } ?? .null }
    public static func bool(_ value: Bool) -> SQLValue { .integer(value ? 1 : 0) }
}

/// A compiled statement: prepared in `init`, finalized in `deinit`.
public final class Statement {
    let handle: OpaquePointer
    let sql: String
    /// The connection's handle, for error messages. Not the Connection
    /// itself: it caches statements, and the two would keep each other alive.
    /// (`sqlite3_close_v2` waits for the last statement to be finalized.)
    let database: OpaquePointer

    init(connection: Connection, sql: String) throws(SQLiteError) {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v2(connection.handle, sql, -1, &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw connection.lastError(sql: sql) }
        self.handle = statement
        self.sql = sql
        self.database = connection.handle
    }

    private func lastError() -> SQLiteError {
        SQLiteError(code: sqlite3_extended_errcode(database), message: String(cString: sqlite3_errmsg(database)), sql: sql)
    }

    deinit { sqlite3_finalize(handle) }

    /// Binds `values` to parameters 1…n, after resetting. Wraps `sqlite3_bind_*`.
    public func bind(_ values: [SQLValue]) throws(SQLiteError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(handle, index)
            case .integer(let v): rc = sqlite3_bind_int64(handle, index, v)
            case .real(let v): rc = sqlite3_bind_double(handle, index, v)
            case .text(let v):
                // Explicit length: a NUL inside the string is data, not its end.
                var text = v
                rc = text.withUTF8 { utf8 in
                    utf8.withMemoryRebound(to: CChar.self) {
                        sqlite3_bind_text64(handle, index, $0.baseAddress, sqlite3_uint64($0.count), csqlite_transient(), UInt8(SQLITE_UTF8))
                    }
                }
            case .blob(let v):
                rc = v.withUnsafeBytes { sqlite3_bind_blob64(handle, index, $0.baseAddress, sqlite3_uint64($0.count), csqlite_transient()) }
            }
            guard rc == SQLITE_OK else { throw lastError() }
        }
    }

    /// Ends the current run: releases its read snapshot and locks. Wraps `sqlite3_reset`.
    func reset() {
        sqlite3_reset(handle)
    }

    /// Advances to the next row. Wraps `sqlite3_step`.
    /// - Returns: `true` when a row is available, `false` when done.
    public func step() throws(SQLiteError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = lastError()
            sqlite3_reset(handle)
            throw error
        }
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }
    func text(_ column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(handle, column) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: count), as: UTF8.self)
    }
    func blob(_ column: Int32) -> [UInt8]? {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard let pointer = sqlite3_column_blob(handle, column) else { return isNull(column) ? nil : [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}

@available(*, unavailable)
extension Statement: Sendable {}

/// The current row of a statement; valid only inside the closure that receives it.
public struct Row {
    let statement: Statement

    public func isNull(_ column: Int) -> Bool { statement.isNull(Int32(column)) }
    public func int(_ column: Int) -> Int { Int(statement.int64(Int32(column))) }
    public func int64(_ column: Int) -> Int64 { statement.int64(Int32(column)) }
    public func optionalInt64(_ column: Int) -> Int64? { isNull(column) ? nil : int64(column) }
    public func bool(_ column: Int) -> Bool { statement.int64(Int32(column)) != 0 }
    public func double(_ column: Int) -> Double { statement.double(Int32(column)) }
    /// The text of a column; "" for NULL. Use ``optionalString(_:)`` where NULL matters.
    public func string(_ column: Int) -> String { statement.text(Int32(column)) ?? "" }
    public func optionalString(_ column: Int) -> String? { isNull(column) ? nil : statement.text(Int32(column)) }
    public func blob(_ column: Int) -> [UInt8]? { statement.blob(Int32(column)) }
}
