import ExpenseCore

/// Which expenses a listing or an export is about: the web interface's
/// filters and `expense-server export`'s options, written once as SQL both
/// engines run (only the placeholders differ).
public struct ExpenseFilter: Sendable, Equatable {
    /// One user's expenses; every user's when `nil` (an admin's view, an export).
    public var user: Int64?
    /// Dates from `since` to `until`, both included (`YYYY-MM-DD`).
    public var since: String?
    public var until: String?
    /// Text the merchant contains, ignoring ASCII case.
    public var merchant: String?
    /// The category, exactly.
    public var category: String?
    /// Deleted expenses are left out unless `state` is ``ExpenseState/deleted``.
    public var state: ExpenseState?

    public init(user: Int64? = nil, since: String? = nil, until: String? = nil, merchant: String? = nil,
                category: String? = nil, state: ExpenseState? = nil) {
        self.user = user
        self.since = since
        self.until = until
        self.merchant = merchant
        self.category = category
        self.state = state
    }
}

/// The states the web list filters on.
public enum ExpenseState: String, Sendable, CaseIterable {
    case hasReceipt = "receipt"
    case missingReceipt = "no-receipt"
    case conflict
    case deleted
}

/// The orders of the web list; each ends with the row id, so a page is stable.
public enum ExpenseSort: String, Sendable, CaseIterable {
    case dateDescending = "date-desc"
    case dateAscending = "date"
    case merchant
    case updatedDescending = "updated-desc"

    /// SQLite's natural null order written out, so both engines agree
    /// (and SQLite walks its `(user_id, date, id)` index).
    var orderBy: String {
        switch self {
        case .dateDescending: "date DESC NULLS LAST, id DESC"
        case .dateAscending: "date ASC NULLS FIRST, id ASC"
        case .merchant: "merchant ASC NULLS FIRST, id ASC"
        case .updatedDescending: "updated_at DESC, id DESC"
        }
    }
}

/// A value bound to a query's placeholder.
public enum QueryValue: Sendable, Equatable {
    case integer(Int64)
    case text(String)
    case bool(Bool)
}

/// SQL text with its bound values, placeholders made by the engine.
public struct ExpenseQuery: Sendable {
    public let sql: String
    public let values: [QueryValue]

    /// `WHERE …` for `filter` on the table `expenses` (aliased `e`).
    /// - Parameter placeholder: the engine's n-th placeholder (`?`, `$n`), from 1.
    static func whereClause(_ filter: ExpenseFilter, placeholder: (Int) -> String) -> (String, [QueryValue]) {
        var conditions: [String] = []
        var values: [QueryValue] = []
        func bind(_ value: QueryValue) -> String {
            values.append(value)
            return placeholder(values.count)
        }
        if let user = filter.user { conditions.append("e.user_id = \(bind(.integer(user)))") }
        if let since = filter.since { conditions.append("e.date >= \(bind(.text(since)))") }
        if let until = filter.until { conditions.append("e.date <= \(bind(.text(until)))") }
        if let merchant = filter.merchant, !merchant.isEmpty {
            conditions.append("lower(e.merchant) LIKE \(bind(.text(LikePattern.containing(merchant.lowercased())))) ESCAPE '\\'")
        }
        if let category = filter.category, !category.isEmpty { conditions.append("e.category = \(bind(.text(category)))") }
        let deleted = bind(.bool(filter.state == .deleted))
        conditions.append("e.deleted = \(deleted)")
        switch filter.state {
        case .hasReceipt: conditions.append("e.receipt_sha256 IS NOT NULL")
        case .missingReceipt: conditions.append("e.receipt_sha256 IS NULL")
        case .conflict: conditions.append("e.conflicts <> '{}'")
        case .deleted, nil: break
        }
        return ("WHERE " + conditions.joined(separator: " AND "), values)
    }

    /// The expenses of `filter` with their user's name, in `sort` order:
    /// `limit` of them from `offset`, or all of them when `limit` is `nil`.
    /// - Parameter columns: the engine's select list (``ExpenseColumns``), unqualified names of `e`.
    public static func rows(_ filter: ExpenseFilter, sort: ExpenseSort, columns: String, offset: Int = 0, limit: Int? = nil,
                            placeholder: (Int) -> String) -> ExpenseQuery {
        var (clause, values) = whereClause(filter, placeholder: placeholder)
        var sql = "SELECT \(columns), u.name FROM expenses e JOIN users u ON u.id = e.user_id \(clause) ORDER BY \(qualified(sort.orderBy))"
        if let limit {
            values.append(.integer(Int64(limit)))
            sql += " LIMIT \(placeholder(values.count))"
            values.append(.integer(Int64(offset)))
            sql += " OFFSET \(placeholder(values.count))"
        }
        return ExpenseQuery(sql: sql, values: values)
    }

    /// How many expenses match, and the sum of their amounts per currency
    /// in minor units: from `expense_totals` when only the user is chosen,
    /// else from the rows (a stored amount has exactly its currency's fraction
    /// digits, so its digits without the point are minor units). The sum is
    /// cast back: PostgreSQL sums a bigint as a numeric.
    public static func totals(_ filter: ExpenseFilter, placeholder: (Int) -> String) -> ExpenseQuery {
        if filter.since == nil && filter.until == nil && (filter.merchant ?? "").isEmpty && (filter.category ?? "").isEmpty && filter.state == nil {
            // Everything not deleted, of one user or all: the running totals.
            let condition = filter.user == nil ? "" : "AND user_id = \(placeholder(1))"
            return ExpenseQuery(sql: """
                SELECT currency, CAST(sum(count) AS BIGINT), CAST(sum(minor_units) AS BIGINT) FROM expense_totals
                WHERE count > 0 \(condition) GROUP BY currency ORDER BY 1
                """, values: filter.user.map { [.integer($0)] } ?? [])
        }
        let (clause, values) = whereClause(filter, placeholder: placeholder)
        return ExpenseQuery(sql: """
            SELECT coalesce(e.currency, ''), count(*), CAST(coalesce(sum(CAST(replace(e.amount, '.', '') AS BIGINT)), 0) AS BIGINT)
            FROM expenses e \(clause) GROUP BY e.currency ORDER BY 1
            """, values: values)
    }

    /// `a, b` → `e.a, e.b` for an ORDER BY.
    private static func qualified(_ orderBy: String) -> String {
        orderBy.split(separator: ",").map { "e." + $0.trimmingPrefix(" ") }.joined(separator: ", ")
    }
}

/// What a listing page holds: the expenses and their owners' names.
public struct ListedExpense: Sendable {
    public let stored: StoredExpense
    public let userName: String

    public init(stored: StoredExpense, userName: String) {
        self.stored = stored
        self.userName = userName
    }
}

/// The count and sums of a filter, per currency (`""` for expenses without one).
public struct CurrencyTotal: Sendable, Equatable {
    public let currency: String
    public let count: Int
    /// The sum of the amounts, in the currency's minor units.
    public let minorUnits: Int64

    public init(currency: String, count: Int, minorUnits: Int64) {
        self.currency = currency
        self.count = count
        self.minorUnits = minorUnits
    }
}

/// What the web interface and the export read, beside ``ExpenseStorage``.
public protocol ExpenseListing: Sendable {
    /// A page of `filter`'s expenses in `sort` order.
    func expensePage(_ filter: ExpenseFilter, sort: ExpenseSort, offset: Int, limit: Int) throws -> [ListedExpense]
    /// The count and sums per currency of `filter`'s expenses.
    func totals(_ filter: ExpenseFilter) throws -> [CurrencyTotal]
    /// Hands every expense of `filter` to `row`, one at a time as the
    /// database returns it, oldest date first: memory stays constant
    /// whatever the number of rows.
    func forEachExpense(_ filter: ExpenseFilter, _ row: (ListedExpense) throws -> Void) throws
    /// One expense, tombstones included, whoever it belongs to (an admin's view).
    func anyExpense(_ transactionID: String) throws -> ListedExpense?
    /// Every version of the expense of row `rowID`, newest first.
    func versions(ofRow rowID: Int64) throws -> [ExpenseVersion]
}

/// One version of an expense, as its history shows it.
public struct ExpenseVersion: Sendable, Equatable {
    public let version: Int
    public let fields: ExpenseFields
    public let receiptSHA256: String?
    public let deleted: Bool
    /// The fields in conflict at this version.
    public let conflicts: [String: ConflictValues]
    public let at: String

    public init(version: Int, fields: ExpenseFields, receiptSHA256: String?, deleted: Bool, conflicts: [String: ConflictValues], at: String) {
        self.version = version
        self.fields = fields
        self.receiptSHA256 = receiptSHA256
        self.deleted = deleted
        self.conflicts = conflicts
        self.at = at
    }

    /// The select list ``init(row:)`` reads.
    public static let columns = "version, merchant, amount, currency, date, category, comment, tax_tag, receipt_sha256, deleted, conflicts, at"

    public init(row: some StorageRow) {
        self.init(version: row.int(0),
                  fields: ExpenseFields(merchant: row.optionalString(1), amount: row.optionalString(2), currency: row.optionalString(3),
                                        date: row.optionalString(4), category: row.optionalString(5), comment: row.optionalString(6),
                                        taxTag: row.optionalString(7)),
                  receiptSHA256: row.optionalString(8), deleted: row.bool(9), conflicts: ConflictValues.decode(row.string(10)), at: row.string(11))
    }
}
