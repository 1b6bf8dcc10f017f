import ExpenseCore

/// How an edit lands on the current expense (contract.md, `PATCH`).
///
/// - `base_version` equal to the current version: every field in `set` is
///   applied, and the conflicts of those fields are resolved (cleared).
/// - `base_version` older: `merchant, amount, date, category, comment`
///   are applied (last writer wins); a `currency` or `tax_tag` that
///   differs from the current value is not applied but recorded in
///   `conflicts` as `{"server": current, "client": sent}`. An amount whose
///   digits the kept currency does not allow (say `12.50` while the
///   currency stays `JPY`) is held back the same way, as a conflict on
///   `amount`, rather than stored invalid.
/// - `base_version` newer than the current version: `400`, the client
///   cannot have seen it.
///
/// The merged expense must pass the same validation as a create.
public enum EditMerge {
    public static let lastWriterWins: Set<String> = ["merchant", "amount", "date", "category", "comment"]
    public static let conflictGuarded: Set<String> = ["currency", "tax_tag"]

    public struct Result: Equatable, Sendable {
        public var fields: ExpenseFields
        public var conflicts: [String: ConflictValues]
    }

    public static func apply(_ request: PatchRequest, to expense: CanonicalExpense) throws(StorageError) -> Result {
        let current = expense.fields
        var fields = current
        var conflicts = expense.conflicts
        let base = request.baseVersion
        if base > Int64(expense.version) {
            throw .invalidField("base_version", "\(base) is newer than the expense's version \(expense.version)")
        }
        if request.requiresCurrentVersion && base < Int64(expense.version) {
            throw StorageError(.staleVersion, "the expense changed since version \(base): it is at version \(expense.version)")
        }
        if base == Int64(expense.version) {
            for (name, value) in request.changes {
                fields[name] = value
                conflicts[name] = nil
            }
        } else {
            for (name, value) in request.changes where lastWriterWins.contains(name) {
                fields[name] = value
                conflicts[name] = nil
            }
            for (name, value) in request.changes where conflictGuarded.contains(name) {
                if value == current[name] {
                    conflicts[name] = nil
                } else {
                    conflicts[name] = ConflictValues(server: current[name], client: value)
                }
            }
            if let amount = fields.amount, request.changes["amount"] != nil, let currency = fields.currency,
               conflicts["currency"] != nil, request.changes["currency"] != nil,
               (try? Validation.checkAmount(amount, currency: currency)) == nil {
                fields.amount = current.amount
                conflicts["amount"] = ConflictValues(server: current.amount, client: amount)
            }
        }
        do {
            try Validation.check(fields)
        } catch {
            throw .invalidField(request.changes[error.field] != nil ? "set.\(error.field)" : error.field, error.reason)
        }
        return Result(fields: fields, conflicts: conflicts)
    }
}
