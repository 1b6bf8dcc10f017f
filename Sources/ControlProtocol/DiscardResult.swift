import ExpenseCore

/// `discard`'s answer: how many pending jobs went (their receipt files with them).
public struct DiscardResult: ControlResult, Equatable {
    public var transactionID: String
    public var discarded: Int

    public init(transactionID: String, discarded: Int) {
        self.transactionID = transactionID
        self.discarded = discarded
    }

    public var json: JSONValue { ["transaction_id": .string(transactionID), "discarded": .integer(discarded)] }

    public init(json: JSONValue) throws(ControlDecodingError) {
        let m = try Members(json, path: "result")
        self.init(transactionID: try m.string("transaction_id"), discarded: try m.int("discarded"))
    }
}
