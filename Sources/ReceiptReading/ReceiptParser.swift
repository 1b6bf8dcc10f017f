import ExpenseCore

/// Reads the fields of an expense from a receipt's text: the total, its
/// currency, the date and the merchant, each a ``Suggestion`` with its
/// confidence and the rule that gave it (docs/receipts.md, "Reading").
/// Pure: no I/O, the same text and settings give the same suggestions.
///
/// The total is the amount on the line that says it is the total (`TOTAL`,
/// `Amount due`, `Summe`, `Total TTC`), never merely the largest number: a
/// subtotal, a tax, a tip, cash given, change and a discount are not it,
/// nor is a card's number (it has no decimal point). Of several total
/// lines, the one the payment confirms (the card was charged that amount,
/// or cash given less change), else the most explicit, else the last (a
/// bill's total after its tip). With no total line, the amount charged to
/// a card, or cash given less change. Otherwise no total.
public enum ReceiptParser {
    public static func suggest(_ text: ReadText, settings: ReadingSettings = ReadingSettings()) -> ReceiptSuggestions {
        let lines = text.lines.enumerated().map { LineFacts($1, index: $0) }
        let wide = receiptCurrency(lines, settings: settings)
        let wholeCurrency = wide.map { Currency.minorUnits($0.code) == 0 } ?? false
        var suggestions = ReceiptSuggestions()
        let total = findTotal(lines, wholeCurrency: wholeCurrency)
        let currency = decideCurrency(total: total, lines: lines, receiptWide: wide, settings: settings)
        suggestions.currency = currency
        if let total {
            let digits = currency.flatMap { Currency.minorUnits($0.value) }
            let value = total.amount.decimal(digits: digits) ?? total.amount.decimal() ?? ""
            suggestions.total = Suggestion(value, confidence: total.confidence, line: total.line, note: total.note)
        }
        (suggestions.date, suggestions.ambiguousDate) = findDate(lines, settings: settings)
        suggestions.merchant = findMerchant(lines, settings: settings)
        return suggestions
    }

    // MARK: Currency

    typealias Resolved = (code: String, certainty: Double, note: String)

    /// The currency most of the receipt's signs and codes name, when more
    /// than half of them name it.
    static func receiptCurrency(_ lines: [LineFacts], settings: ReadingSettings) -> Resolved? {
        var weights: [String: Double] = [:], signs: [String: String] = [:]
        var all = 0.0
        for line in lines {
            for mark in line.amounts.compactMap(\.mark) + line.marks {
                guard let (code, certainty) = mark.resolved(defaultCurrency: settings.defaultCurrency) else { continue }
                weights[code, default: 0] += certainty
                signs[code] = signs[code] ?? mark.sign
                all += 1
            }
        }
        guard let (code, weight) = weights.max(by: { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) }),
              weight > all / 2 else { return nil }
        return (code, min(0.9, weight / all), "most of the receipt's amounts are in \(signs[code] ?? code)")
    }

    static func decideCurrency(total: TotalFinding?, lines: [LineFacts], receiptWide: Resolved?, settings: ReadingSettings) -> Suggestion? {
        if let total {
            let line = lines[total.line]
            let marks = [total.mark].compactMap { $0 } + line.marks + line.amounts.compactMap(\.mark)
            for mark in marks {
                guard let (code, certainty) = mark.resolved(defaultCurrency: settings.defaultCurrency) else { continue }
                let how = mark.isCertain ? "" : (code == settings.defaultCurrency ? ", settled by receipt_currency" : ", the usual currency of that sign")
                return Suggestion(code, confidence: certainty * total.confidence, line: total.line,
                                  note: "the sign \(mark.sign) on the total's line\(how)")
            }
        }
        if let receiptWide {
            return Suggestion(receiptWide.code, confidence: receiptWide.certainty, note: receiptWide.note)
        }
        if let code = settings.defaultCurrency, Currency.isKnown(code) {
            return Suggestion(code, confidence: 0.5, note: "receipt_currency: the receipt names no currency")
        }
        return nil
    }
}
