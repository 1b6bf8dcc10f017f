/// What `list` asks for: which expenses, in what order, which page, and
/// whether to total them. The daemon runs it as SQL over its listing
/// index (`OutboxStore`'s `ListingQuery`); `expensectl`'s options and the
/// control protocol's `list` members both become one of these, through
/// the same checks (``check()``, and the parsers of each kind of value),
/// so a bad value is refused the same way from either side.
public struct ListQuery: Sendable, Equatable {
    /// Which expenses by their state; `conflict` is an expense the server
    /// flagged, whatever its pending work.
    public enum State: String, Sendable, CaseIterable {
        case queued, sending, synced, needsAttention = "needs_attention", conflict, deleting

        /// `needs_attention` or `needs-attention` (the command line's spelling).
        /// - Parameter dashed: name the known states as the command line
        ///   spells them (`needs-attention`) when refusing `text`.
        public init(parsing text: String, dashed: Bool = false) throws(FieldError) {
            guard let state = State(rawValue: String(text.map { $0 == "-" ? "_" : $0 })) else {
                let known = State.allCases.map { dashed ? $0.rawValue.replacing("_", with: "-") : $0.rawValue }
                throw FieldError(field: "state", reason: "unknown state '\(text.prefix(64))'; known: \(known.joined(separator: ", "))")
            }
            self = state
        }
    }

    /// The order of a page; every order ends with the transaction id, so
    /// pages never overlap or skip an expense with an equal key.
    public enum Sort: String, Sendable, CaseIterable {
        /// The expense's date (expenses without one first).
        case date
        /// The amount's value, whatever its currency (expenses without one first).
        case amount
        /// The merchant, ignoring case (expenses without one first).
        case merchant
        /// When the expense was added: the server's time once synced, the
        /// device's before. The default.
        case added

        public init(parsing text: String) throws(FieldError) {
            guard let sort = Sort(rawValue: text) else {
                throw FieldError(field: "sort", reason: "unknown sort '\(text.prefix(64))'; known: \(Sort.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            self = sort
        }
    }

    /// The most expenses one page may hold.
    public static let maximumLimit = 100_000

    public var state: State?
    /// Only expenses missing a merchant, an amount or a date.
    public var incomplete = false
    /// Expense dates from `since` to `until`, both included (`YYYY-MM-DD`).
    public var since: String?
    public var until: String?
    /// Merchants containing this text, ignoring case.
    public var merchant: String?
    /// This category exactly, ignoring case.
    public var category: String?
    public var sort: Sort = .added
    public var reverse = false
    /// At most this many expenses (1 to ``maximumLimit``); nil for all.
    public var limit: Int?
    /// Expenses to skip before the page.
    public var offset = 0
    /// Whether to total the amounts of every matching expense (all pages) per currency.
    public var totals = false

    public init(state: State? = nil, incomplete: Bool = false, since: String? = nil, until: String? = nil, merchant: String? = nil,
                category: String? = nil, sort: Sort = .added, reverse: Bool = false, limit: Int? = nil, offset: Int = 0, totals: Bool = false) {
        self.state = state
        self.incomplete = incomplete
        self.since = since
        self.until = until
        self.merchant = merchant
        self.category = category
        self.sort = sort
        self.reverse = reverse
        self.limit = limit
        self.offset = offset
        self.totals = totals
    }

    /// Checks the values the types do not: dates, texts, the page.
    /// - Throws: the first ``FieldError``, named like the protocol's member.
    public func check() throws(FieldError) {
        for (name, date) in [("since", since), ("until", until)] {
            guard let date else { continue }
            do {
                try Validation.checkDate(date)
            } catch {
                throw FieldError(field: name, reason: error.reason)
            }
        }
        if let since, let until, since > until {
            throw FieldError(field: "until", reason: "\(until) is before since (\(since))")
        }
        for (name, text) in [("merchant", merchant), ("category", category)] {
            guard let text else { continue }
            do {
                try Validation.checkText(text, field: name)
            } catch {
                throw FieldError(field: name, reason: error.reason)
            }
        }
        if let limit, !(1...Self.maximumLimit).contains(limit) {
            throw FieldError(field: "limit", reason: "must be from 1 to \(Self.maximumLimit), got \(limit)")
        }
        if offset < 0 { throw FieldError(field: "offset", reason: "must not be negative, got \(offset)") }
    }

    /// A count from the command line or a request: digits only.
    /// - Throws: a ``FieldError`` for `field` saying what was wrong.
    public static func parseCount(_ text: String, field: String) throws(FieldError) -> Int {
        let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int(text) else {
            throw FieldError(field: field, reason: "must be a whole number, got '\(text.prefix(64))'")
        }
        return value
    }
}
