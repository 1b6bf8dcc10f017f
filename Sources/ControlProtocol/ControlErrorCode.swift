import ExpenseCore

/// What an error line's `code` says. A fixed vocabulary, documented.
public struct ControlErrorCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let invalidUTF8 = Self(rawValue: "invalid_utf8")
    public static let invalidJSON = Self(rawValue: "invalid_json")
    public static let notAnObject = Self(rawValue: "not_an_object")
    public static let lineTooLong = Self(rawValue: "line_too_long")
    public static let unknownOp = Self(rawValue: "unknown_op")
    public static let missingField = Self(rawValue: "missing_field")
    public static let invalidField = Self(rawValue: "invalid_field")
    public static let unknownField = Self(rawValue: "unknown_field")
    public static let notFound = Self(rawValue: "not_found")
    public static let ambiguousID = Self(rawValue: "ambiguous_id")
    public static let invalidState = Self(rawValue: "invalid_state")
    public static let receiptMissing = Self(rawValue: "receipt_missing")
    public static let receiptTooLarge = Self(rawValue: "receipt_too_large")
    public static let receiptInvalid = Self(rawValue: "receipt_invalid")
    public static let unexpectedDescriptor = Self(rawValue: "unexpected_descriptor")
    public static let tooManyConnections = Self(rawValue: "too_many_connections")
    public static let idleTimeout = Self(rawValue: "idle_timeout")
    public static let permissionDenied = Self(rawValue: "permission_denied")
    /// The caller has no account: no file in `accounts_dir`, and no `token_file` for callers without one.
    public static let noAccount = Self(rawValue: "no_account")
    public static let storageFailed = Self(rawValue: "storage_failed")
    /// `add`, `edit --receipt`: the outbox is at a limit, or its file system
    /// is full (`message` names which, and what frees room); nothing was stored.
    public static let outboxFull = Self(rawValue: "outbox_full")
    public static let shuttingDown = Self(rawValue: "shutting_down")
    public static let conflict = Self(rawValue: "conflict")
    /// `receipt`: the expense has no receipt.
    public static let noReceipt = Self(rawValue: "no_receipt")
    /// `receipt`: the bytes do not match the SHA-256 recorded for them (`message` names both).
    public static let receiptDamaged = Self(rawValue: "receipt_damaged")
    /// `receipt`: the server holding it did not answer, or answered 5xx.
    public static let serverUnreachable = Self(rawValue: "server_unreachable")
    /// `receipt`: the server answered, but not with the receipt (`message` says how).
    public static let serverRefused = Self(rawValue: "server_refused")
}
