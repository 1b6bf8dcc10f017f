/// One value the server kept and the one the client sent, for a field the
/// server refused to overwrite silently (contract.md, `PATCH`).
public struct ConflictValues: Sendable, Equatable {
    public var server: String?
    public var client: String?
    public init(server: String?, client: String?) {
        self.server = server
        self.client = client
    }
}

extension ConflictValues {
    /// `{"currency": {"server": "EUR", "client": "USD"}}`, keys sorted.
    public static func encode(_ conflicts: [String: ConflictValues]) -> String {
        var writer = JSONWriter()
        writeConflicts(conflicts, to: &writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Reads what ``encode(_:)`` wrote; anything else is no conflict.
    public static func decode(_ text: String) -> [String: ConflictValues] {
        guard text != "{}", let value = try? JSONValue.parse(Array(text.utf8)) else { return [:] }
        return decode(value)
    }

    /// The `conflicts` member of an expense as JSON; anything else is no conflict.
    public static func decode(_ value: JSONValue) -> [String: ConflictValues] {
        guard case .object(let members) = value else { return [:] }
        return members.mapValues { ConflictValues(server: $0["server"]?.stringValue, client: $0["client"]?.stringValue) }
    }
}

/// The server's truth about one expense (contract.md, "The canonical expense").
public struct CanonicalExpense: Sendable, Equatable {
    public var transactionID: String
    public var clientID: String
    public var merchant: String?
    public var amount: String?
    public var currency: String?
    public var date: String?
    public var category: String?
    public var comment: String?
    public var taxTag: String?
    public var receiptURL: String?
    public var assigned: Bool
    public var version: Int
    public var createdAt: String
    public var updatedAt: String
    public var deleted: Bool
    public var conflict: Bool
    public var conflicts: [String: ConflictValues]

    public init(transactionID: String, clientID: String, fields: ExpenseFields = ExpenseFields(),
                receiptURL: String? = nil, assigned: Bool = false, version: Int = 1,
                createdAt: String, updatedAt: String, deleted: Bool = false,
                conflict: Bool = false, conflicts: [String: ConflictValues] = [:]) {
        self.transactionID = transactionID
        self.clientID = clientID
        self.merchant = fields.merchant
        self.amount = fields.amount
        self.currency = fields.currency
        self.date = fields.date
        self.category = fields.category
        self.comment = fields.comment
        self.taxTag = fields.taxTag
        self.receiptURL = receiptURL
        self.assigned = assigned
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.deleted = deleted
        self.conflict = conflict
        self.conflicts = conflicts
    }

    /// The editable fields as one value.
    public var fields: ExpenseFields {
        get { ExpenseFields(merchant: merchant, amount: amount, currency: currency, date: date,
                            category: category, comment: comment, taxTag: taxTag) }
        set {
            merchant = newValue.merchant; amount = newValue.amount; currency = newValue.currency
            date = newValue.date; category = newValue.category; comment = newValue.comment; taxTag = newValue.taxTag
        }
    }
}

extension CanonicalExpense {
    /// Reads the contract's shape from parsed JSON (unknown members are
    /// ignored, absent ones take their defaults); `nil` without a
    /// transaction id or when a member has the wrong type.
    public init?(json: JSONValue) {
        guard case .object(let o) = json, let transactionID = o["transaction_id"]?.stringValue else { return nil }
        func text(_ key: String) -> String?? {
            switch o[key] {
            case nil, .null?: return .some(nil)
            case .string(let s)?: return .some(s)
            default: return nil
            }
        }
        func flag(_ key: String) -> Bool? {
            switch o[key] {
            case nil, .null?: return false
            case .bool(let b)?: return b
            default: return nil
            }
        }
        guard let merchant = text("merchant"), let amount = text("amount"), let currency = text("currency"),
              let date = text("date"), let category = text("category"), let comment = text("comment"),
              let taxTag = text("tax_tag"), let receiptURL = text("receipt_url"), let clientID = text("client_id"),
              let createdAt = text("created_at"), let updatedAt = text("updated_at"),
              let assigned = flag("assigned"), let deleted = flag("deleted"), let conflict = flag("conflict") else { return nil }
        let conflicts = o["conflicts"].map(ConflictValues.decode) ?? [:]
        let version = o["version"].flatMap(\.intValue).map(Int.init) ?? 1
        self.init(transactionID: transactionID, clientID: clientID ?? "",
                  fields: ExpenseFields(merchant: merchant, amount: amount, currency: currency, date: date,
                                        category: category, comment: comment, taxTag: taxTag),
                  receiptURL: receiptURL, assigned: assigned, version: version, createdAt: createdAt ?? "",
                  updatedAt: updatedAt ?? "", deleted: deleted, conflict: conflict, conflicts: conflicts)
    }
}
