import ExpenseCore

/// `add`'s answer, once the expense is durable.
public struct AddResult: ControlResult, Equatable {
    public var transactionID: String
    public var clientID: String
    /// `queued` for a new expense; for a repeated add, where that expense is now.
    public var state: ExpenseView.State
    /// `pending` when a receipt upload is queued, else `none`.
    public var receipt: ReceiptState
    /// The client id was known: this add was a retry, and its fields were not used.
    public var duplicate: Bool

    public init(transactionID: String, clientID: String, state: ExpenseView.State, receipt: ReceiptState, duplicate: Bool) {
        self.transactionID = transactionID
        self.clientID = clientID
        self.state = state
        self.receipt = receipt
        self.duplicate = duplicate
    }

    public var json: JSONValue {
        [
            "transaction_id": .string(transactionID),
            "client_id": .string(clientID),
            "state": .string(state.rawValue),
            "receipt": .string(receipt.rawValue),
            "duplicate": .bool(duplicate),
        ]
    }

    public init(json: JSONValue) throws(ControlDecodingError) {
        let m = try Members(json, path: "result")
        self.init(transactionID: try m.string("transaction_id"), clientID: try m.string("client_id"),
                  state: try m.choice("state", ExpenseView.State.self), receipt: try m.choice("receipt", ReceiptState.self),
                  duplicate: try m.bool("duplicate"))
    }
}
