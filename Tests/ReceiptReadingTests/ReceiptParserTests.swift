import ExpenseCore
import ReceiptReading
import Testing

/// One receipt's text and the fields the parser must read from it; nil
/// where it must suggest nothing.
struct ParserCase: Sendable, CustomTestStringConvertible {
    let name: String
    let text: String
    var settings = ReadingSettings()
    var total: String?
    var currency: String?
    var date: String?
    var merchant: String?
    var testDescription: String { name }
}

/// The parser as a table of text → fields, traps included: the largest
/// number, a subtotal, VAT, a tip, change, cash given and a card's number
/// are not the total; a date in a footer that is an offer's is not the
/// receipt's; an ambiguous date is never suggested unless the receipt, the
/// day it was received or the setting settles it.
@Suite struct ReceiptParserTests {
    static let cases: [ParserCase] = [
        ParserCase(name: "a supermarket till roll: subtotal, VAT, card, change", text: """
              FRESHWAY SUPERMARKET
            12 High Street, Leeds
            VAT No. GB 123 4567 89
            MILK 2L                    1.45
            OLIVE OIL 1L               8.49
            SUBTOTAL                  18.94
            VAT 20%                    3.16
            TOTAL                  £18.94
            CARD                      18.94
            VISA ************4821
            CHANGE                     0.00
            13/04/2026 14:32   Till 4  #2231
            """, total: "18.94", currency: "GBP", date: "2026-04-13", merchant: "FRESHWAY SUPERMARKET"),
        ParserCase(name: "the largest number is cash given, not the total", text: """
            CORNER SHOP
            BREAD 1.20
            WINE 9.99
            TOTAL 11.19
            CASH 50.00
            CHANGE 38.81
            """, total: "11.19", currency: nil, merchant: "CORNER SHOP"),
        ParserCase(name: "a restaurant bill with a tip line: the total after the tip", text: """
            THE GREEN OLIVE
            Table 12   Server: Ana
            Subtotal            $42.00
            Tax 8%               $3.36
            Total               $45.36
            Tip                  $8.00
            Total               $53.36
            Mastercard          $53.36
            04/18/2026 8:41 PM
            """, total: "53.36", currency: "USD", date: "2026-04-18", merchant: "THE GREEN OLIVE"),
        ParserCase(name: "a tip line larger than nothing else is not the total", text: """
            CAFE LUNA
            TIP 20.00
            TOTAL 14.50
            """, total: "14.50", merchant: "CAFE LUNA"),
        ParserCase(name: "a suggested-tip table under the total is not the total", text: """
            Pasta Bar
            Total 42.00
            Suggested gratuity:
            15% 6.30 Total 48.30
            20% 8.40 Total 50.40
            """, total: "42.00", merchant: "Pasta Bar"),
        ParserCase(name: "a hotel invoice in CHF, Swiss thousands, dotted dates, arrival excluded", text: """
            HOTEL BELLEVUE ZÜRICH
            Bahnhofstrasse 12, 8001 Zürich
            INVOICE No. 2026-0412          Date: 12.03.2026
            Arrival: 09.03.2026     Departure: 12.03.2026
            Room (Superior double)   3   1'260.00
            City tax                 3      16.50
            Breakfast                6     174.00
            Subtotal                     1'450.50
            VAT 8.1% included              108.82
            Total CHF                    1'450.50
            Paid by Mastercard ****5512  1'450.50
            """, total: "1450.50", currency: "CHF", date: "2026-03-12", merchant: "HOTEL BELLEVUE ZÜRICH"),
        ParserCase(name: "a German till receipt: SUMME, comma decimals, Geg. Bar and Rückgeld", text: """
            BÄCKEREI MÜLLER
            Hauptstr. 5, 10115 Berlin
            Brötchen          2,40 A
            Kaffee            3,20 B
            SUMME EUR         5,60
            Geg. Bar EUR     10,00
            Rückgeld EUR      4,40
            MwSt 7%   0,16   19%  0,51
            03.04.2026  09:12  Bon 4711
            """, total: "5.60", currency: "EUR", date: "2026-04-03", merchant: "BÄCKEREI MÜLLER"),
        ParserCase(name: "European thousands: 1.234,56 €", text: """
            Möbelhaus Nord
            Sofa 1.199,00 €
            Lieferung 35,56 €
            Gesamtbetrag 1.234,56 €
            """, total: "1234.56", currency: "EUR", merchant: "Möbelhaus Nord"),
        ParserCase(name: "US thousands: $1,234.56", text: """
            ACME ELECTRONICS
            TV 55in    1,149.00
            Sales tax     85.56
            TOTAL   $1,234.56
            """, total: "1234.56", currency: "USD", merchant: "ACME ELECTRONICS"),
        ParserCase(name: "an ambiguous date without a setting is offered, not suggested", text: """
            KIOSK
            03/04/2026
            TOTAL 2.50 EUR
            """, total: "2.50", currency: "EUR", date: nil, merchant: "KIOSK"),
        ParserCase(name: "an ambiguous date with day-first", text: "KIOSK\n03/04/2026\nTOTAL 2.50 EUR",
                   settings: ReadingSettings(dateOrder: .dayFirst), total: "2.50", currency: "EUR", date: "2026-04-03", merchant: "KIOSK"),
        ParserCase(name: "an ambiguous date with month-first", text: "KIOSK\n03/04/2026\nTOTAL 2.50 USD",
                   settings: ReadingSettings(dateOrder: .monthFirst), total: "2.50", currency: "USD", date: "2026-03-04", merchant: "KIOSK"),
        ParserCase(name: "another date on the receipt shows the order, over the setting", text: """
            KIOSK
            Printed 25/03/2026
            03/04/2026 10:00
            TOTAL 2.50 EUR
            """, settings: ReadingSettings(dateOrder: .monthFirst), total: "2.50", currency: "EUR", date: "2026-04-03", merchant: "KIOSK"),
        ParserCase(name: "a reading later than the day received is not the date", text: "KIOSK\n03/04/2026\nTOTAL 2.50 EUR",
                   settings: ReadingSettings(latestDate: "2026-03-20"), total: "2.50", currency: "EUR", date: "2026-03-04", merchant: "KIOSK"),
        ParserCase(name: "a date in the footer that an offer ends on is not the date", text: """
            SHOE PALACE
            12 Apr 2026
            TOTAL 59.90 GBP
            Offer valid until 30/06/2026
            """, total: "59.90", currency: "GBP", date: "2026-04-12", merchant: "SHOE PALACE"),
        ParserCase(name: "only a footer date that is an expiry: no date", text: """
            SHOE PALACE
            TOTAL 59.90 GBP
            Voucher expires 30/06/2026
            """, total: "59.90", currency: "GBP", date: nil, merchant: "SHOE PALACE"),
        ParserCase(name: "a card's number is not an amount", text: """
            FUEL STOP
            CARD NO 4921 1234 5678 9012
            AUTH 123456
            AMOUNT 61.20
            """, total: "61.20", merchant: "FUEL STOP"),
        ParserCase(name: "no total line: the amount paid by card", text: """
            PARKING GARAGE
            Entry 08:02 Exit 17:45
            VISA 14.00
            """, total: "14.00", merchant: "PARKING GARAGE"),
        ParserCase(name: "no total line: cash given less change", text: """
            MARKET STALL
            CASH 20.00
            CHANGE 6.50
            """, total: "13.50", merchant: "MARKET STALL"),
        ParserCase(name: "nothing labelled and nothing paid: no total, never the largest number", text: """
            SOME PLACE
            Apples 2.40
            Pears 3.10
            """, total: nil, merchant: "SOME PLACE"),
        ParserCase(name: "a subtotal alone is not a total", text: "DELI\nSUBTOTAL 12.00\nSub-total 12.00", total: nil, merchant: "DELI"),
        ParserCase(name: "VAT 20% is not the total, nor TOTAL VAT", text: "SHOP\nTOTAL VAT 3.16\nVAT 20% 3.16\nTOTAL 18.94", total: "18.94", merchant: "SHOP"),
        ParserCase(name: "total including VAT is the total", text: "SHOP\nTotal excl. VAT 100.00\nVAT 20.00\nTotal incl. VAT 120.00",
                   total: "120.00", merchant: "SHOP"),
        ParserCase(name: "TOTAL on one line and its amount on the next", text: "SHOP\nTOTAL\n£7.25", total: "7.25", currency: "GBP", merchant: "SHOP"),
        ParserCase(name: "CHANGE is never the total even when larger", text: "SHOP\nTOTAL 1.50\nCASH 100.00\nCHANGE 98.50", total: "1.50", merchant: "SHOP"),
        ParserCase(name: "a paid invoice: balance due zero is not the total", text: """
            Acme Consulting Ltd
            Invoice date: 2026-02-28
            Total amount 480.00 GBP
            Balance due 0.00 GBP
            """, total: "480.00", currency: "GBP", date: "2026-02-28", merchant: "Acme Consulting Ltd"),
        ParserCase(name: "a discount and savings are not the total", text: "SHOP\nYOU SAVED 10.00\nTOTAL 5.00\nTotal savings 10.00",
                   total: "5.00", merchant: "SHOP"),
        ParserCase(name: "a known merchant named in the text, spelled as the account does", text: """
            Welcome to
            freshway supermarket ltd
            TOTAL 3.00
            """, settings: ReadingSettings(knownMerchants: ["Tesco", "Freshway Supermarket"]), total: "3.00", merchant: "Freshway Supermarket"),
        ParserCase(name: "a known merchant with one letter misread", text: "GREENGROCER\nBy Frezhway Supermarket\nTOTAL 3.00",
                   settings: ReadingSettings(knownMerchants: ["Freshway Supermarket"]), total: "3.00", merchant: "Freshway Supermarket"),
        ParserCase(name: "a known merchant with a letter dropped, or one added", text: "Freshwy Supermarket\nTOTAL 3.00",
                   settings: ReadingSettings(knownMerchants: ["Corner Shop", "Freshway Supermarket"]), total: "3.00", merchant: "Freshway Supermarket"),
        ParserCase(name: "a known merchant with a letter added", text: "Freshway Supermarkets\nTOTAL 3.00",
                   settings: ReadingSettings(knownMerchants: ["Freshway Supermarket"]), total: "3.00", merchant: "Freshway Supermarket"),
        ParserCase(name: "a known merchant two letters off is not it: the heading", text: "Frezhwy Supermarket\nTOTAL 3.00",
                   settings: ReadingSettings(knownMerchants: ["Freshway Supermarket"]), total: "3.00", merchant: "Frezhwy Supermarket"),
        ParserCase(name: "of two known merchants named, the longer name at the top", text: "SHELL\nSHELL SELECT EXPRESS\nTOTAL 40.00\nPaid at Shell",
                   settings: ReadingSettings(knownMerchants: ["Shell", "Shell Select Express"]), total: "40.00", merchant: "Shell Select Express"),
        ParserCase(name: "the heading skips the document's title and contact lines", text: """
            TAX INVOICE
            Tel: 0113 496 0000
            www.example.com
            Riverside Garage
            TOTAL 240.00
            """, total: "240.00", merchant: "Riverside Garage"),
        ParserCase(name: "Swiss francs written Fr.", text: "Bäckerei Zürcher\nTotal Fr. 12.40", total: "12.40", currency: "CHF", merchant: "Bäckerei Zürcher"),
        ParserCase(name: "the ISO code after the amount", text: "SHOP\nTOTAL 12.40 CHF", total: "12.40", currency: "CHF", merchant: "SHOP"),
        ParserCase(name: "a bare $ settled by the default currency", text: "SHOP\nTOTAL $12.40",
                   settings: ReadingSettings(defaultCurrency: "CAD"), total: "12.40", currency: "CAD", merchant: "SHOP"),
        ParserCase(name: "kr without a default currency names none", text: "SHOP\nTOTAL 120,00 kr", total: "120.00", currency: nil, merchant: "SHOP"),
        ParserCase(name: "kr with SEK as the default", text: "SHOP\nTOTAL 120,00 kr", settings: ReadingSettings(defaultCurrency: "SEK"),
                   total: "120.00", currency: "SEK", merchant: "SHOP"),
        ParserCase(name: "no currency on the receipt: the default, marked as such", text: "SHOP\nTOTAL 4.00",
                   settings: ReadingSettings(defaultCurrency: "EUR"), total: "4.00", currency: "EUR", merchant: "SHOP"),
        ParserCase(name: "yen without minor units", text: "RAMEN YA\n合計 ¥1,200\nTOTAL ¥1,200", total: "1200", currency: "JPY", merchant: "RAMEN YA"),
        ParserCase(name: "a month by name, US order", text: "DINER\nMarch 12, 2026\nTOTAL 9.00", total: "9.00", date: "2026-03-12", merchant: "DINER"),
        ParserCase(name: "a month by name in German", text: "Café Central\n12. März 2026\nSumme 9,00", total: "9.00", date: "2026-03-12", merchant: "Café Central"),
        ParserCase(name: "a month by name in one word", text: "PUB\n12-MAR-26 22:10\nTOTAL 9.00", total: "9.00", date: "2026-03-12", merchant: "PUB"),
        ParserCase(name: "a labelled date wins over an earlier one", text: "PUB\nOpened 01/02/2020\nDate: 2026-03-12\nTOTAL 9.00",
                   total: "9.00", date: "2026-03-12", merchant: "PUB"),
        ParserCase(name: "a letter read for a digit in the total", text: "SHOP\nTOTAL 18.9O", total: "18.90", merchant: "SHOP"),
        ParserCase(name: "a refund marked with a trailing minus is not a total", text: "SHOP\nTOTAL 3.00-", total: nil, merchant: "SHOP"),
        ParserCase(name: "a total's label misread by a letter", text: "SHOP\nSUBT0TAL 12.00\nT0TAL 14.40\nCARD 14.40", total: "14.40", merchant: "SHOP"),
        ParserCase(name: "a subtotal misread by a letter is still no total", text: "SHOP\nSUBTOTAI 99.00\nTOTAL 14.40", total: "14.40", merchant: "SHOP"),
        ParserCase(name: "a count of items on the total line is no amount", text: "SHOP\nTOTAL (3 ITEMS) 18.94\nITEMS SOLD 3", total: "18.94", merchant: "SHOP"),
        ParserCase(name: "a phone number, a postcode and a VAT number are no amounts", text: """
            GARDEN CENTRE
            Tel (0113) 496-0000  LS1 4AP
            VAT GB 123 4567 89
            Balance 25.00
            """, total: "25.00", merchant: "GARDEN CENTRE"),
        ParserCase(name: "an empty text suggests nothing", text: "", total: nil),
        ParserCase(name: "garbage suggests nothing", text: "ÿ¤§ %%% ¶¶ ### ~~~\n!!! ??? ,,, ...\n@@@@", total: nil),
        ParserCase(name: "French: net à payer, TTC, TVA", text: """
            BOULANGERIE DUPONT
            Total HT      10,00
            TVA 5,5%       0,55
            Total TTC     10,55 €
            Net à payer   10,55 €
            Le 03/04/2026
            """, total: "10.55", currency: "EUR", date: nil, merchant: "BOULANGERIE DUPONT"),
        ParserCase(name: "Spanish: total a pagar", text: "Bar El Sol\nIVA 10% 1,20\nTOTAL A PAGAR 13,20 €\n15/04/2026",
                   total: "13.20", currency: "EUR", date: "2026-04-15", merchant: "Bar El Sol"),
    ]

    @Test(arguments: cases)
    func readsTheFields(_ c: ParserCase) {
        let read = ReceiptParser.suggest(ReadText(plain: c.text), settings: c.settings)
        #expect(read.total?.value == c.total, "total: \(String(describing: read.total))")
        #expect(read.currency?.value == c.currency, "currency: \(String(describing: read.currency))")
        #expect(read.date?.value == c.date, "date: \(String(describing: read.date))")
        #expect(read.merchant?.value == c.merchant, "merchant: \(String(describing: read.merchant))")
        for (_, suggestion) in read.byField {
            #expect((0...1).contains(suggestion.confidence) && !suggestion.note.isEmpty, "\(suggestion)")
        }
    }
}
