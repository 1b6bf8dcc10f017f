import Digest
import ExpenseCore

/// A mutating request as idempotency sees it (contract.md, "Idempotency
/// semantics"): who sent it, with which key, and its fingerprint.
public struct IdempotentOperation: Sendable {
    public let user: Int64
    public let key: String
    public let method: String
    public let path: String
    /// SHA-256 (hex) over the method, the path and the SHA-256 of the body
    /// (canonical JSON for JSON bodies, the raw bytes for receipts).
    public let fingerprint: String

    public init(user: Int64, key: String, method: String, path: String, bodyDigest: [UInt8]) {
        self.user = user
        self.key = key
        self.method = method
        self.path = path
        fingerprint = SHA256.hexDigest("\(method) \(path) \(Hex.encode(bodyDigest))")
    }
}

/// How a mutating request ended.
public enum WriteOutcome: Sendable, Equatable {
    /// A create made a new expense: `201`.
    case created(CanonicalExpense)
    /// A change was applied: `200`.
    case applied(CanonicalExpense)
    /// Nothing new happened; this is the answer to an earlier request: `200`
    /// with `Idempotent-Replayed: true`.
    case replayed(CanonicalExpense)

    public var expense: CanonicalExpense {
        switch self {
        case .created(let e), .applied(let e), .replayed(let e): e
        }
    }

    public var isReplay: Bool {
        if case .replayed = self { return true }
        return false
    }
}

/// What an earlier request with a key was, as stored.
public struct KeyRecord: Sendable, Equatable {
    public let fingerprint: String
    public let transactionID: String

    public init(fingerprint: String, transactionID: String) {
        self.fingerprint = fingerprint
        self.transactionID = transactionID
    }
}
