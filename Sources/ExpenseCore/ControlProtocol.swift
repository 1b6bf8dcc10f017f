/// The control socket's protocol: one JSON object per line each way
/// (docs/control-protocol.md). This file turns a request line into a typed
/// ``ControlRequest`` or a ``ControlFailure`` naming what was wrong.

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
    public static let storageFailed = Self(rawValue: "storage_failed")
    public static let shuttingDown = Self(rawValue: "shutting_down")
    public static let conflict = Self(rawValue: "conflict")
}

/// An error answer: the request's id (null when it could not be read), a
/// code, a message for people, and the field concerned when there is one.
public struct ControlFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public var id: JSONValue
    public let code: ControlErrorCode
    public let message: String
    public let field: String?

    public init(id: JSONValue = .null, _ code: ControlErrorCode, _ message: String, field: String? = nil) {
        self.id = id
        self.code = code
        self.message = message
        self.field = field
    }

    public var description: String { "\(code): \(message)" }

    /// The response line, without its newline.
    public var json: JSONValue {
        var error: [String: JSONValue] = ["code": .string(code.rawValue), "message": .string(message)]
        if let field { error["field"] = .string(field) }
        return ["id": id, "ok": false, "error": .object(error)]
    }
}

/// A success answer.
public func controlSuccess(id: JSONValue, result: JSONValue) -> JSONValue {
    ["id": id, "ok": true, "result": result]
}

/// One request, checked and typed.
public struct ControlRequest: Sendable, Equatable {
    /// Echoed in the response: a string, a number, or null.
    public let id: JSONValue
    public let command: Command

    public init(id: JSONValue, command: Command) {
        self.id = id
        self.command = command
    }

    public enum Command: Sendable, Equatable {
        /// Queue a new expense. `clientID` makes a retried add idempotent;
        /// `hasReceipt` says a descriptor came with the line.
        case add(fields: ExpenseFields, clientID: String?, hasReceipt: Bool)
        case list
        case show(ref: String)
        case retry(ref: String)
        case discard(ref: String)
        case status
        case watch
        case sync(refresh: Bool)
        case stats
        case edit(ref: String, fields: ExpenseFields)
        case delete(ref: String)
        case resolve(ref: String, takeMine: Bool)
    }

    /// The ops, for `unknown_op` messages and the docs.
    public static let operations = ["add", "list", "show", "retry", "discard", "status", "watch", "sync", "stats", "edit", "delete", "resolve"]

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
            return .success(ControlRequest(id: id, command: try command(from: Fields(members))))
        } catch var failure {
            failure.id = id
            return .failure(failure)
        }
    }

    private static func command(from f: Fields) throws(ControlFailure) -> Command {
        guard let opValue = f.members["op"] else { throw ControlFailure(.missingField, "op is required", field: "op") }
        guard let op = opValue.stringValue else {
            throw ControlFailure(.invalidField, "op must be a string, got \(opValue.typeName)", field: "op")
        }
        switch op {
        case "add":
            try f.allow(["expense", "client_id", "receipt"])
            let clientID = try f.optionalString("client_id")
            if let clientID, !ClientID.isCanonical(clientID) {
                throw ControlFailure(.invalidField, "client_id must be a UUID in lowercase canonical form", field: "client_id")
            }
            let hasReceipt = try f.optionalBool("receipt") ?? false
            if f.members["expense"]?.isNull ?? true, !hasReceipt {
                throw ControlFailure(.missingField, "expense is required without a receipt: an object with merchant, amount, currency and date", field: "expense")
            }
            let given = try expenseFields(f.members["expense"], field: "expense", required: false)
            do {
                return .add(fields: try Validation.normalizedCreate(given, hasReceipt: hasReceipt), clientID: clientID, hasReceipt: hasReceipt)
            } catch {
                throw ControlFailure(error.isMissing ? .missingField : .invalidField, error.description, field: error.field)
            }
        case "list":
            try f.allow([])
            return .list
        case "show":
            try f.allow(["ref"])
            return .show(ref: try f.ref())
        case "retry":
            try f.allow(["ref"])
            return .retry(ref: try f.ref())
        case "discard":
            try f.allow(["ref"])
            return .discard(ref: try f.ref())
        case "status":
            try f.allow([])
            return .status
        case "watch":
            try f.allow([])
            return .watch
        case "sync":
            try f.allow(["refresh"])
            return .sync(refresh: try f.optionalBool("refresh") ?? false)
        case "stats":
            try f.allow([])
            return .stats
        case "edit":
            try f.allow(["ref", "set"])
            let ref = try f.ref()
            let fields = try expenseFields(f.members["set"], field: "set", required: true)
            if fields.isEmpty { throw ControlFailure(.invalidField, "set names no field to change", field: "set") }
            do {
                return .edit(ref: ref, fields: try Validation.normalized(fields, amountNeedsCurrency: false))
            } catch {
                throw ControlFailure(.invalidField, error.description, field: error.field)
            }
        case "delete":
            try f.allow(["ref"])
            return .delete(ref: try f.ref())
        case "resolve":
            try f.allow(["ref", "take"])
            let ref = try f.ref()
            guard let take = try f.optionalString("take") else {
                throw ControlFailure(.missingField, "take is required (\"server\" or \"mine\")", field: "take")
            }
            guard take == "server" || take == "mine" else {
                throw ControlFailure(.invalidField, "take must be \"server\" or \"mine\"", field: "take")
            }
            return .resolve(ref: ref, takeMine: take == "mine")
        default:
            throw ControlFailure(.unknownOp, "unknown op '\(op.prefix(64))'; known: \(operations.joined(separator: ", "))", field: "op")
        }
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

    func allow(_ names: Set<String>) throws(ControlFailure) {
        for key in members.keys.sorted() where key != "id" && key != "op" && !names.contains(key) {
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
