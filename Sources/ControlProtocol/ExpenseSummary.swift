import ExpenseCore

/// One expense as `list` shows it: the server's values with pending work
/// folded on top (``ExpenseView``), in the protocol's shape
/// (docs/control-protocol.md, "Expense views").
public struct ExpenseSummary: ControlResult, Equatable {
    public var transactionID: String
    public var clientID: String
    public var state: ExpenseView.State
    /// The values shown, null where an expense has none.
    public var fields: ExpenseFields
    public var pendingFields: [String]
    public var receipt: ReceiptState
    public var receiptURL: String?
    public var version: Int?
    public var conflict: Bool
    public var conflicts: [String: ConflictValues]
    /// Where it came from, when this device made it.
    public var source: ExpenseSource?
    /// The fields the backend needs that it lacks, while it is held as
    /// incomplete (docs/sync.md, "Incomplete expenses"); empty otherwise.
    public var missing: [String] = []
    /// The fields a reading of its receipt filled, with the reading's
    /// confidence, while they keep the value read (`"read": {"amount": 0.91}`).
    public var read: [String: Double] = [:]

    public init(transactionID: String, clientID: String, state: ExpenseView.State, fields: ExpenseFields, pendingFields: [String],
                receipt: ReceiptState, receiptURL: String?, version: Int?, conflict: Bool, conflicts: [String: ConflictValues],
                source: ExpenseSource? = nil) {
        self.transactionID = transactionID
        self.clientID = clientID
        self.state = state
        self.fields = fields.values
        self.pendingFields = pendingFields
        self.receipt = receipt
        self.receiptURL = receiptURL
        self.version = version
        self.conflict = conflict
        self.conflicts = conflicts
        self.source = source
    }

    public init(_ view: ExpenseView) {
        self.init(transactionID: view.transactionID, clientID: view.clientID, state: view.state, fields: view.fields,
                  pendingFields: view.pendingFields, receipt: view.receipt, receiptURL: view.receiptURL, version: view.version,
                  conflict: view.conflict, conflicts: view.conflicts, source: view.source)
        read = view.read
    }

    public var json: JSONValue { .object(members) }

    /// The members, for ``ExpenseDetail`` to add to.
    var members: [String: JSONValue] {
        var object: [String: JSONValue] = [
            "transaction_id": .string(transactionID),
            "client_id": .string(clientID),
            "state": .string(state.rawValue),
            "pending_fields": .array(pendingFields.map(JSONValue.string)),
            "receipt": .string(receipt.rawValue),
            "receipt_url": .string(receiptURL),
            "version": version.map { .integer($0) } ?? .null,
            "conflict": .bool(conflict),
            "conflicts": .object(conflicts.mapValues { ["server": .string($0.server), "client": .string($0.client)] }),
            "source": source.map(Self.json) ?? .null,
            "missing": .array(missing.map(JSONValue.string)),
            "read": .object(read.mapValues { .number($0) }),
        ]
        for name in ExpenseFields.names { object[name] = .string(fields[name]) }
        return object
    }

    public init(json: JSONValue) throws(ControlDecodingError) {
        try self.init(try Members(json, path: "result"))
    }

    static func json(_ source: ExpenseSource) -> JSONValue {
        .object(["kind": .string(source.kind.rawValue), "name": .string(source.name), "sidecar": .string(source.sidecar),
                 "dropped_at": timestampJSON(source.droppedMilliseconds)])
    }

    static func source(_ m: Members, _ key: String) throws(ControlDecodingError) -> ExpenseSource? {
        guard try !m.required(key).isNull else { return nil }
        let s = try m.object(key)
        return ExpenseSource(kind: try s.choice("kind", ExpenseSource.Kind.self), name: try s.string("name"),
                             sidecar: try s.nullableString("sidecar"), droppedMilliseconds: try s.nullableTimestamp("dropped_at"))
    }

    init(_ m: Members) throws(ControlDecodingError) {
        var fields = ExpenseFields()
        for name in ExpenseFields.names { fields[name] = try m.nullableString(name) }
        var pending: [String] = []
        for (item, path) in try m.array("pending_fields") {
            guard let name = item.stringValue else { throw ControlDecodingError(path: path, "expected a string, got \(item.typeName)") }
            pending.append(name)
        }
        var missing: [String] = []
        for (item, path) in try m.array("missing") {
            guard let name = item.stringValue, ExpenseFields.names.contains(name) else {
                throw ControlDecodingError(path: path, "expected a field's name, got \(item.typeName)")
            }
            missing.append(name)
        }
        var conflicts: [String: ConflictValues] = [:]
        let conflictMembers = try m.object("conflicts")
        for key in conflictMembers.object.keys {
            let values = try conflictMembers.object(key)
            conflicts[key] = ConflictValues(server: try values.nullableString("server"), client: try values.nullableString("client"))
        }
        self.init(transactionID: try m.string("transaction_id"), clientID: try m.string("client_id"),
                  state: try m.choice("state", ExpenseView.State.self), fields: fields, pendingFields: pending,
                  receipt: try m.choice("receipt", ReceiptState.self), receiptURL: try m.nullableString("receipt_url"),
                  version: try m.nullableInteger("version").map { Int($0) }, conflict: try m.bool("conflict"), conflicts: conflicts,
                  source: try Self.source(m, "source"))
        self.missing = missing
        // Absent from a daemon that reads no receipts' fields yet.
        if m.value("read") != nil {
            let marks = try m.object("read")
            for field in marks.object.keys where ExpenseFields.names.contains(field) { read[field] = try marks.number(field) }
        }
    }
}
