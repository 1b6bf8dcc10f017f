import ExpenseCore
@testable import ReceiptReading
import Testing

/// The parser's smaller decisions, each a table: how a word is read as an
/// amount, which order a locale's date format gives, how a text layer's
/// characters become lines, and which suggestions may fill an expense.
@Suite struct ReadingDecisionTests {
    @Test(arguments: [
        ("18.94", "18.94"), ("£18.94", "18.94"), ("18,94", "18.94"), ("1.234,56", "1234.56"), ("1,234.56", "1234.56"),
        ("1'450.50", "1450.50"), ("1’450.50", "1450.50"), ("12,50€", "12.50"), ("€12,50", "12.50"), ("CHF1'450.50", "1450.50"),
        ("3.00-", "-3.00"), ("-3.00", "-3.00"), ("(3.00)", "-3.00"), ("12,-", "12"), ("12.--", "12"), ("0.81", "0.81"),
        ("18.9O", "18.90"), ("l8.94", "18.94"), ("1O.50", "10.50"), ("1200", "1200"), ("1,200", "1200"), ("¥1,200", "1200"),
        ("007.50", "7.50"), ("18.94*", "18.94"), ("1.234.567,89", "1234567.89"),
    ] as [(String, String)])
    func aWord_readsAsAnAmount(_ word: String, _ decimal: String) throws {
        let amount = try #require(AmountText(word), "\(word)")
        #expect(amount.decimal() == decimal, "\(word)")
    }

    @Test(arguments: ["2L", "1.02kg", "500G", "#2231", "20%", "14:32", "03/04/2026", "TOTAL", "12.5", "1.2.3", "1,23,456.00",
                      "1.234.56", "12.50XYZ", "4821", "****4821", "x2", "", "-", "€", "12,34,56", "1,2345.00"])
    func aWord_isNotAnAmount(_ word: String) {
        let amount = AmountText(word)
        // A bare whole number is read, but only as a whole amount, which counts only beside a currency.
        #expect(amount == nil || (!amount!.hasFraction && amount!.mark == nil), "\(word): \(String(describing: amount))")
    }

    @Test func anAmount_takesItsCurrencysMinorUnits() throws {
        #expect(AmountText("12.50")?.decimal(digits: 3) == "12.500")
        #expect(AmountText("1200")?.decimal(digits: 2) == "1200.00")
        #expect(AmountText("12.00")?.decimal(digits: 0) == "12")
        #expect(AmountText("12.50")?.decimal(digits: 0) == nil, "a fraction a currency cannot have")
        #expect(AmountText("-0.00")?.decimal() == "0.00", "no negative zero")
    }

    @Test(arguments: [
        ("%d/%m/%Y", DateOrder.dayFirst), ("%d.%m.%Y", .dayFirst), ("%m/%d/%y", .monthFirst), ("%D", .monthFirst),
        ("%e %b %Y", .dayFirst), ("%b %e, %Y", .monthFirst), ("%-d/%-m/%Y", .dayFirst), ("%Y-%m-%d", nil), ("%F", nil),
        ("%y/%m/%d", nil), ("%Y年%m月%d日", nil), ("", nil), ("%H:%M", nil), ("%", nil),
    ] as [(String, DateOrder?)])
    func aLocalesDateFormat_givesItsOrder(_ format: String, _ order: DateOrder?) {
        #expect(DateOrder(dateFormat: format) == order, "\(format)")
    }

    @Test(arguments: [
        ("2026-03-12", "2026-03-12"), ("12.03.2026", "2026-03-12"), ("25/03/2026", "2026-03-25"), ("03/25/2026", "2026-03-25"),
        ("04/04/2026", "2026-04-04"), ("12/03/26", nil), ("31/02/2026", nil), ("2026/3/1", "2026-03-01"), ("1.3.26", "2026-03-01"),
        ("12-MAR-26", "2026-03-12"), ("03-Apr-2026", "2026-04-03"), ("12 Mar 2026", "2026-03-12"), ("March 12, 2026", "2026-03-12"),
        ("12. März 2026", "2026-03-12"), ("1er avril 2026", nil), ("1 avril 2026", "2026-04-01"), ("Apr 3rd 2026", "2026-04-03"),
        ("14 juillet 2026", "2026-07-14"), ("12 SET 12.50", nil), ("1899-01-01", nil), ("13/13/2026", nil),
    ] as [(String, String?)])
    func aDate_readsOneWay_orTwo(_ text: String, _ certain: String?) {
        let dates = DateText.find(in: text.split(separator: " ").map(String.init))
        switch dates.first?.reading {
        case .certain(let value)?, .dotted(let value)?: #expect(value == certain, "\(text)")
        case .twoWays?: #expect(certain == nil, "\(text) reads two ways")
        case nil: #expect(certain == nil, "\(text) is no date")
        }
    }

    @Test func twoWays_giveBothReadings() {
        let dates = DateText.find(in: ["03/04/2026"])
        #expect(dates.first?.reading == .twoWays(dayFirst: "2026-04-03", monthFirst: "2026-03-04"))
        #expect(DateText.find(in: ["3-4-26"]).first?.reading == .twoWays(dayFirst: "2026-04-03", monthFirst: "2026-03-04"))
    }

    @Test(arguments: ["14:32", "9:05", "23:59:59", "2:15PM", "20:15h"])
    func aTimeOfDay_isSeen(_ word: String) { #expect(DateText.isTime(word)) }

    @Test(arguments: ["24:00", "14:3", "12.50", "1:2:3:4", "ab:cd"])
    func notATimeOfDay(_ word: String) { #expect(!DateText.isTime(word)) }

    // MARK: Text layers

    /// Characters as poppler gives them, in its reading order: the labels'
    /// column, then the amounts'. Laid back into rows they pair again.
    @Test func aTextLayersColumns_becomeRows() {
        func glyphs(_ text: String, x: Double, y: Double, width: Double = 5, height: Double = 10) -> [PageLayout.Glyph] {
            text.enumerated().map { PageLayout.Glyph(String($1), x1: x + Double($0) * width, y1: y, x2: x + Double($0 + 1) * width, y2: y + height) }
        }
        let page = glyphs("Subtotal", x: 40, y: 100) + glyphs("Total CHF", x: 40, y: 112) + glyphs("1'450.50", x: 300, y: 100.4)
            + glyphs("1'450.50", x: 300, y: 112.3) + glyphs("\n", x: 340, y: 112)
        let lines = PageLayout.lines(page, page: 0)
        #expect(lines.map(\.text) == ["Subtotal 1'450.50", "Total CHF 1'450.50"])
        #expect(lines.allSatisfy { $0.page == 0 && $0.words.allSatisfy { $0.confidence == 1 } })
        let suggestions = ReceiptParser.suggest(ReadText(source: .textLayer, lines: lines))
        #expect(suggestions.total?.value == "1450.50" && suggestions.currency?.value == "CHF")
    }

    @Test func characters_setTight_areSplitAtTheirSpaces() {
        let text = "TOTAL 12.50"
        let page = text.enumerated().map { PageLayout.Glyph(String($1), x1: Double($0) * 4, y1: 0, x2: Double($0 + 1) * 4, y2: 10) }
        #expect(PageLayout.lines(page, page: 3).map(\.text) == ["TOTAL 12.50"])
        #expect(PageLayout.lines([], page: 0).isEmpty)
        #expect(PageLayout.lines([PageLayout.Glyph("x", x1: .nan, y1: 0, x2: 1, y2: 1)], page: 0).isEmpty)
    }

    @Test func aTextLayer_isUsed_onlyWhenItGivesAnAmountOrADate() {
        #expect(PageLayout.isUsable(ReadText(plain: "HOTEL\nTotal 12.50").lines))
        #expect(PageLayout.isUsable(ReadText(plain: "Invoice date 2026-03-12").lines))
        #expect(!PageLayout.isUsable(ReadText(plain: "ÜÖÄ«» ÿÞßà ¤§ ñÇ").lines), "letters of no amount or date")
        #expect(!PageLayout.isUsable(ReadText(plain: "\u{E001}\u{E002}\u{E003} 12.50 \u{E004}\u{E005}\u{E006}").lines), "private use")
        #expect(!PageLayout.isUsable([]))
    }

    // MARK: Filling an expense

    static let read = ReceiptSuggestions(total: Suggestion("18.94", confidence: 0.9, note: "t"), currency: Suggestion("GBP", confidence: 0.9, note: "c"),
                                         date: Suggestion("2026-04-03", confidence: 0.8, note: "d"), merchant: Suggestion("FRESHWAY", confidence: 0.6, note: "m"))

    @Test func suggestions_fillOnlyWhatIsMissing_neverWhatAPersonTyped() {
        let typed = ExpenseFields(merchant: "Freshway Leeds", date: "2026-04-04")
        let (change, fields) = Self.read.filling(typed)
        #expect(change == ExpenseFields(amount: "18.94", currency: "GBP"))
        #expect(fields == ["amount", "currency"])
        #expect(Self.read.filling(ExpenseFields(merchant: "a", amount: "1.00", currency: "EUR", date: "2026-01-01")).fields.isEmpty)
    }

    @Test func anAmount_isFilledOnlyWithACurrencyItsDigitsSuit() {
        var read = Self.read
        read.currency = nil
        #expect(read.filling(ExpenseFields()).fields == ["merchant", "date"], "no currency, no amount")
        #expect(read.filling(ExpenseFields(currency: "EUR")).change.amount == "18.94", "the expense's own currency")
        #expect(read.filling(ExpenseFields(currency: "JPY")).change.amount == nil, "18.94 is no yen amount")
        #expect(Self.read.filling(ExpenseFields(amount: "1500")).change.currency == "GBP", "a currency for the typed amount")
    }

    @Test func aSuggestion_isClampedAndRounded_andItsJSONLeavesAbsentFieldsOut() {
        #expect(Suggestion("x", confidence: 1.7, note: "n").confidence == 1)
        #expect(Suggestion("x", confidence: -1, note: "n").confidence == 0)
        #expect(Suggestion("x", confidence: 0.8349, note: "n").confidence == 0.83)
        let json = ReceiptSuggestions(total: Suggestion("5.00", confidence: 0.9, line: 3, note: "the line labelled 'total'"),
                                      ambiguousDate: AmbiguousDate(dayFirst: "2026-04-03", monthFirst: "2026-03-04", line: 1)).jsonValue
        #expect(json.serialized() == #"{"ambiguous_date":{"day_first":"2026-04-03","line":1,"month_first":"2026-03-04"},"#
                + #""amount":{"confidence":0.9,"line":3,"note":"the line labelled 'total'","value":"5.00"}}"#)
    }
}
