import ExpenseCore
import SQLite

/// A ``ListQuery`` as SQL over the listing index (``ListingSchema``): the
/// one place that turns filters into conditions, so a new filter is one
/// more condition here, for the page and the totals alike. The caller's
/// account scope is the first condition, written as every other read of
/// the store writes it (``Store/inScope(_:column:)``): another account's
/// expenses are neither listed nor totalled.
struct ListingQuery {
    /// The conditions every match meets, with numbered parameters (`?1`),
    /// so that both halves of a query bind the same values once.
    private(set) var conditions: [String] = []
    private(set) var values: [SQLValue] = []
    /// The halves of the listing to look in: the synced expenses, through
    /// the indexes of their orders, and the pending ones, few, sorted as
    /// found (``ListingSchema``).
    private(set) var halves = [Self.synced, Self.pending]
    let query: ListQuery

    static let synced = "state = 'synced'"
    static let pending = "state != 'synced'"

    init(_ query: ListQuery, in scope: AccountScope) {
        self.query = query
        values.append(scope.sqlValue)
        conditions.append(Store.inScope(values.count))
        switch query.state {
        case nil: break
        case .synced?: halves = [Self.synced]
        case .conflict?: conditions.append("conflict = 1")
        case let state?:
            halves = [Self.pending]
            conditions.append("state = \(parameter(.text(state.rawValue)))")
        }
        if query.incomplete { conditions.append(ListingSchema.incomplete) }
        if let since = query.since { conditions.append("date >= \(parameter(.text(since)))") }
        if let until = query.until { conditions.append("date <= \(parameter(.text(until)))") }
        if let merchant = query.merchant {
            conditions.append("merchant LIKE \(parameter(.text(LikePattern.containing(merchant)))) ESCAPE '\\'")
        }
        if let category = query.category { conditions.append("category = \(parameter(.text(category))) COLLATE NOCASE") }
    }

    /// Adds a value and returns its parameter.
    private mutating func parameter(_ value: SQLValue) -> String {
        values.append(value)
        return "?\(values.count)"
    }

    /// The WHERE clause of one half, or of both (nil). Never empty: the
    /// account scope is always the first condition.
    private func whereClause(_ half: String?) -> String {
        "WHERE " + ([half].compactMap { $0 } + conditions).joined(separator: " AND ")
    }

    private var sortKey: String {
        switch query.sort {
        case .date: "date"
        case .amount: "amount_value"
        case .merchant: "merchant"
        case .added: "added_at"
        }
    }

    /// The synced half's table. The rare filters (conflicts, incomplete
    /// expenses) name their partial index: SQLite would otherwise walk an
    /// order's index over every synced expense to find the few (it did,
    /// 700 ms over 100,000), where the index finds them and the few are sorted.
    private func table(_ half: String) -> String {
        guard half == Self.synced else { return "listing" }
        if query.state == .conflict { return "listing INDEXED BY listing_conflicts" }
        if query.incomplete { return "listing INDEXED BY listing_incomplete" }
        return "listing"
    }

    /// The order: the key (merchants ignoring case), then the transaction
    /// id, so that pages never overlap; `key` is how the query names the key.
    private func orderClause(key: String) -> String {
        let direction = query.reverse ? " DESC" : ""
        let collation = query.sort == .merchant ? " COLLATE NOCASE" : ""
        return "ORDER BY \(key)\(collation)\(direction), transaction_id\(direction)"
    }

    /// The page's transaction ids in order, and one more when there are
    /// more: how the caller knows. Over both halves, a compound query whose
    /// ORDER BY SQLite runs as a merge of the two, each half in its own
    /// order (the synced half through its index), stopping at the limit.
    var page: (sql: String, values: [SQLValue]) {
        let limit = query.limit.map { Int64($0) + 1 } ?? -1
        let sql: String
        if halves.count == 1 {
            sql = "SELECT transaction_id FROM \(table(halves[0])) \(whereClause(halves[0])) \(orderClause(key: sortKey))"
        } else {
            sql = halves.map { "SELECT transaction_id, \(sortKey) AS k FROM \(table($0)) \(whereClause($0))" }.joined(separator: " UNION ALL ")
                + " " + orderClause(key: "k")
        }
        return (sql + " LIMIT ?\(values.count + 1) OFFSET ?\(values.count + 2)", values + [.integer(limit), .integer(Int64(query.offset))])
    }

    /// Sums per currency and number of fraction digits, of all matches and
    /// of the pending ones; rows without an amount (or currency) are counted under null.
    var totals: (sql: String, values: [SQLValue]) {
        ("""
            SELECT CASE WHEN amount IS NOT NULL THEN currency END AS priced, amount_digits, count(*), sum(amount_units), sum(amount_fraction),
                   sum(state != 'synced'), sum(CASE WHEN state != 'synced' THEN amount_units ELSE 0 END),
                   sum(CASE WHEN state != 'synced' THEN amount_fraction ELSE 0 END)
            FROM listing \(whereClause(halves.count == 1 ? halves[0] : nil))
            GROUP BY priced, amount_digits
            """, values)
    }
}
