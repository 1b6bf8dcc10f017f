import ExpenseCore

/// The beancount transaction for a create, as fava's `add_entries` reads
/// it: payee the merchant, narration the comment, the expense account
/// (from the category) debited and the funding account credited, linked
/// `^<transaction id>`, with `transaction_id` and `client_id` metadata.
struct FavaTransaction: Sendable, Equatable {
    let transactionID: String
    let fields: ExpenseFields
    let date: String
    let expenseAccount: String
    let fundingAccount: String
    let amount: String
    let currency: String

    /// Nil for an expense without an amount or currency: beancount has no
    /// transaction without them.
    init?(job: OutboxJob, expenseTemplate: String, funding: String) {
        guard let amount = job.fields.amount, let currency = job.fields.currency else { return nil }
        transactionID = job.transactionID
        fields = job.fields
        date = job.fields.date ?? String(Timestamp.format(milliseconds: job.createdMilliseconds).prefix(10))
        expenseAccount = BeancountAccount.expand(expenseTemplate, category: job.fields.category)
        fundingAccount = funding
        self.amount = amount
        self.currency = currency
        clientID = job.uuid
    }

    let clientID: String

    var json: JSONValue {
        let negated = amount.hasPrefix("-") ? String(amount.dropFirst()) : "-" + amount
        return [
            "t": "Transaction",
            "date": .string(date),
            "flag": "*",
            "payee": .string(fields.merchant ?? ""),
            "narration": .string(fields.comment ?? ""),
            "tags": [],
            "links": .array([.string(transactionID)]),
            "meta": ["transaction_id": .string(transactionID), "client_id": .string(clientID)],
            "postings": .array([
                ["account": .string(expenseAccount), "amount": .string("\(amount) \(currency)")],
                ["account": .string(fundingAccount), "amount": .string("\(negated) \(currency)")],
            ]),
        ]
    }

    /// The expense as the ledger now holds it.
    func expense(clientID: String, now: String) -> CanonicalExpense {
        var stored = fields
        stored.date = date
        stored.taxTag = nil
        return CanonicalExpense(transactionID: transactionID, clientID: clientID, fields: stored, createdAt: now, updatedAt: now)
    }
}

/// One of our transactions as a query finds it: its postings folded into one.
struct FavaEntry: Sendable, Equatable {
    /// fava's entry hash (`id`), what `add_document` links to.
    let hash: String
    let transactionID: String
    let clientID: String
    let date: String
    let payee: String?
    let narration: String
    /// The posting that is not the funding account's.
    let expenseAccount: String
    let amount: String?
    let currency: String?

    func expense(receiptURL: String?) -> CanonicalExpense {
        let category = expenseAccount.split(separator: ":").last.map(String.init)
        let fields = ExpenseFields(merchant: payee?.isEmpty == true ? nil : payee, amount: amount, currency: currency, date: date,
                                   category: category, comment: narration.isEmpty ? nil : narration)
        return CanonicalExpense(transactionID: transactionID, clientID: clientID, fields: fields, receiptURL: receiptURL,
                                createdAt: "\(date)T00:00:00Z", updatedAt: "\(date)T00:00:00Z")
    }

    /// Reads fava's query answer (`{"t": "table", "types": [...], "rows": [[...]]}`)
    /// for FavaBackend's query: a row per posting, grouped by entry. Nil when
    /// it is not that shape. fava 1.30 sends missing metadata as the string
    /// `"None"`, so a value that is not a transaction id (a UUID for
    /// `client_id`) counts as missing: an entry without `transaction_id` is
    /// `lookedUp`'s when given (the query found it by its link), else not
    /// ours and left out; one without `client_id` takes `lookedUp`'s.
    static func entries(fromQuery data: JSONValue, funding: String, lookedUp: (transactionID: String, clientID: String?)? = nil) -> [FavaEntry]? {
        guard let rows = data["rows"]?.arrayValue else { return nil }
        var order: [String] = []
        var byHash: [String: [[JSONValue]]] = [:]
        for row in rows {
            guard let cells = row.arrayValue, cells.count == 9, let hash = cells[0].stringValue else { return nil }
            if byHash[hash] == nil { order.append(hash) }
            byHash[hash, default: []].append(cells)
        }
        var out: [FavaEntry] = []
        for hash in order {
            let postings = byHash[hash] ?? []
            guard let first = postings.first, let date = first[1].stringValue else { return nil }
            guard let transactionID = first[4].stringValue.flatMap({ TransactionID.isValid($0) ? $0 : nil }) ?? lookedUp?.transactionID else { continue }
            let clientID = first[5].stringValue.flatMap { $0.utf8.count == 36 ? $0 : nil }
                ?? (transactionID == lookedUp?.transactionID ? lookedUp?.clientID ?? nil : nil) ?? ""
            let expense = postings.first { $0[6].stringValue != funding } ?? first
            out.append(FavaEntry(hash: hash, transactionID: transactionID, clientID: clientID, date: String(date.prefix(10)),
                                 payee: first[2].stringValue, narration: first[3].stringValue ?? "",
                                 expenseAccount: expense[6].stringValue ?? "", amount: Self.decimal(expense[7]), currency: expense[8].stringValue))
        }
        return out
    }

    /// A number as fava serialises a Decimal: a string or a JSON number.
    static func decimal(_ value: JSONValue) -> String? {
        switch value {
        case .string(let s): return s == "None" ? nil : s
        case .integer(let i): return String(i)
        case .number(let d): return String(d)
        default: return nil
        }
    }
}

/// Percent-encoding for a query string.
enum FavaQuery {
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        let hex = Array("0123456789ABCDEF")
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 15)])
            }
        }
        return out
    }
}

/// A `multipart/form-data` body (RFC 7578), as fava's `add_document` reads it.
struct MultipartForm: Sendable {
    /// Unique per body; never inside a receipt by chance (a UUID-like stamp).
    let boundary = "expensed-" + String(UInt64.random(in: 0...UInt64.max), radix: 16) + String(UInt64.random(in: 0...UInt64.max), radix: 16)
    private var parts: [UInt8] = []

    var contentType: (String, String) { ("Content-Type", "multipart/form-data; boundary=\(boundary)") }

    mutating func add(_ name: String, _ value: String) {
        parts += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8)
    }

    mutating func addFile(_ name: String, filename: String, contentType: String, bytes: [UInt8]) {
        parts += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"; filename=\"\(filename)\"\r\nContent-Type: \(contentType)\r\n\r\n".utf8)
        parts += bytes
        parts += Array("\r\n".utf8)
    }

    var bytes: [UInt8] { parts + Array("--\(boundary)--\r\n".utf8) }
}
