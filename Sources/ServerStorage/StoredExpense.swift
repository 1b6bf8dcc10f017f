import ExpenseCore
import Posix

/// An expense row: the canonical expense and what only the server sees.
public struct StoredExpense: Sendable {
    public let rowID: Int64
    public let userID: Int64
    public var expense: CanonicalExpense
    public var receipt: StoredReceipt?

    public init(rowID: Int64, userID: Int64, expense: CanonicalExpense, receipt: StoredReceipt?) {
        self.rowID = rowID
        self.userID = userID
        self.expense = expense
        self.receipt = receipt
    }
}

/// The receipt an expense points at.
public struct StoredReceipt: Sendable, Equatable {
    /// Where the engine keeps the bytes: a file name under `receipts/`
    /// (SQLite), a receipt id (PostgreSQL).
    public let locator: String
    public let contentType: String
    /// SHA-256 of the bytes, hex.
    public let sha256: String
    public let size: Int64

    public init(locator: String, contentType: String, sha256: String, size: Int64) {
        self.locator = locator
        self.contentType = contentType
        self.sha256 = sha256
        self.size = size
    }
}

/// A page of the change feed (`GET /v1/expenses?since=`).
public struct ChangePage: Sendable {
    /// Oldest change first, each expense once, in its latest state.
    public let expenses: [CanonicalExpense]
    /// The position of the last expense in the page; the position asked
    /// for when the page is empty.
    public let next: Int64
    public let hasMore: Bool

    public init(expenses: [CanonicalExpense], next: Int64, hasMore: Bool) {
        self.expenses = expenses
        self.next = next
        self.hasMore = hasMore
    }

    /// The page of at most `limit` of `rows` (expenses with their
    /// positions, read with `LIMIT limit + 1` to tell whether more follow).
    public init(rows: [(expense: CanonicalExpense, position: Int64)], limit: Int, after: Int64) {
        let page = rows.prefix(limit)
        self.init(expenses: page.map(\.expense), next: page.last?.position ?? after, hasMore: rows.count > limit)
    }
}

/// A receipt's bytes, ready to be sent: an open file of `size` bytes
/// (the stored file itself, or a private copy of bytes kept elsewhere).
public struct ReceiptContent: Sendable {
    public let contentType: String
    /// SHA-256 of the bytes, hex.
    public let sha256: String
    public let size: Int64
    public let file: FileDescriptor

    public init(contentType: String, sha256: String, size: Int64, file: FileDescriptor) {
        self.contentType = contentType
        self.sha256 = sha256
        self.size = size
        self.file = file
    }
}

extension CanonicalExpense {
    /// Where a receipt's bytes are served (contract.md: clients treat it as opaque).
    public static func receiptURL(_ transactionID: String) -> String {
        "/v1/expenses/\(transactionID)/receipt"
    }
}
