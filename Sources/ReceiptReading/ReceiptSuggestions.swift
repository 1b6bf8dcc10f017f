import ExpenseCore

/// One field read from a receipt: what it is, how sure the reading is, and
/// where it came from. A suggestion, never a fact (system.md, invariant 12).
public struct Suggestion: Sendable, Equatable {
    /// In the form the field is stored: an amount `1450.50`, a currency
    /// `CHF`, a date `2026-03-12`, a merchant's name.
    public var value: String
    /// 0...1: the rule's own certainty times the reader's confidence in the
    /// words it used, rounded to hundredths.
    public var confidence: Double
    /// The line it was read from (an index into ``ReadText/lines``), if one.
    public var line: Int?
    /// Which rule gave it, in words: "the line labelled 'total'". Only the
    /// parser's own vocabulary appears here, never other text of the
    /// receipt, so a note may be logged.
    public var note: String

    public init(_ value: String, confidence: Double, line: Int? = nil, note: String) {
        self.value = value
        self.confidence = (min(1, max(0, confidence)) * 100).rounded() / 100
        self.line = line
        self.note = note
    }

    public var jsonValue: JSONValue {
        var members: [String: JSONValue] = ["value": .string(value), "confidence": .number(confidence), "note": .string(note)]
        if let line { members["line"] = .integer(Int64(line)) }
        return .object(members)
    }
}

/// A date the receipt writes so that it reads two ways (`03/04/2026`), when
/// neither the receipt, the setting nor the locale says which: both are
/// offered, neither is suggested.
public struct AmbiguousDate: Sendable, Equatable {
    public var dayFirst: String
    public var monthFirst: String
    public var line: Int

    public init(dayFirst: String, monthFirst: String, line: Int) {
        self.dayFirst = dayFirst
        self.monthFirst = monthFirst
        self.line = line
    }
}

/// What the parser read from one receipt's text. A field it did not find is
/// nil: never a guess.
public struct ReceiptSuggestions: Sendable, Equatable {
    /// The amount paid, as the expense's `amount` is written: with the
    /// suggested currency's minor units when there is one.
    public var total: Suggestion?
    public var currency: Suggestion?
    public var date: Suggestion?
    public var merchant: Suggestion?
    /// The date the receipt gives when it reads two ways and nothing decides.
    public var ambiguousDate: AmbiguousDate?

    public init(total: Suggestion? = nil, currency: Suggestion? = nil, date: Suggestion? = nil, merchant: Suggestion? = nil,
                ambiguousDate: AmbiguousDate? = nil) {
        self.total = total
        self.currency = currency
        self.date = date
        self.merchant = merchant
        self.ambiguousDate = ambiguousDate
    }

    /// The suggestions by the expense's field names (`amount` for the total).
    public var byField: [(field: String, suggestion: Suggestion)] {
        [("merchant", merchant), ("amount", total), ("currency", currency), ("date", date)].compactMap { name, value in
            value.map { (name, $0) }
        }
    }

    /// The edit that fills in, from these suggestions, the fields `current`
    /// does not have, and the names it fills: a field a person typed or a
    /// sidecar gave is never replaced. An amount is suggested only with a
    /// currency (the expense's own, or one suggested with it) that its
    /// digits suit; every value passes ``Validation``.
    public func filling(_ current: ExpenseFields) -> (change: ExpenseFields, fields: [String]) {
        var change = ExpenseFields()
        if current.merchant == nil, let merchant, (try? Validation.checkText(merchant.value, field: "merchant")) != nil {
            change.merchant = merchant.value
        }
        if current.date == nil, let date, (try? Validation.checkDate(date.value)) != nil { change.date = date.value }
        let currency = current.currency ?? currency?.value
        if current.currency == nil, let suggested = self.currency?.value, (try? Validation.checkCurrency(suggested)) != nil {
            change.currency = suggested
        }
        if current.amount == nil, let total, let currency, (try? Validation.checkAmount(total.value, currency: currency)) != nil {
            change.amount = Validation.canonicalAmount(total.value, currency: currency)
        }
        // A currency alone, for an amount the person typed in another, is no help: keep theirs.
        if current.amount != nil && current.currency == nil && change.currency != nil,
           let amount = current.amount, let code = change.currency, (try? Validation.checkAmount(amount, currency: code)) == nil {
            change.currency = nil
        }
        return (change, change.setNames)
    }

    /// `{"amount": {...}, "currency": {...}, ...}` by the expense's field
    /// names, absent fields left out, and `ambiguous_date` when there is
    /// one: for the journal and `--json`.
    public var jsonValue: JSONValue {
        var members: [String: JSONValue] = [:]
        for (field, suggestion) in byField { members[field] = suggestion.jsonValue }
        if let ambiguousDate {
            members["ambiguous_date"] = .object(["day_first": .string(ambiguousDate.dayFirst), "month_first": .string(ambiguousDate.monthFirst),
                                                 "line": .integer(Int64(ambiguousDate.line))])
        }
        return .object(members)
    }
}
