/// Why storage did not do what it was asked: either an answer the contract
/// gives (another request already used the key, the expense is gone), or
/// the database failing (busy, unreachable, broken).
///
/// The HTTP layer turns each code into its status; the engines turn their
/// libraries' errors into ``Code/unavailable`` or ``Code/failed`` at their
/// edge, keeping the library's error as the ``cause`` for the log.
public struct StorageError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case idempotencyKeyReused, expenseNotFound, expenseDeleted, receiptNotFound, invalidField, staleVersion
            case unavailable, failed
        }

        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The key came with another request, or names another user's expense (`422`).
        public static let idempotencyKeyReused = Code(.idempotencyKeyReused)
        /// No such expense for this user (`404`).
        public static let expenseNotFound = Code(.expenseNotFound)
        /// The expense is a tombstone (`410`).
        public static let expenseDeleted = Code(.expenseDeleted)
        /// The expense has no receipt (`404`).
        public static let receiptNotFound = Code(.receiptNotFound)
        /// An edit would leave a field invalid (`400`); ``StorageError/field`` names it.
        public static let invalidField = Code(.invalidField)
        /// A strict edit (``PatchRequest/requiresCurrentVersion``) was made
        /// on an older version than the expense's: nothing was changed.
        public static let staleVersion = Code(.staleVersion)
        /// The database cannot serve now (busy, full, unreachable); a retry
        /// later may succeed (`503`).
        public static let unavailable = Code(.unavailable)
        /// Anything else (`500`).
        public static let failed = Code(.failed)

        public var description: String { "\(value)" }
    }

    public let code: Code
    public let message: String
    /// The field concerned, for ``Code/invalidField``.
    public let field: String?
    /// The library's error behind ``Code/unavailable`` and ``Code/failed``.
    public let cause: (any Error)?

    public init(_ code: Code, _ message: String, field: String? = nil, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.field = field
        self.cause = cause
    }

    public static let idempotencyKeyReused = StorageError(.idempotencyKeyReused, "this Idempotency-Key was already used for a different request")
    public static let expenseNotFound = StorageError(.expenseNotFound, "no such expense")
    public static let expenseDeleted = StorageError(.expenseDeleted, "the expense was deleted")
    public static let receiptNotFound = StorageError(.receiptNotFound, "the expense has no receipt")

    public static func invalidField(_ field: String, _ reason: String) -> StorageError {
        StorageError(.invalidField, reason, field: field)
    }

    public var description: String {
        var text = message
        if let field { text = "\(field): \(text)" }
        if let cause { text += ": \(cause)" }
        return text
    }
}
