import ExpenseCore
import SQLite

/// One page of `list`: the expenses in order, whether more match, and the
/// totals when asked.
public struct ListingPage: Sendable, Equatable {
    public var views: [ExpenseView]
    /// More expenses match after this page.
    public var hasMore: Bool
    /// Per currency, in code order; nil unless asked for.
    public var totals: [ListTotal]?
    /// Matching expenses without an amount, which no total holds.
    public var withoutAmount: Int

    public init(views: [ExpenseView], hasMore: Bool, totals: [ListTotal]?, withoutAmount: Int) {
        self.views = views
        self.hasMore = hasMore
        self.totals = totals
        self.withoutAmount = withoutAmount
    }
}

extension Store {
    /// The expenses `query` matches, in its order, one page of them, folded
    /// from their rows as ``view(ref:)`` folds one; the listing index
    /// chooses which and in what order (``ListingQuery``), among the
    /// expenses of `scope` alone, for the page and its totals.
    public func list(_ query: ListQuery, in scope: AccountScope = .all) async throws -> ListingPage {
        try await readListing { db in try Store.page(db, query, in: scope) }
    }

    /// Runs `body` on the listing caught up with every job (every reader
    /// of `listing` goes through here). A catch-up that cannot be written
    /// (a full disk) is made in the read's own transaction instead, and
    /// undone after it: the read sees every expense all the same, and an
    /// error of that second try is the read's.
    func readListing<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        let caughtUp = (try? await catchUpListing()) != nil
        return try await database.read { db in
            if caughtUp { return try body(db) }
            try db.execute("BEGIN", [])
            defer { try? db.execute("ROLLBACK", []) }
            try db.execute(ListingSchema.catchUpRows)
            return try body(db)
        }
    }

    private static func page(_ db: Connection, _ query: ListQuery, in scope: AccountScope) throws -> ListingPage {
        let listing = ListingQuery(query, in: scope)
        let (sql, values) = listing.page
        var ids = try db.query(sql, values) { $0.string(0) }
        var hasMore = false
        if let limit = query.limit, ids.count > limit {
            ids.removeLast(ids.count - limit)
            hasMore = true
        }
        var page = ListingPage(views: try Store.views(db, transactionIDs: ids), hasMore: hasMore, totals: nil, withoutAmount: 0)
        if query.totals { (page.totals, page.withoutAmount) = try Store.totals(db, listing) }
        return page
    }

    /// Writes the listing rows that adds left for the first read
    /// (``ListingSchema/lazyMigration``): a read when none are due. The
    /// write is deferred: rows lost with a power cut are written again, as
    /// `listing_seq` goes back with them.
    func catchUpListing() async throws {
        guard try await database.read({ try $0.scalarInt(ListingSchema.isBehind) == 1 }) else { return }
        try await database.write(durability: .deferred) { try $0.execute(ListingSchema.catchUp) }
    }

    /// The SQL a page of `query` runs, with its values: for benchmarks
    /// and tools that run the same query elsewhere (`sqlite3` on a copy).
    public static func pageSQL(_ query: ListQuery, in scope: AccountScope = .all) -> (sql: String, values: [SQLValue]) {
        ListingQuery(query, in: scope).page
    }

    /// The views of `transactionIDs`, in that order; an id with nothing to show is left out.
    static func views(_ db: Connection, transactionIDs ids: [String]) throws -> [ExpenseView] {
        guard !ids.isEmpty else { return [] }
        let idList = SQLValue.text(JSONValue.array(ids.map(JSONValue.string)).serialized())
        let views = try Store.views(db, where: "transaction_id IN (SELECT value FROM json_each(?))", [idList])
        return ids.compactMap { views[$0] }
    }

    private static func totals(_ db: Connection, _ listing: ListingQuery) throws -> ([ListTotal], Int) {
        struct Sums { var count = 0, pendingCount = 0, all: DecimalSum, pending: DecimalSum }
        var byCurrency: [String: Sums] = [:]
        var withoutAmount = 0
        let (sql, values) = listing.totals
        let groups = try db.query(sql, values) { r in
            (currency: r.optionalString(0), digits: r.int(1), count: r.int(2), units: r.int64(3), fraction: r.int64(4),
             pendingCount: r.int(5), pendingUnits: r.int64(6), pendingFraction: r.int64(7))
        }
        for group in groups {
            guard let currency = group.currency else {
                withoutAmount += group.count
                continue
            }
            let digits = Currency.minorUnits(currency) ?? group.digits
            var sums = byCurrency[currency] ?? Sums(all: DecimalSum(digits: digits), pending: DecimalSum(digits: digits))
            sums.count += group.count
            sums.pendingCount += group.pendingCount
            sums.all.add(units: group.units, fraction: group.fraction, fractionDigits: group.digits)
            sums.pending.add(units: group.pendingUnits, fraction: group.pendingFraction, fractionDigits: group.digits)
            byCurrency[currency] = sums
        }
        let totals = byCurrency.sorted { $0.key < $1.key }.map { currency, sums in
            ListTotal(currency: currency, count: sums.count, amount: sums.all.text,
                          pendingCount: sums.pendingCount, pendingAmount: sums.pending.text)
        }
        return (totals, withoutAmount)
    }
}
