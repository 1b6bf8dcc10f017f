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
