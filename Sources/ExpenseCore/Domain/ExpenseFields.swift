/// The fields a person enters for an expense. Every one may be absent: a
/// receipt-only expense has none until someone fills them in. An edit may
/// also clear a field (set it to null): those names are in ``cleared``.
public struct ExpenseFields: Sendable, Equatable {
    public var merchant: String?
    public var amount: String?
    public var currency: String?
    public var date: String?
    public var category: String?
    public var comment: String?
    public var taxTag: String?
    /// Fields this change sets to null (an edit's `"comment": null`). A
    /// name here never also has a value: setting one through the
    /// subscript takes it out.
    public private(set) var cleared: Set<String> = []

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

    /// The fields an expense may go without once it has them: the only
    /// ones a change may clear. Merchant, amount, currency and date are
    /// what a synced expense is; a change gives them new values instead.
    public static let optionalNames: Set<String> = ["category", "comment", "tax_tag"]

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
            cleared.remove(name)
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

    /// Sets `name` to null: this change clears it.
    public mutating func clear(_ name: String) {
        guard Self.names.contains(name) else { return }
        self[name] = nil
        cleared.insert(name)
    }

    /// The names of the fields that are set, in display order.
    public var setNames: [String] { Self.names.filter { self[$0] != nil } }

    /// The names this change touches, set or cleared, in display order.
    public var changedNames: [String] { Self.names.filter { self[$0] != nil || cleared.contains($0) } }

    /// The set fields as JSON members, by their JSON names, and the cleared
    /// ones as null (the contract's PATCH clears a field sent as null).
    public var jsonMembers: [String: JSONValue] {
        var members: [String: JSONValue] = [:]
        for name in Self.names {
            if let value = self[name] { members[name] = .string(value) } else if cleared.contains(name) { members[name] = .null }
        }
        return members
    }

    /// The string members of `json` named like fields, and those that are
    /// null as cleared; anything else is left unset.
    public init(jsonMembers json: JSONValue?) {
        self.init()
        for name in Self.names {
            switch json?[name] {
            case .string(let value)?: self[name] = value
            case .null?: clear(name)
            default: break
            }
        }
    }

    /// True when no field is set or cleared.
    public var isEmpty: Bool { changedNames.isEmpty }

    /// `other`'s changes written over these (a later edit wins per field,
    /// a clear included).
    public func merging(_ other: ExpenseFields) -> ExpenseFields {
        var result = self
        for name in Self.names {
            if let value = other[name] { result[name] = value } else if other.cleared.contains(name) { result.clear(name) }
        }
        return result
    }

    /// The values alone: what an expense holds, or what a create sends, where
    /// a cleared field and an absent one are the same null.
    public var values: ExpenseFields {
        var result = self
        result.cleared = []
        return result
    }
}

/// A field that failed validation: which one, and why (never its value,
/// which may be personal data; the caller knows what it sent).
public struct FieldError: Error, Sendable, Equatable, CustomStringConvertible {
    public let field: String
    public let reason: String
    /// The field is required here and absent, rather than wrong (the
    /// control protocol's `missing_field` against `invalid_field`).
    public let isMissing: Bool

    public init(field: String, reason: String, isMissing: Bool = false) {
        self.field = field
        self.reason = reason
        self.isMissing = isMissing
    }
    public var description: String { "\(field): \(reason)" }
}

/// The rules every interface applies before anything is stored or sent,
/// and the one form each value is stored and sent in. The control socket,
/// the spool and the store all go through ``normalized(_:amountNeedsCurrency:)``
/// and its create and edit variants, so an expense looks the same whichever
/// way it came in.
public enum Validation {
    /// Longest text, in Unicode scalars, each field accepts.
    public static let maximumLength: [String: Int] = [
        "merchant": 200, "category": 100, "comment": 2000, "tax_tag": 64,
    ]

    /// Checks each set field on its own, that only optional fields are
    /// cleared, and that an amount comes with a currency. An edit may
    /// change an amount alone (`amountNeedsCurrency: false`): its digits
    /// are then checked against the merged expense later.
    /// - Throws: the first ``FieldError`` found, in field order.
    public static func check(_ fields: ExpenseFields, amountNeedsCurrency: Bool = true) throws(FieldError) {
        for name in ExpenseFields.names where fields.cleared.contains(name) && !ExpenseFields.optionalNames.contains(name) {
            throw FieldError(field: name, reason: "cannot be cleared, only changed (category, comment and tax_tag can be cleared)")
        }
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

    /// A change as it is stored and sent: an optional field given as empty
    /// or blank text is cleared (no comment has one spelling: null), a
    /// currency code is upper case whatever case it came in, each
    /// field is checked (``check(_:amountNeedsCurrency:)``), and an amount
    /// whose currency is given is written with that currency's minor units
    /// (`10` EUR is `10.00`, `10` JPY stays `10`, `1.5` KWD is `1.500`).
    /// - Throws: the first ``FieldError`` found.
    public static func normalized(_ fields: ExpenseFields, amountNeedsCurrency: Bool = true) throws(FieldError) -> ExpenseFields {
        var result = fields
        for name in ExpenseFields.names where ExpenseFields.optionalNames.contains(name) {
            if let value = result[name], value.trimmingSpaces().isEmpty { result.clear(name) }
        }
        // A currency code in any case is the one in upper case (`eur` is EUR).
        if let currency = result.currency {
            result.currency = String(decoding: currency.utf8.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }, as: UTF8.self)
        }
        try check(result, amountNeedsCurrency: amountNeedsCurrency)
        if let amount = result.amount, let currency = result.currency {
            result.amount = canonicalAmount(amount, currency: currency)
        }
        return result
    }

    /// An expense about to be created, as it is stored and sent:
    /// ``normalized(_:amountNeedsCurrency:)``, with either all of merchant,
    /// amount, currency and date, or a receipt. A cleared field is simply
    /// absent from a create.
    /// - Throws: the first ``FieldError`` found; a missing field's says so (``FieldError/isMissing``).
    public static func normalizedCreate(_ fields: ExpenseFields, hasReceipt: Bool) throws(FieldError) -> ExpenseFields {
        // What is missing first: an amount without its currency is missing
        // the currency, not an invalid amount.
        if !hasReceipt {
            let missing = ["merchant", "amount", "currency", "date"].filter { fields[$0] == nil }
            if let first = missing.first {
                let others = Array(missing.dropFirst())
                let also = switch others.count {
                case 0: ""
                case 1: ", as is \(others[0])"
                default: ", as are \(others.dropLast().joined(separator: ", ")) and \(others[others.count - 1])"
                }
                throw FieldError(field: first, reason: "required for an expense without a receipt\(also)", isMissing: true)
            }
        }
        return try normalized(fields).values
    }

    /// Checks an expense that is about to be created (see ``normalizedCreate(_:hasReceipt:)``).
    public static func checkCreate(_ fields: ExpenseFields, hasReceipt: Bool) throws(FieldError) {
        _ = try normalizedCreate(fields, hasReceipt: hasReceipt)
    }

    /// An edit of `current` (the expense as it shows, pending work folded
    /// in), as it is stored and sent: ``normalized(_:amountNeedsCurrency:)``;
    /// the expense it makes must be valid; and an amount given without a
    /// currency takes the minor units of the currency the expense has. (A
    /// currency changed alone leaves the amount's digits as they are: they
    /// are valid for it, or the edit is refused.)
    /// - Throws: the first ``FieldError`` found.
    public static func normalizedEdit(_ change: ExpenseFields, of current: ExpenseFields) throws(FieldError) -> ExpenseFields {
        var result = try normalized(change, amountNeedsCurrency: false)
        let merged = current.values.merging(result).values
        try check(merged)
        if let amount = result.amount, let currency = merged.currency {
            result.amount = canonicalAmount(amount, currency: currency)
        }
        return result
    }

    /// `amount` (valid for `currency`) with as many fraction digits as the
    /// currency has: `10` and `10.5` EUR are `10.00` and `10.50`.
    public static func canonicalAmount(_ amount: String, currency: String) -> String {
        guard let digits = Currency.minorUnits(currency), digits > 0 else { return amount }
        let parts = amount.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let fraction = parts.count == 2 ? parts[1] : ""
        guard fraction.count < digits else { return amount }
        return String(parts[0]) + "." + String(fraction) + String(repeating: "0", count: digits - fraction.count)
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
            let hex = String(scalar.value, radix: 16, uppercase: true)
            throw FieldError(field: field, reason: "contains a control character (U+\(String(repeating: "0", count: 4 - hex.count))\(hex))")
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
        // "-0" is a valid decimal that no amount means: zero has one spelling.
        if bytes.count < amount.utf8.count && bytes.allSatisfy({ $0 == UInt8(ascii: "0") || $0 == UInt8(ascii: ".") }) {
            throw FieldError(field: "amount", reason: "is a negative zero; write 0")
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
