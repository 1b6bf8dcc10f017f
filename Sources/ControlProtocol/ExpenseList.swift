import ExpenseCore

/// `list`'s answer: one page of the expenses asked for, in the order asked
/// for; whether more match after it; and, when asked, the totals of every
/// match per currency.
public struct ExpenseList: ControlResult, Equatable {
    public var expenses: [ExpenseSummary]
    public var hasMore: Bool
    public var totals: [ListTotal]?
    /// Matches without an amount (with totals).
    public var withoutAmount: Int

    public init(expenses: [ExpenseSummary], hasMore: Bool = false, totals: [ListTotal]? = nil, withoutAmount: Int = 0) {
        self.expenses = expenses
        self.hasMore = hasMore
        self.totals = totals
        self.withoutAmount = withoutAmount
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = ["expenses": .array(expenses.map(\.json)), "more": .bool(hasMore)]
        if let totals {
            members["totals"] = .array(totals.map { total in
                ["currency": .string(total.currency), "count": .integer(total.count), "amount": .string(total.amount),
                 "pending_count": .integer(total.pendingCount), "pending_amount": .string(total.pendingAmount)]
            })
            members["without_amount"] = .integer(withoutAmount)
        }
        return .object(members)
    }

    public init(json: JSONValue) throws(ControlDecodingError) {
        let m = try Members(json, path: "result")
        var expenses: [ExpenseSummary] = []
        for (item, path) in try m.array("expenses") {
            expenses.append(try ExpenseSummary(try Members(item, path: path)))
        }
        var totals: [ListTotal]?
        var withoutAmount = 0
        if m.value("totals") != nil {
            totals = []
            for (item, path) in try m.array("totals") {
                let t = try Members(item, path: path)
                totals?.append(ListTotal(currency: try t.string("currency"), count: try t.int("count"), amount: try t.string("amount"),
                                             pendingCount: try t.int("pending_count"), pendingAmount: try t.string("pending_amount")))
            }
            withoutAmount = try m.int("without_amount")
        }
        self.init(expenses: expenses, hasMore: try m.bool("more"), totals: totals, withoutAmount: withoutAmount)
    }
}
