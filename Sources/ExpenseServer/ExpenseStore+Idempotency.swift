import Digest
import ExpenseCore
import SQLite

/// A mutating request as idempotency sees it (contract.md, "Idempotency
/// semantics"): who sent it, with which key, and its fingerprint.
struct IdempotentOperation: Sendable {
    let user: Int64
    let key: String
    let method: String
    let path: String
    /// SHA-256 (hex) over the method, the path and the SHA-256 of the body
    /// (canonical JSON for JSON bodies, the raw bytes for receipts).
    let fingerprint: String

    init(user: Int64, key: String, method: String, path: String, bodyDigest: [UInt8]) {
        self.user = user
        self.key = key
        self.method = method
        self.path = path
        fingerprint = SHA256.hexDigest("\(method) \(path) \(Hex.encode(bodyDigest))")
    }
}

/// How a mutating request ended.
enum WriteOutcome: Sendable {
    /// A create made a new expense: `201`.
    case created(CanonicalExpense)
    /// A change was applied: `200`.
    case applied(CanonicalExpense)
    /// Nothing new happened; this is the answer to an earlier request: `200`
    /// with `Idempotent-Replayed: true`.
    case replayed(CanonicalExpense)

    var expense: CanonicalExpense {
        switch self {
        case .created(let e), .applied(let e), .replayed(let e): e
        }
    }

    var isReplay: Bool {
        if case .replayed = self { return true }
        return false
    }
}

extension ExpenseStore {
    /// When `operation`'s key was used before by the same user: the expense
    /// that request concerned, as it is now.
    /// - Throws: `422 idempotency_key_reused` when the key came with another request.
    static func replay(_ db: Connection, _ operation: IdempotentOperation) throws -> CanonicalExpense? {
        let record = try db.queryFirst("SELECT fingerprint, transaction_id FROM idempotency_keys WHERE user_id = ? AND key = ?",
                                       [.integer(operation.user), .text(operation.key)]) { ($0.string(0), $0.string(1)) }
        guard let (fingerprint, transactionID) = record else { return nil }
        guard fingerprint == operation.fingerprint else { throw APIError.idempotencyKeyReused }
        guard let stored = try load(db, transactionID: transactionID, user: operation.user) else {
            // Expenses are never removed (deletes leave tombstones).
            throw APIError.internalError
        }
        return stored.expense
    }

    /// Records that `operation` was answered with `status` about `transactionID`.
    static func remember(_ db: Connection, _ operation: IdempotentOperation, status: Int, transactionID: String,
                         nowMilliseconds: Int64, ifAbsent: Bool = false) throws {
        try db.execute("""
            INSERT \(ifAbsent ? "OR IGNORE " : "")INTO idempotency_keys
                (user_id, key, method, path, fingerprint, status, transaction_id, created_at_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, [.integer(operation.user), .text(operation.key), .text(operation.method), .text(operation.path),
                  .text(operation.fingerprint), .integer(status), .text(transactionID), .integer(nowMilliseconds)])
    }

    /// True when `user` used `key` before (for any request).
    func hasIdempotencyRecord(user: Int64, key: String) throws -> Bool {
        try read { db in
            try db.scalarInt("SELECT count(*) FROM idempotency_keys WHERE user_id = ? AND key = ?", [.integer(user), .text(key)]) ?? 0 > 0
        }
    }

    /// Forgets idempotency records older than `retentionMilliseconds`.
    /// Replays of a create still work afterwards through the UNIQUE transaction id.
    /// - Returns: how many were removed.
    func purgeIdempotencyRecords(retentionMilliseconds: Int64) throws -> Int {
        let cutoff = Self.now().milliseconds - retentionMilliseconds
        return try write { db in
            try db.execute("DELETE FROM idempotency_keys WHERE created_at_ms < ?", [.integer(cutoff)])
            return db.changes
        }
    }
}
