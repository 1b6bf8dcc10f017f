import ExpenseCore

/// An error body from expense-server: `{"error": {"code", "message"}}` (contract.md, "General").
package struct ServerError: Sendable, Equatable {
    package var code: String?
    package var message: String?

    /// Reads an error body; fields that are missing or not strings stay nil.
    package init(body: [UInt8]) {
        let value = try? JSONValue.parse(body)
        code = value?["error"]?["code"]?.stringValue
        message = value?["error"]?["message"]?.stringValue
    }

    /// "422 idempotency_key_reused: message", for a job's last error.
    package func summary(status: Int) -> String {
        var text = "\(status)"
        if let code { text += " \(code.prefix(64))" }
        if let message { text += ": \(message.prefix(300))" }
        return text
    }
}
