import ExpenseCore
import ServerStorage

extension CreateRequest {
    /// Reads and validates a create body (contract.md, "create"). Unknown
    /// members are ignored.
    /// - Throws: `400 invalid_field` naming the first bad field.
    init(_ members: [String: JSONValue]) throws(APIError) {
        let m = Members(members)
        var fields = ExpenseFields()
        for name in ExpenseFields.names {
            fields[name] = try m.optionalString(name)
        }
        do {
            try Validation.check(fields)
        } catch {
            throw .invalidField(error.field, error.reason)
        }
        let deviceID = try m.optionalString("device_id")
        if let deviceID {
            do { try Validation.checkText(deviceID, field: "device_id") } catch { throw .invalidField(error.field, error.reason) }
        }
        let deviceSequence = try m.optionalInteger("device_seq", in: 0...Int64(1) << 53)
        let createdAtDevice = try m.optionalString("created_at_device")
        if let createdAtDevice, Timestamp.parse(createdAtDevice) == nil {
            throw .invalidField("created_at_device", "must be an RFC 3339 UTC timestamp like 2026-11-29T12:01:00Z")
        }
        self.init(fields: fields, deviceID: deviceID, deviceSequence: deviceSequence, createdAtDevice: createdAtDevice)
    }
}

extension PatchRequest {
    /// Reads and validates the body of `PATCH /v1/expenses/{id}`, each
    /// field on its own; the merged expense is checked again when the edit
    /// is applied.
    /// - Throws: `400 invalid_field` naming the first bad field.
    init(_ members: [String: JSONValue]) throws(APIError) {
        let m = Members(members)
        guard members["base_version"] != nil, !(members["base_version"]!.isNull) else {
            throw .invalidField("base_version", "required: the version the edit was made on")
        }
        let baseVersion = try m.optionalInteger("base_version", in: 1...Int64(1) << 53)!
        guard let set = members["set"] else {
            throw .invalidField("set", "required: an object of the fields to change")
        }
        guard case .object(let setMembers) = set else {
            throw .invalidField("set", "must be an object, got \(set.typeName)")
        }
        let s = Members(setMembers, prefix: "set.")
        var changes: [String: String?] = [:]
        for name in setMembers.keys.sorted() {
            guard ExpenseFields.names.contains(name) else {
                throw .invalidField("set.\(name.prefix(64))", "not an editable field; editable: \(ExpenseFields.names.joined(separator: ", "))")
            }
            changes[name] = .some(try s.optionalString(name))
        }
        var fields = ExpenseFields()
        for (name, value) in changes { fields[name] = value }
        do {
            try Validation.check(fields, amountNeedsCurrency: false)
        } catch {
            throw .invalidField("set.\(error.field)", error.reason)
        }
        self.init(baseVersion: baseVersion, changes: changes)
    }
}
