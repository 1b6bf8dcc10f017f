import ExpenseCore

/// One bill as ihatemoney 7.2.1's API lists it (`GET …/bills`), with what
/// expensed reads from it.
struct IhatemoneyBill: Sendable, Equatable {
    let id: Int64
    let payerID: Int64
    let owerIDs: [Int64]
    /// ihatemoney keeps amounts as floating point.
    let amount: Double
    let date: String
    let what: String
    let externalLink: String?
    let currency: String
    let creationDate: String?

    /// Reads a bill; nil when a member 7.2.1 always sends is missing or of another type.
    init?(json: JSONValue) {
        guard let id = json["id"]?.intValue, let payerID = json["payer_id"]?.intValue,
              let owers = json["owers"]?.arrayValue, let amount = Self.number(json["amount"]),
              let date = json["date"]?.stringValue, let what = json["what"]?.stringValue,
              let currency = json["original_currency"]?.stringValue else { return nil }
        let owerIDs = owers.compactMap { $0["id"]?.intValue }
        guard owerIDs.count == owers.count else { return nil }
        self.id = id
        self.payerID = payerID
        self.owerIDs = owerIDs
        self.amount = amount
        self.date = date
        self.what = what
        externalLink = json["external_link"]?.stringValue
        self.currency = currency
        creationDate = json["creation_date"]?.stringValue
    }

    private static func number(_ value: JSONValue?) -> Double? {
        switch value {
        case .integer(let i): Double(i)
        case .number(let d): d
        default: nil
        }
    }

    /// The transaction id and client id of the marker, when the bill carries one of ours.
    var marker: IhatemoneyMarker? { externalLink.flatMap(IhatemoneyMarker.init(link:)) }

    /// The expense this bill is, as the cache keeps it. ihatemoney keeps
    /// no category, tax tag or version: the version is 1 throughout, so
    /// the latest of a create's answer, an edit's and a refresh wins.
    func expense(marker: IhatemoneyMarker, receiptURL: String?) -> CanonicalExpense {
        let (merchant, comment) = IhatemoneyWhat.split(what)
        let fields = ExpenseFields(merchant: merchant, amount: IhatemoneyAmount.text(amount),
                                   currency: currency == "XXX" ? nil : currency, date: date, comment: comment)
        let stamp = creationDate.map { "\($0)T00:00:00Z" } ?? ""
        return CanonicalExpense(transactionID: marker.transactionID, clientID: marker.clientID, fields: fields, receiptURL: receiptURL,
                                createdAt: stamp, updatedAt: stamp)
    }
}

/// What a bill's `external_link` says about who made it:
/// `https://expensed.invalid/t/<transaction id>?client_id=<uuid>`. The
/// `.invalid` host (RFC 2606) never resolves, and ihatemoney takes only a
/// URL with a dotted host there.
struct IhatemoneyMarker: Sendable, Equatable {
    static let prefix = "https://expensed.invalid/t/"
    let transactionID: String
    let clientID: String

    init(transactionID: String, clientID: String) {
        self.transactionID = transactionID
        self.clientID = clientID
    }

    /// Reads a link this daemon wrote; nil for any other link.
    init?(link: String) {
        guard link.hasPrefix(Self.prefix) else { return nil }
        let rest = link.dropFirst(Self.prefix.count)
        let parts = rest.split(separator: "?", maxSplits: 1)
        guard let id = parts.first, id.count == 25, id.hasPrefix("cp-") else { return nil }
        transactionID = String(id)
        if parts.count == 2, parts[1].hasPrefix("client_id=") {
            clientID = String(parts[1].dropFirst("client_id=".count))
        } else {
            clientID = ""
        }
    }

    var link: String { "\(Self.prefix)\(transactionID)?client_id=\(clientID)" }
}

/// A bill's `what`: the merchant, then " — " and the comment when both are
/// there; either alone when the other is missing.
enum IhatemoneyWhat {
    static let separator = " — "

    static func make(merchant: String?, comment: String?) -> String {
        switch (merchant, comment) {
        case (let m?, let c?) where !c.isEmpty: m + separator + c
        case (let m?, _): m
        case (nil, let c?) where !c.isEmpty: separator + c
        default: "Receipt"
        }
    }

    static func split(_ what: String) -> (merchant: String?, comment: String?) {
        guard let range = what.firstRange(of: separator) else { return (what, nil) }
        let merchant = String(what[..<range.lowerBound])
        return (merchant.isEmpty ? nil : merchant, String(what[range.upperBound...]))
    }
}

/// ihatemoney's floating-point amounts as contract.md's decimal strings.
enum IhatemoneyAmount {
    static func text(_ amount: Double) -> String {
        let cents = Int64((amount * 100).rounded())
        let magnitude = cents.magnitude
        let fraction = String(magnitude % 100)
        return (cents < 0 ? "-" : "") + String(magnitude / 100) + "." + (fraction.count == 1 ? "0" + fraction : fraction)
    }
}
