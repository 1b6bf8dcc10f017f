import ExpenseCore

/// A create, checked (contract.md, `POST /v1/expenses`): the HTTP layer
/// reads it from the body.
public struct CreateRequest: Sendable {
    public var fields: ExpenseFields
    public var deviceID: String?
    public var deviceSequence: Int64?
    public var createdAtDevice: String?

    public init(fields: ExpenseFields, deviceID: String? = nil, deviceSequence: Int64? = nil, createdAtDevice: String? = nil) {
        self.fields = fields
        self.deviceID = deviceID
        self.deviceSequence = deviceSequence
        self.createdAtDevice = createdAtDevice
    }
}

/// An edit, each field checked on its own (contract.md, `PATCH`); the
/// merged expense is checked again when it is applied (``EditMerge``).
public struct PatchRequest: Sendable {
    public let baseVersion: Int64
    /// Field name → new value; `nil` clears the field.
    public let changes: [String: String?]
    /// Refuse the edit (``StorageError/Code/staleVersion``) rather than
    /// merge it when the expense changed since `baseVersion`: what a person
    /// editing a page expects, who saw one value and typed another over it.
    public var requiresCurrentVersion = false

    public init(baseVersion: Int64, changes: [String: String?], requiresCurrentVersion: Bool = false) {
        self.baseVersion = baseVersion
        self.changes = changes
        self.requiresCurrentVersion = requiresCurrentVersion
    }
}
