import ExpenseCore

// Turns a request line into a typed ``ControlRequest`` or a
// ``ControlFailure`` naming what was wrong (docs/control-protocol.md).
extension ControlRequest {
    /// The longest `receipt_path` taken: `PATH_MAX`.
    public static let receiptPathMaxBytes = 4096

    /// Parses one line (without its newline).
    public static func parse(_ line: some Collection<UInt8>) -> Result<ControlRequest, ControlFailure> {
        guard String(validating: line, as: UTF8.self) != nil else {
            return .failure(ControlFailure(.invalidUTF8, "request is not valid UTF-8"))
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(line)
        } catch {
            return .failure(ControlFailure(.invalidJSON, "request is not valid JSON: \(error.message)"))
        }
        guard case .object(let members) = value else {
            return .failure(ControlFailure(.notAnObject, "request must be a JSON object, got \(value.typeName)"))
        }
        let id = members["id"] ?? .null
        switch id {
        case .null, .string, .integer, .number: break
        default:
            return .failure(ControlFailure(.invalidField, "id must be a string or a number, got \(id.typeName)", field: "id"))
        }
        do {
            let fields = Fields(members)
            return .success(ControlRequest(id: id, command: try command(from: fields), accounts: try accounts(from: fields)))
        } catch var failure {
            failure.id = id
            return .failure(failure)
        }
    }

    private static func command(from f: Fields) throws(ControlFailure) -> Command {
        guard let opValue = f.members["op"] else { throw ControlFailure(.missingField, "op is required", field: "op") }
        guard let name = opValue.stringValue else {
            throw ControlFailure(.invalidField, "op must be a string, got \(opValue.typeName)", field: "op")
        }
        guard let op = ControlOperation(rawValue: name) else {
            throw ControlFailure(.unknownOp, "unknown op '\(name.prefix(64))'; known: \(operations.joined(separator: ", "))", field: "op")
        }
        switch op {
        case .add:
            try f.allow(["expense", "client_id", "receipt", "receipt_path"])
            let clientID = try f.optionalString("client_id")
            if let clientID, !ClientID.isCanonical(clientID) {
                throw ControlFailure(.invalidField, "client_id must be a UUID in lowercase canonical form", field: "client_id")
            }
            let hasReceipt = try f.optionalBool("receipt") ?? false
            if f.members["expense"]?.isNull ?? true, !hasReceipt {
                throw ControlFailure(.missingField, "expense is required without a receipt: an object with merchant, amount, currency and date", field: "expense")
            }
            let receiptPath = try f.optionalString("receipt_path")
            if let receiptPath, receiptPath.isEmpty || receiptPath.utf8.count > Self.receiptPathMaxBytes {
                throw ControlFailure(.invalidField, "receipt_path must be 1 to \(Self.receiptPathMaxBytes) bytes", field: "receipt_path")
            }
            let given = try expenseFields(f.members["expense"], field: "expense", required: false)
            do {
                return .add(fields: try Validation.normalizedCreate(given, hasReceipt: hasReceipt), clientID: clientID, hasReceipt: hasReceipt,
                            receiptPath: receiptPath)
            } catch {
                throw ControlFailure(error.isMissing ? .missingField : .invalidField, error.description, field: error.field)
            }
        case .list:
            try f.allow(Set(ListQuery.memberNames))
            return .list(try listQuery(f))
        case .show:
            try f.allow(["ref"])
            return .show(ref: try f.ref())
        case .retry:
            try f.allow(["ref"])
            return .retry(ref: try f.ref())
        case .discard:
            try f.allow(["ref"])
            return .discard(ref: try f.ref())
        case .status:
            try f.allow([])
            return .status
        case .watch:
            try f.allow(["changes"])
            return .watch(changes: try f.optionalBool("changes") ?? false)
        case .sync:
            try f.allow(["refresh", "now"])
            return .sync(refresh: try f.optionalBool("refresh") ?? false, now: try f.optionalBool("now") ?? false)
        case .stats:
            try f.allow([])
            return .stats
        case .edit:
            try f.allow(["ref", "set", "receipt"])
            let ref = try f.ref()
            // With a receipt, the fields are optional: the new file may be the whole change.
            let hasReceipt = try f.optionalBool("receipt") ?? false
            let fields = try expenseFields(f.members["set"], field: "set", required: !hasReceipt)
            if fields.isEmpty && !hasReceipt { throw ControlFailure(.invalidField, "set names no field to change", field: "set") }
            do {
                return .edit(ref: ref, fields: try Validation.normalized(fields, amountNeedsCurrency: false), hasReceipt: hasReceipt)
            } catch {
                throw ControlFailure(.invalidField, error.description, field: error.field)
            }
        case .delete:
            try f.allow(["ref"])
            return .delete(ref: try f.ref())
        case .resolve:
            try f.allow(["ref", "take"])
            let ref = try f.ref()
            guard let take = try f.optionalString("take") else {
                throw ControlFailure(.missingField, "take is required (\"server\" or \"mine\")", field: "take")
            }
            guard take == "server" || take == "mine" else {
                throw ControlFailure(.invalidField, "take must be \"server\" or \"mine\"", field: "take")
            }
            return .resolve(ref: ref, takeMine: take == "mine")
        case .receipt:
            try f.allow(["ref", "original"])
            return .receipt(ref: try f.ref(), original: try f.optionalBool("original") ?? false)
        case .read:
            try f.allow(["ref"])
            return .read(ref: try f.ref())
        }
    }

    /// `account` (a string: a user name, or "" for the default account) or
    /// `all_accounts` (true), at most one of them; who may use them is the
    /// daemon's to decide, knowing the peer.
    private static func accounts(from f: Fields) throws(ControlFailure) -> AccountSelection {
        let account = try f.optionalString("account")
        let all = try f.optionalBool("all_accounts") ?? false
        if let account {
            if all { throw ControlFailure(.invalidField, "account and all_accounts exclude each other", field: "all_accounts") }
            guard account.utf8.count <= 255, !account.contains("/"), !account.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw ControlFailure(.invalidField, "account must be a user name (at most 255 bytes, no '/' or control characters)", field: "account")
            }
            return .account(account)
        }
        return all ? .all : .caller
    }

    /// A `list` request's members as a query, checked as `expensectl` checks its options.
    private static func listQuery(_ f: Fields) throws(ControlFailure) -> ListQuery {
        var query = ListQuery()
        let state = try f.optionalString("state"), sort = try f.optionalString("sort")
        do throws(FieldError) {
            if let state { query.state = try ListQuery.State(parsing: state) }
            if let sort { query.sort = try ListQuery.Sort(parsing: sort) }
        } catch {
            throw ControlFailure(.invalidField, error.description, field: error.field)
        }
        query.incomplete = try f.optionalBool("incomplete") ?? false
        query.since = try f.optionalString("since")
        query.until = try f.optionalString("until")
        query.merchant = try f.optionalString("merchant")
        query.category = try f.optionalString("category")
        query.reverse = try f.optionalBool("reverse") ?? false
        query.limit = try f.optionalInteger("limit")
        query.offset = try f.optionalInteger("offset") ?? 0
        query.totals = try f.optionalBool("totals") ?? false
        do {
            try query.check()
        } catch {
            throw ControlFailure(.invalidField, error.description, field: error.field)
        }
        return query
    }

    /// Reads an object of expense fields, each a string, or null to clear it
    /// (for an add, the same as leaving it out).
    private static func expenseFields(_ value: JSONValue?, field: String, required: Bool) throws(ControlFailure) -> ExpenseFields {
        guard let value, !value.isNull else {
            if required { throw ControlFailure(.missingField, "\(field) is required", field: field) }
            return ExpenseFields()
        }
        guard case .object(let members) = value else {
            throw ControlFailure(.invalidField, "\(field) must be an object, got \(value.typeName)", field: field)
        }
        var fields = ExpenseFields()
        for (key, member) in members.sorted(by: { $0.key < $1.key }) {
            guard ExpenseFields.names.contains(key) else {
                throw ControlFailure(.unknownField, "\(field).\(key.prefix(64)) is not an expense field; known: \(ExpenseFields.names.joined(separator: ", "))", field: "\(field).\(key.prefix(64))")
            }
            switch member {
            case .null: fields.clear(key)
            case .string(let s): fields[key] = s
            default: throw ControlFailure(.invalidField, "\(key) must be a string, got \(member.typeName)", field: key)
            }
        }
        return fields
    }
}
/// The members of a request object, with typed accessors that fail with
/// the field's name.
private struct Fields {
    let members: [String: JSONValue]
    init(_ members: [String: JSONValue]) { self.members = members }

    /// Members every op takes.
    static let everyOp: Set<String> = ["id", "op", "account", "all_accounts"]

    func allow(_ names: Set<String>) throws(ControlFailure) {
        for key in members.keys.sorted() where !Self.everyOp.contains(key) && !names.contains(key) {
            throw ControlFailure(.unknownField, "unknown field '\(key.prefix(64))'", field: String(key.prefix(64)))
        }
    }

    func optionalString(_ name: String) throws(ControlFailure) -> String? {
        guard let value = members[name], !value.isNull else { return nil }
        guard let s = value.stringValue else {
            throw ControlFailure(.invalidField, "\(name) must be a string, got \(value.typeName)", field: name)
        }
        return s
    }

    /// A whole number, or nil when absent or null.
    func optionalInteger(_ name: String) throws(ControlFailure) -> Int? {
        guard let value = members[name], !value.isNull else { return nil }
        guard case .integer(let number) = value, let int = Int(exactly: number) else {
            throw ControlFailure(.invalidField, "\(name) must be a whole number, got \(value.typeName)", field: name)
        }
        return int
    }

    func optionalBool(_ name: String) throws(ControlFailure) -> Bool? {
        guard let value = members[name], !value.isNull else { return nil }
        guard let b = value.boolValue else {
            throw ControlFailure(.invalidField, "\(name) must be true or false, got \(value.typeName)", field: name)
        }
        return b
    }

    /// `ref`: a transaction id, a client UUID, or a unique prefix of either.
    func ref() throws(ControlFailure) -> String {
        guard let ref = try optionalString("ref")?.lowercased() else {
            throw ControlFailure(.missingField, "ref is required (a transaction id, a client id, or a prefix of one)", field: "ref")
        }
        guard !ref.isEmpty, ref.utf8.count <= 64,
              ref.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) || $0 == 0x2D || $0 == UInt8(ascii: "c") || $0 == UInt8(ascii: "p") }) else {
            throw ControlFailure(.invalidField, "ref must be a transaction id (cp-…), a client id, or a prefix of one", field: "ref")
        }
        return ref
    }
}
