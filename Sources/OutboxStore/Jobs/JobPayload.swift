import ExpenseCore

/// The JSON a job row carries: a create's fields, or an edit's fields and
/// the version they were made against.
struct JobPayload: Equatable {
    var fields: ExpenseFields
    var baseVersion: Int?

    static func encode(fields: ExpenseFields, baseVersion: Int? = nil) throws -> String {
        var object: [String: JSONValue] = ["fields": .object(fields.jsonMembers)]
        if let baseVersion { object["base_version"] = .integer(baseVersion) }
        return JSONValue.object(object).serialized()
    }

    /// A payload this version cannot read decodes as empty fields: reads
    /// still show the job, and sending it will say what is wrong.
    static func decode(_ text: String) -> JobPayload {
        guard let value = try? JSONValue.parse(Array(text.utf8)) else { return JobPayload(fields: ExpenseFields(), baseVersion: nil) }
        return JobPayload(fields: ExpenseFields(jsonMembers: value["fields"]), baseVersion: value["base_version"]?.intValue.map(Int.init))
    }
}
