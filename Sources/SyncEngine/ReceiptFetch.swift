import ExpenseCore

/// What asking a backend for an expense's receipt came to.
public enum ReceiptFetch: Sendable, Equatable {
    /// The bytes, with the digest the backend sent for them (expense-server's
    /// `Repr-Digest`), if any.
    case bytes([UInt8], reprDigest: [UInt8]?)
    /// No answer, or one saying to try later (5xx, 408, 429).
    case unanswered(reason: String)
    /// The backend has no receipt for it.
    case notFound
    /// Answered, but not with the receipt: credentials refused, or another failure.
    case refused(reason: String)
    /// The backend keeps no receipts the daemon can read back.
    case unsupported(reason: String)
}

extension SyncBackend {
    /// Backends whose receipts stay with the daemon (ihatemoney) or that
    /// have no read for them here (fava) answer this.
    public func fetchReceipt(transactionID: String, token: String?) async -> ReceiptFetch {
        .unsupported(reason: "this backend keeps no receipt the daemon can fetch")
    }
}

extension Drainer {
    /// The receipt of `transactionID` as the backend has it, fetched with
    /// `account`'s token: the client asking never sees the token.
    public func fetchReceipt(transactionID: String, account: String) async -> ReceiptFetch {
        let token = tokens.source(for: account).current().token
        return await backend.fetchReceipt(transactionID: transactionID, token: token)
    }
}
