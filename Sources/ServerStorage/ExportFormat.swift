import ExpenseCore

/// How `expense-server export` and the web interface's export write
/// expenses, one line per expense, so that any number of them streams.
public enum ExportFormat: String, Sendable, CaseIterable {
    /// RFC 4180: UTF-8, CRLF line ends, a header row, a field quoted when
    /// it holds a comma, a quote, a line break or surrounding spaces.
    case csv
    /// JSON lines: `{"user": NAME, "expense": {the contract's shape}}`.
    case jsonl

    /// The CSV columns, in order.
    public static let csvColumns = [
        "transaction_id", "user", "date", "merchant", "amount", "currency", "category", "comment", "tax_tag",
        "receipt_url", "receipt_type", "receipt_sha256", "receipt_size", "version", "created_at", "updated_at", "deleted", "conflict",
    ]

    public var contentType: String {
        switch self {
        case .csv: "text/csv; charset=utf-8; header=present"
        case .jsonl: "application/jsonl; charset=utf-8"
        }
    }

    /// What comes before the first expense.
    public var header: [UInt8] {
        switch self {
        case .csv: Array((Self.csvColumns.joined(separator: ",") + "\r\n").utf8)
        case .jsonl: []
        }
    }

    /// One expense, its line end included. Amounts are the stored decimal
    /// text, with exactly their currency's minor units (`12.50` EUR, `1200` JPY).
    /// - Parameter receiptBase: put before a receipt's path (`https://host`), or empty.
    public func line(_ listed: ListedExpense, receiptBase: String = "") -> [UInt8] {
        var e = listed.stored.expense
        let receipt = listed.stored.receipt
        e.receiptURL = e.receiptURL.map { _ in receiptBase + Self.receiptPath(e.transactionID) }
        switch self {
        case .csv:
            let fields: [String?] = [
                e.transactionID, listed.userName, e.date, e.merchant, e.amount, e.currency, e.category, e.comment, e.taxTag,
                e.receiptURL, receipt?.contentType, receipt?.sha256, receipt.map { String($0.size) },
                String(e.version), e.createdAt, e.updatedAt, e.deleted ? "true" : "false", e.conflict ? "true" : "false",
            ]
            return Array((fields.map { Self.csvField($0 ?? "") }.joined(separator: ",") + "\r\n").utf8)
        case .jsonl:
            var writer = JSONWriter()
            writer.beginObject()
            writer.member("user", listed.userName)
            writer.key("expense")
            e.write(to: &writer)
            writer.endObject()
            return writer.bytes + [0x0A]
        }
    }

    /// Where an export points at a receipt: the web interface's receipt
    /// route, which a browser signed in as its owner or an admin opens
    /// (the API's `receipt_url` needs a bearer token, which a person
    /// following a link from a spreadsheet does not have).
    public static func receiptPath(_ transactionID: String) -> String {
        "/expenses/\(transactionID)/receipt"
    }

    /// What goes before each receipt's path: `text` without a trailing
    /// `/`, when it is `http://` or `https://`, a host (with an optional
    /// port) and an optional path of printable ASCII; nil for anything else
    /// (a query, a fragment, user information, spaces or quotes would make
    /// every receipt link wrong). `--base-url` and the web export's origin.
    public static func receiptBase(_ text: String) -> String? {
        let scheme = text.hasPrefix("https://") ? "https://" : text.hasPrefix("http://") ? "http://" : nil
        guard let scheme, text.utf8.count <= 1024 else { return nil }
        let rest = text.utf8.dropFirst(scheme.utf8.count)
        let refused = Array("?#@\"'<>\\^`{|}".utf8)
        guard rest.allSatisfy({ $0 > 0x20 && $0 < 0x7F && !refused.contains($0) }) else { return nil }
        let host = rest.prefix { $0 != UInt8(ascii: "/") }
        guard !host.isEmpty, host.first != UInt8(ascii: ":"), host.last != UInt8(ascii: ":") else { return nil }
        var url = text
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }

    /// A CSV field, quoted when it must be (RFC 4180 §2.6–2.7).
    public static func csvField(_ text: String) -> String {
        let needsQuotes = text.utf8.contains { $0 == 0x2C || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D }
            || text.first == " " || text.last == " "
        guard needsQuotes else { return text }
        var quoted = "\""
        for c in text {
            if c == "\"" { quoted.append("\"") }
            quoted.append(c)
        }
        return quoted + "\""
    }
}
