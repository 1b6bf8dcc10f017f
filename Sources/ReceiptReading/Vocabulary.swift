/// The words receipts label their lines with, folded (``TextFold``), in the
/// languages they are printed in here: English, German, French, Spanish,
/// Italian, Dutch and a little of the Nordic ones. A phrase is a run of
/// words that must follow each other on a line.
enum Vocabulary {
    typealias Phrases = [[String]]

    /// A line that says it is what was to be paid, strongest first.
    static let totalStrong = phrases("grand total", "total due", "amount due", "balance due", "total to pay", "total payable",
                                     "amount payable", "total amount", "total incl", "total inkl", "total inc", "total including",
                                     "total ttc", "net a payer", "a payer", "zu zahlen", "gesamtbetrag", "endbetrag", "rechnungsbetrag",
                                     "gesamtsumme", "total a pagar", "importe total", "total importe", "totale complessivo",
                                     "totale da pagare", "te betalen", "att betala", "montant total", "total general", "total brutto",
                                     "summe brutto", "totaal bedrag")
    static let totalPlain = phrases("total", "summe", "gesamt", "totale", "totaal", "summa", "importe", "tot", "ttl")
    /// Card terminals' and invoices' words for it, which also label other things.
    static let totalWeak = phrases("amount", "balance", "betrag", "montant", "sale", "purchase", "bedrag", "belopp")

    /// A line with any of these is never the total, whatever else it says.
    static let subtotal = phrases("sub", "subtotal", "subtot", "subtotaal", "zwischensumme", "zw summe", "zwsumme", "sous", "soustotal",
                                  "subtotale", "parziale", "excl", "exkl", "excluding", "exclusive", "before", "net", "netto", "nett",
                                  "ht", "hors", "imponibile", "base")
    static let tip = phrases("tip", "tips", "gratuity", "trinkgeld", "pourboire", "propina", "mancia", "fooi", "service charge")
    static let tendered = phrases("cash", "bar", "tendered", "tender", "given", "gegeben", "geg", "especes", "efectivo", "contanti",
                                  "contant", "received")
    static let change = phrases("change", "ruckgeld", "wechselgeld", "retour", "rendu", "monnaie", "cambio", "vuelto", "resto",
                                "wisselgeld", "zuruck")
    static let discount = phrases("saved", "saving", "savings", "save", "discount", "discounts", "rabatt", "remise", "reduction",
                                  "coupon", "voucher", "points", "punkte", "bonus", "deposit", "pfand", "rounding")
    /// Taxes: a line naming one is the tax, unless it says the total includes it.
    static let tax = phrases("vat", "tax", "taxes", "mwst", "ust", "tva", "iva", "btw", "moms", "gst", "hst", "pst", "mva", "alv",
                             "dph", "ptu", "sales tax")
    static let including = phrases("incl", "inkl", "including", "inc", "included", "inclusive", "ttc", "compris", "incluido",
                                   "incluso", "enthalten", "with", "mit")
    /// A payment by card: the amount charged.
    static let card = phrases("card", "visa", "mastercard", "master", "amex", "american express", "maestro", "debit", "credit",
                              "contactless", "ec", "girocard", "karte", "kartenzahlung", "carte", "cb", "tarjeta", "paid", "bezahlt",
                              "payment", "zahlung", "pagato", "betaald", "vpay", "eftpos", "charged")

    /// A label that says which date a line's date is: the receipt's own.
    static let dateLabel = phrases("date", "datum", "fecha", "data", "dated", "rechnungsdatum", "belegdatum", "issued", "le",
                                   "invoice date", "transaction")
    /// Dates that are not the receipt's: offers, returns, stays, cards.
    static let otherDate = phrases("valid", "until", "expires", "expiry", "exp", "expiration", "best before", "bb", "use by",
                                   "return", "returns", "gultig", "bis", "due", "fallig", "arrival", "arrive", "check in", "checkin",
                                   "anreise", "ankunft", "arrivee", "llegada", "arrivo", "since", "born", "birthday", "offer", "ends",
                                   "warranty", "garantie", "echeance", "vencimiento", "scadenza", "next")

    /// Lines that name the document rather than who issued it.
    static let documentWords = phrases("receipt", "invoice", "tax invoice", "bill", "rechnung", "quittung", "beleg", "kassenbon",
                                       "kassenbeleg", "bon", "facture", "ticket", "recibo", "factura", "ricevuta", "scontrino", "fattura",
                                       "kvitto", "copy", "duplicate", "customer", "kunde", "welcome", "willkommen", "bienvenue",
                                       "bienvenido", "benvenuti", "thank", "thanks", "danke", "merci", "gracias", "grazie", "order",
                                       "table", "tisch", "guest", "gast", "server", "cashier", "kasse", "till", "no", "nr", "page")
    /// Lines that give an address or a way to reach the merchant.
    static let contactWords = phrases("tel", "phone", "telefon", "fax", "www", "http", "https", "email", "mail", "com", "str",
                                      "strasse", "street", "road", "rd", "avenue", "ave", "rue", "via", "calle", "platz", "weg", "lane",
                                      "vat", "uid", "che", "siret", "abn", "steuernummer", "stnr", "ust", "mwst", "tax", "gst", "id")

    private static func phrases(_ list: String...) -> Phrases { list.map { $0.split(separator: " ").map(String.init) } }

    /// Whether `words` holds any of `phrases`, each as consecutive words.
    static func contains(_ words: [String], _ phrases: Phrases) -> Bool { firstMatch(words, phrases) != nil }

    /// The first of `phrases` found in `words`, as text. A word of five
    /// letters or more also matches with one letter misread (`TOTAI`,
    /// `T0TAL`, `SUBT0TAL`), as a reader misreads them.
    static func firstMatch(_ words: [String], _ phrases: Phrases) -> String? {
        for phrase in phrases where phrase.count <= words.count {
            for start in 0...(words.count - phrase.count) {
                let matches = zip(phrase, words[start..<(start + phrase.count)]).allSatisfy { expected, read in
                    expected == read || (expected.count >= 5 && isOneLetterMisread(expected, read))
                }
                if matches { return phrase.joined(separator: " ") }
            }
        }
        return nil
    }

    /// `read` is `expected` with one character in its place changed.
    private static func isOneLetterMisread(_ expected: String, _ read: String) -> Bool {
        guard expected.utf8.count == read.utf8.count else { return false }
        var differences = 0
        for (a, b) in zip(expected.utf8, read.utf8) where a != b {
            differences += 1
            if differences > 1 { return false }
        }
        return differences == 1
    }
}
