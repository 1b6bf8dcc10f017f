/// An error from libpq or the PostgreSQL server: its SQLSTATE, its message,
/// and the SQL that failed. Bound values are never part of it (they may be
/// personal data): the server's DETAIL field, which repeats them, is not
/// read, and the messages of data exceptions (SQLSTATE class 22, which
/// quote the offending input) are replaced by their code.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// Where the error came from.
    public enum Kind: Sendable, Equatable {
        /// The server refused a statement; ``sqlState`` says why.
        case server
        /// No connection could be made, or the one in use was lost
        /// (`PQstatus` is `CONNECTION_BAD`).
        case connection
        /// Every connection of a ``ConnectionPool`` stayed busy for its whole wait.
        case busy
        /// The request never left this process (a value PostgreSQL cannot hold).
        case client
    }

    public let kind: Kind
    /// The five-character SQLSTATE the server sent, for ``Kind/server``.
    public let sqlState: String?
    public let message: String
    public let sql: String?
    /// The connection was lost while `COMMIT` was on its way: the
    /// transaction may or may not have committed.
    public let isOutcomeUnknown: Bool

    public init(_ kind: Kind, sqlState: String? = nil, message: String, sql: String? = nil, isOutcomeUnknown: Bool = false) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.sql = sql
        self.isOutcomeUnknown = isOutcomeUnknown
    }

    /// The connection cannot be used any more.
    public var isConnectionLost: Bool { kind == .connection }

    /// `23505 unique_violation`.
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// `40001 serialization_failure` or `40P01 deadlock_detected`: the
    /// transaction was rolled back and may simply be run again.
    public var isTransient: Bool { sqlState == "40001" || sqlState == "40P01" }

    /// The database cannot serve right now: the connection failed or was
    /// lost, the pool is busy, or the server is starting, stopping or out of
    /// resources (classes 08 and 53, and `57P01`–`57P03`). Worth retrying later.
    public var isUnavailable: Bool {
        if kind == .connection || kind == .busy { return true }
        guard let sqlState else { return false }
        return sqlState.hasPrefix("08") || sqlState.hasPrefix("53") || ["57P01", "57P02", "57P03"].contains(sqlState)
    }

    /// The same error, marked as lost during `COMMIT`.
    func duringCommit() -> PostgresError {
        PostgresError(kind, sqlState: sqlState, message: message, sql: sql, isOutcomeUnknown: isConnectionLost)
    }

    public var description: String {
        var text = "PostgreSQL error"
        if let sqlState { text += " \(sqlState)" }
        text += ": \(message)"
        if let sql { text += " (in \(sql.prefix(200)))" }
        return text
    }
}
