import ExpenseCore

/// `list`'s answer: every expense to show, oldest first.
public struct ExpenseList: ControlResult, Equatable {
    public var expenses: [ExpenseSummary]

    public init(expenses: [ExpenseSummary]) {
        self.expenses = expenses
    }

    public var json: JSONValue { ["expenses": .array(expenses.map(\.json))] }

    public init(json: JSONValue) throws(ControlDecodingError) {
        var expenses: [ExpenseSummary] = []
        for (item, path) in try Members(json, path: "result").array("expenses") {
            expenses.append(try ExpenseSummary(try Members(item, path: path)))
        }
        self.init(expenses: expenses)
    }
}
