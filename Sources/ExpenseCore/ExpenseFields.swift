/// The fields a person enters for an expense. Every one may be absent: a
/// receipt-only expense has none until someone fills them in.
public struct ExpenseFields: Sendable, Equatable {
    public var merchant: String?
    public var amount: String?
    public var currency: String?
    public var date: String?
    public var category: String?
    public var comment: String?
    public var taxTag: String?

    public init(merchant: String? = nil, amount: String? = nil, currency: String? = nil, date: String? = nil,
                category: String? = nil, comment: String? = nil, taxTag: String? = nil) {
        self.merchant = merchant
        self.amount = amount
        self.currency = currency
        self.date = date
        self.category = category
        self.comment = comment
        self.taxTag = taxTag
    }

    /// The JSON names of the fields, in display order.
    public static let names = ["merchant", "amount", "currency", "date", "category", "comment", "tax_tag"]

    public subscript(name: String) -> String? {
        get {
            switch name {
            case "merchant": merchant
            case "amount": amount
            case "currency": currency
            case "date": date
            case "category": category
            case "comment": comment
            case "tax_tag": taxTag
            default: nil
            }
        }
        set {
            switch name {
            case "merchant": merchant = newValue
            case "amount": amount = newValue
            case "currency": currency = newValue
            case "date": date = newValue
            case "category": category = newValue
            case "comment": comment = newValue
            case "tax_tag": taxTag = newValue
            default: break
            }
        }
    }

    /// The names of the fields that are set, in display order.
    public var setNames: [String] { Self.names.filter { self[$0] != nil } }

    /// The set fields as JSON members, by their JSON names.
    public var jsonMembers: [String: JSONValue] {
        var members: [String: JSONValue] = [:]
        for name in Self.names { if let value = self[name] { members[name] = .string(value) } }
        return members
    }

    /// The string members of `json` named like fields; anything else is left unset.
    public init(jsonMembers json: JSONValue?) {
        self.init()
        for name in Self.names { self[name] = json?[name]?.stringValue }
    }

    /// True when no field is set.
    public var isEmpty: Bool { Self.names.allSatisfy { self[$0] == nil } }

    /// `other`'s set fields written over these (a later edit wins per field).
    public func merging(_ other: ExpenseFields) -> ExpenseFields {
        var result = self
        for name in Self.names where other[name] != nil { result[name] = other[name] }
        return result
    }
}

/// A field that failed validation: which one, and why (never its value,
/// which may be personal data; the caller knows what it sent).
public struct FieldError: Error, Sendable, Equatable, CustomStringConvertible {
    public let field: String
    public let reason: String
    public init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }
    public var description: String { "\(field): \(reason)" }
}

/// The rules every interface applies before anything is stored or sent.
public enum Validation {
    /// Longest text, in Unicode scalars, each field accepts.
    public static let maximumLength: [String: Int] = [
        "merchant": 200, "category": 100, "comment": 2000, "tax_tag": 64,
    ]

    /// Checks each set field on its own, and that an amount comes with a
    /// currency. An edit may change an amount alone (`amountNeedsCurrency:
    /// false`): its digits are then checked against the merged expense later.
    /// - Throws: the first ``FieldError`` found, in field order.
    public static func check(_ fields: ExpenseFields, amountNeedsCurrency: Bool = true) throws(FieldError) {
        for name in ["merchant", "category", "comment", "tax_tag"] {
            if let value = fields[name] { try checkText(value, field: name) }
        }
        if let currency = fields.currency { try checkCurrency(currency) }
        if let amount = fields.amount {
            if let currency = fields.currency {
                try checkAmount(amount, currency: currency)
            } else if amountNeedsCurrency {
                throw FieldError(field: "amount", reason: "an amount needs a currency")
            } else {
                try checkAmount(amount, currency: nil)
            }
        }
        if let date = fields.date { try checkDate(date) }
    }

    /// Checks an expense that is about to be created: valid fields, and
    /// either all of merchant, amount, currency and date, or a receipt.
    public static func checkCreate(_ fields: ExpenseFields, hasReceipt: Bool) throws(FieldError) {
        try check(fields)
        if !hasReceipt {
            let missing = ["merchant", "amount", "currency", "date"].filter { fields[$0] == nil }
            if let first = missing.first {
                let others = missing.dropFirst()
                throw FieldError(field: first, reason: others.isEmpty ? "required for an expense without a receipt"
                                 : "required for an expense without a receipt, as are \(others.joined(separator: ", "))")
            }
        }
    }

    public static func checkText(_ value: String, field: String) throws(FieldError) {
        let limit = maximumLength[field] ?? 200
        let count = value.unicodeScalars.count
        if count > limit { throw FieldError(field: field, reason: "longer than \(limit) characters (\(count))") }
        if value.trimmingSpaces().isEmpty && field != "comment" {
            throw FieldError(field: field, reason: "must not be empty")
        }
        let allowsLineBreaks = field == "comment"
        for scalar in value.unicodeScalars where scalar.value < 0x20 || scalar.value == 0x7F {
            if allowsLineBreaks && (scalar == "\n" || scalar == "\t") { continue }
            throw FieldError(field: field, reason: "contains a control character (U+\(String(scalar.value, radix: 16, uppercase: true)))")
        }
    }

    public static func checkCurrency(_ code: String) throws(FieldError) {
        guard code.utf8.count == 3, code.utf8.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }) else {
            throw FieldError(field: "currency", reason: "must be three uppercase letters (ISO 4217), like EUR")
        }
        guard Currency.isKnown(code) else {
            throw FieldError(field: "currency", reason: "'\(code)' is not an ISO 4217 currency code")
        }
    }

    /// A decimal string: optional `-`, 1–12 integer digits without leading
    /// zeros, and at most as many fraction digits as the currency has.
    /// Without a currency, up to four fraction digits pass (the most any has).
    public static func checkAmount(_ amount: String, currency: String?) throws(FieldError) {
        let reason = "must be a decimal string like 12.50 or -3.00"
        var bytes = Array(amount.utf8)[...]
        if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        let parts = bytes.split(separator: UInt8(ascii: "."), maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        guard !whole.isEmpty, whole.allSatisfy(isDigit) else { throw FieldError(field: "amount", reason: reason) }
        guard whole.count == 1 || whole.first != UInt8(ascii: "0") else {
            throw FieldError(field: "amount", reason: "has a leading zero")
        }
        guard whole.count <= 12 else { throw FieldError(field: "amount", reason: "is too large (more than 12 integer digits)") }
        if parts.count == 2 {
            let fraction = parts[1]
            guard !fraction.isEmpty, fraction.allSatisfy(isDigit) else { throw FieldError(field: "amount", reason: reason) }
            let allowed = currency.flatMap(Currency.minorUnits) ?? 4
            if fraction.count > allowed {
                let digits = fraction.count == 1 ? "1 fraction digit" : "\(fraction.count) fraction digits"
                throw FieldError(field: "amount", reason: "has \(digits); \(currency ?? "no currency") allows \(allowed)")
            }
        }
    }

    /// A real calendar date, `YYYY-MM-DD`, from 1900 to 9999.
    public static func checkDate(_ date: String) throws(FieldError) {
        let b = Array(date.utf8)
        guard b.count == 10, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
              b[0..<4].allSatisfy(isDigit), b[5..<7].allSatisfy(isDigit), b[8..<10].allSatisfy(isDigit) else {
            throw FieldError(field: "date", reason: "must be YYYY-MM-DD")
        }
        let year = number(b[0..<4]), month = number(b[5..<7]), day = number(b[8..<10])
        guard year >= 1900 else { throw FieldError(field: "date", reason: "year \(year) is before 1900") }
        guard (1...12).contains(month) else { throw FieldError(field: "date", reason: "month \(month) does not exist") }
        guard day >= 1 && day <= daysIn(month: month, year: year) else {
            throw FieldError(field: "date", reason: "\(date) is not a calendar date")
        }
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

private func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
private func number(_ digits: ArraySlice<UInt8>) -> Int { digits.reduce(0) { $0 * 10 + Int($1 - 0x30) } }

extension String {
    /// This string padded on the left with `pad` to `width` characters.
    public func leftPadded(_ width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }

    /// This string without white space at either end.
    public func trimmingSpaces() -> String {
        var s = Substring(self)
        while s.first?.isWhitespace == true { s.removeFirst() }
        while s.last?.isWhitespace == true { s.removeLast() }
        return String(s)
    }
}
