import ExpenseCore

/// `delete`'s answer.
public struct DeleteResult: ControlResult, Equatable {
    public var transactionID: String
    /// The expense never reached the server: its jobs went, nothing is sent.
    public var sentNothing: Bool

    public init(transactionID: String, sentNothing: Bool) {
        self.transactionID = transactionID
        self.sentNothing = sentNothing
    }

    public var json: JSONValue { ["transaction_id": .string(transactionID), "sent_nothing": .bool(sentNothing)] }

    public init(json: JSONValue) throws(ControlDecodingError) {
        let m = try Members(json, path: "result")
        self.init(transactionID: try m.string("transaction_id"), sentNothing: try m.bool("sent_nothing"))
    }
}
