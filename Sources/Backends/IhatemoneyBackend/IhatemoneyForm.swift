import ExpenseCore

/// A bill as ihatemoney's `BillForm` reads it
/// (`application/x-www-form-urlencoded`; `payed_for` repeated per member).
struct IhatemoneyForm: Sendable, Equatable {
    var fields: [(String, String)]
    let date: String

    static func == (a: IhatemoneyForm, b: IhatemoneyForm) -> Bool {
        a.fields.map(\.0) == b.fields.map(\.0) && a.fields.map(\.1) == b.fields.map(\.1)
    }

    /// The bill for `fields`. ihatemoney requires a date, a `what` and an
    /// amount: the engine sends no create without an amount and a date
    /// (``IhatemoneyBackend/requiredFields``), and an expense without a
    /// merchant or comment is named "Receipt". The stand-ins for the amount
    /// and date (0, the day it was added) serve only a create that left
    /// before expenses were held as incomplete, sent again as it was.
    static func bill(fields: ExpenseFields, payer: Int64, owers: [Int64], link: String, fallbackDate: Substring) -> IhatemoneyForm {
        let date = fields.date ?? String(fallbackDate)
        var form: [(String, String)] = [
            ("date", date),
            ("what", IhatemoneyWhat.make(merchant: fields.merchant, comment: fields.comment)),
            ("payer", String(payer)),
            ("amount", fields.amount ?? "0"),
            // ihatemoney takes the project's default currency or XXX ("none").
            ("original_currency", fields.currency ?? "XXX"),
            ("external_link", link),
            ("bill_type", "Expense"),
        ]
        form += owers.map { ("payed_for", String($0)) }
        return IhatemoneyForm(fields: form, date: date)
    }

    /// The fields as the bill now holds them, for the cache.
    static func sentFields(_ fields: ExpenseFields, fallbackDate: String) -> ExpenseFields {
        var sent = fields
        if sent.date == nil { sent.date = fallbackDate }
        if sent.amount == nil { sent.amount = "0.00" }
        sent.category = nil
        sent.taxTag = nil
        return sent
    }

    var bytes: [UInt8] {
        var out: [UInt8] = []
        for (index, (name, value)) in fields.enumerated() {
            if index > 0 { out.append(UInt8(ascii: "&")) }
            Self.encode(name, into: &out)
            out.append(UInt8(ascii: "="))
            Self.encode(value, into: &out)
        }
        return out
    }

    /// RFC 3986's unreserved characters stay; every other byte is %XX.
    static func encode(_ text: String, into out: inout [UInt8]) {
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
    }
}
