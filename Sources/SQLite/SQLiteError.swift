internal import CSQLite

/// An error from SQLite: its result code, its message, and the SQL that
/// failed. Bound values are never part of it (they may be personal data).
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The extended result code (`sqlite3_extended_errcode`).
    public let code: Int32
    public let message: String
    public let sql: String?

    public init(code: Int32, message: String, sql: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
    }

    /// The primary result code (low byte of the extended one).
    public var primaryCode: Int32 { code & 0xFF }

    public var isUniqueConstraint: Bool { code == SQLITE_CONSTRAINT | (8 << 8) || code == SQLITE_CONSTRAINT | (6 << 8) }
    public var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }
    /// The file is not a database, or is damaged (`SQLITE_NOTADB`, `SQLITE_CORRUPT`).
    public var isNotADatabase: Bool { primaryCode == SQLITE_NOTADB || primaryCode == SQLITE_CORRUPT }
    /// The disk is full (`SQLITE_FULL`) or failed (`SQLITE_IOERR`).
    public var isIOFailure: Bool { primaryCode == SQLITE_FULL || primaryCode == SQLITE_IOERR }
    /// The file system had no room for the write (`SQLITE_FULL`: SQLite's
    /// unix VFS reports `ENOSPC` on the database or its WAL so).
    public var isDiskFull: Bool { primaryCode == SQLITE_FULL }

    public var description: String {
        var text = "SQLite error \(code): \(message)"
        if let sql { text += " (in \(sql.prefix(200)))" }
        return text
    }
}
