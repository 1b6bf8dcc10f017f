import ExpenseCore

/// A currency as a receipt writes it: a sign (`€`, `£`, `CHF`, `kr`, `$`)
/// or an ISO 4217 code, and the codes it may stand for. A sign several
/// currencies share (`$`, `kr`, `¥`) is settled by the default currency
/// when that is one of them; `$` and `¥` otherwise stand for their most
/// common currency, with less confidence; `kr` for none.
struct CurrencyMark: Sendable, Equatable {
    /// The sign as written, for notes: it is our vocabulary, not the receipt's text.
    let sign: String
    let codes: [String]
    /// The code a lone sign stands for when nothing settles it.
    let usual: String?

    var isCertain: Bool { codes.count == 1 }

    /// The code, settled by `defaultCurrency`, and how sure that is.
    func resolved(defaultCurrency: String?) -> (code: String, certainty: Double)? {
        if codes.count == 1 { return (codes[0], 1) }
        if let defaultCurrency, codes.contains(defaultCurrency) { return (defaultCurrency, 0.9) }
        return usual.map { ($0, 0.6) }
    }

    /// The mark `text` is, or nil. ISO codes count in capitals (`EUR`); a
    /// few common ones in any case (`Eur`, `chf`).
    static func named(_ text: String) -> CurrencyMark? {
        if let mark = signs[text] { return mark }
        let trimmed = text.hasSuffix(".") ? String(text.dropLast()) : text
        if let mark = signs[trimmed] { return mark }
        if trimmed.utf8.count == 3, trimmed.utf8.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }), Currency.isKnown(trimmed) {
            return CurrencyMark(sign: trimmed, codes: [trimmed], usual: trimmed)
        }
        let upper = trimmed.uppercased()
        if commonCodes.contains(upper) { return CurrencyMark(sign: upper, codes: [upper], usual: upper) }
        return nil
    }

    private static let commonCodes: Set<String> = ["EUR", "CHF", "USD", "GBP", "SEK", "NOK", "DKK", "PLN", "CZK", "HUF", "JPY", "CAD", "AUD"]
    static let dollars = ["USD", "CAD", "AUD", "NZD", "SGD", "HKD", "MXN", "TWD", "BRL"]

    private static let signs: [String: CurrencyMark] = {
        var table: [String: CurrencyMark] = [:]
        func add(_ names: [String], _ codes: [String], usual: String?) {
            for name in names { table[name] = CurrencyMark(sign: names[0], codes: codes, usual: usual) }
        }
        add(["€", "EURO", "Euro", "euro"], ["EUR"], usual: "EUR")
        add(["£"], ["GBP"], usual: "GBP")
        add(["$"], dollars, usual: "USD")
        add(["US$", "USD$", "U$S"], ["USD"], usual: "USD")
        add(["C$", "CA$", "CAD$", "Can$"], ["CAD"], usual: "CAD")
        add(["A$", "AU$", "AUD$"], ["AUD"], usual: "AUD")
        add(["NZ$"], ["NZD"], usual: "NZD")
        add(["S$", "SG$"], ["SGD"], usual: "SGD")
        add(["HK$"], ["HKD"], usual: "HKD")
        add(["R$"], ["BRL"], usual: "BRL")
        add(["MX$", "Mex$"], ["MXN"], usual: "MXN")
        add(["NT$"], ["TWD"], usual: "TWD")
        add(["Fr.", "Fr", "SFr.", "SFr", "sFr", "fr."], ["CHF"], usual: "CHF")
        add(["kr", "Kr", "KR", "kr.", ",-kr"], ["SEK", "NOK", "DKK", "ISK"], usual: nil)
        add(["zł", "zl", "ZŁ", "PLN"], ["PLN"], usual: "PLN")
        add(["Kč", "Kc", "KČ"], ["CZK"], usual: "CZK")
        add(["Ft", "ft"], ["HUF"], usual: "HUF")
        add(["¥", "￥"], ["JPY", "CNY"], usual: "JPY")
        add(["円"], ["JPY"], usual: "JPY")
        add(["元", "RMB"], ["CNY"], usual: "CNY")
        add(["₹"], ["INR"], usual: "INR")
        add(["₺"], ["TRY"], usual: "TRY")
        add(["₽"], ["RUB"], usual: "RUB")
        add(["₩"], ["KRW"], usual: "KRW")
        add(["₪"], ["ILS"], usual: "ILS")
        add(["฿"], ["THB"], usual: "THB")
        add(["₫"], ["VND"], usual: "VND")
        add(["₱"], ["PHP"], usual: "PHP")
        add(["lei", "Lei", "LEI"], ["RON"], usual: "RON")
        add(["лв", "лв."], ["BGN"], usual: "BGN")
        return table
    }()
}
