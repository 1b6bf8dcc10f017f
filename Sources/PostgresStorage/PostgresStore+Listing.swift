import Postgres
import ServerStorage

extension PostgresStore {
    static let joinedColumns = ExpenseColumns.qualified(receiptLocator: "CAST(e.receipt_id AS text)")

    public func expensePage(_ filter: ExpenseFilter, sort: ExpenseSort, offset: Int, limit: Int) throws -> [ListedExpense] {
        let query = ExpenseQuery.rows(filter, sort: sort, columns: Self.joinedColumns, offset: offset, limit: limit) { "$\($0)" }
        return try read { db in try db.query(query.sql, Self.values(query)) { Self.listed($0) } }
    }

    public func totals(_ filter: ExpenseFilter) throws -> [CurrencyTotal] {
        let query = ExpenseQuery.totals(filter) { "$\($0)" }
        return try read { db in
            try db.query(query.sql, Self.values(query)) { CurrencyTotal(currency: $0.string(0), count: $0.int(1), minorUnits: $0.int64(2)) }
        }
    }

    /// Single-row mode: libpq hands over each row as it arrives.
    public func forEachExpense(_ filter: ExpenseFilter, _ row: (ListedExpense) throws -> Void) throws {
        let query = ExpenseQuery.rows(filter, sort: .dateAscending, columns: Self.joinedColumns) { "$\($0)" }
        try read { db in try db.stream(query.sql, Self.values(query)) { try row(Self.listed($0)) } }
    }

    public func anyExpense(_ transactionID: String) throws -> ListedExpense? {
        try read { db in
            try db.queryFirst("SELECT \(Self.joinedColumns), u.name FROM expenses e JOIN users u ON u.id = e.user_id WHERE e.transaction_id = $1",
                              [.text(transactionID)]) { Self.listed($0) }
        }
    }

    private static func listed(_ row: Row) -> ListedExpense {
        ListedExpense(stored: ExpenseColumns.decode(row), userName: row.string(ExpenseColumns.count))
    }

    private static func values(_ query: ExpenseQuery) -> [PostgresValue] {
        query.values.map { value in
            switch value {
            case .integer(let v): .integer(v)
            case .text(let v): .text(v)
            case .bool(let v): .bool(v)
            }
        }
    }
}

extension PostgresStore {
    public func versions(ofRow rowID: Int64) throws -> [ExpenseVersion] {
        try read { db in
            try db.query("SELECT \(ExpenseVersion.columns) FROM expense_versions WHERE expense_id = $1 ORDER BY version DESC",
                         [.integer(rowID)]) { ExpenseVersion(row: $0) }
        }
    }

    // MARK: Sessions

    public func insertSession(_ session: NewSession) throws {
        _ = try write { writer in
            try writer.db.execute("INSERT INTO sessions (id_hash, user_id, token_hash, csrf, expires_at_ms) VALUES ($1, $2, $3, $4, $5)",
                                  [.text(session.idHash), .integer(session.user), .text(session.tokenHash), .text(session.csrf),
                                   .integer(session.expiresAtMilliseconds)])
        }
    }

    public func session(idHash: String, nowMilliseconds: Int64) throws -> ActiveSession? {
        try read { db in
            try db.queryFirst("""
                SELECT u.id, u.name, u.is_admin, s.csrf, s.expires_at_ms FROM sessions s JOIN users u ON u.id = s.user_id
                WHERE s.id_hash = $1 AND s.expires_at_ms > $2 AND u.token_hash = s.token_hash AND u.state = 'active'
                """, [.text(idHash), .integer(nowMilliseconds)]) {
                ActiveSession(account: Account(id: $0.int64(0), name: $0.string(1), isAdmin: $0.bool(2)), csrf: $0.string(3),
                              expiresAtMilliseconds: $0.int64(4))
            }
        }
    }

    public func deleteSession(idHash: String) throws {
        _ = try write { writer in try writer.db.execute("DELETE FROM sessions WHERE id_hash = $1", [.text(idHash)]) }
    }

    public func purgeSessions(nowMilliseconds: Int64) throws -> Int {
        try write { writer in try writer.db.execute("DELETE FROM sessions WHERE expires_at_ms <= $1", [.integer(nowMilliseconds)]) }
    }
}
