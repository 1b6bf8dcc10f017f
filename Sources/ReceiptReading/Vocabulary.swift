/// The words receipts label their lines with, folded (``TextFold``), in the
/// languages they are printed in here: English, German, French, Spanish,
/// Italian, Dutch and a little of the Nordic ones. A phrase is a run of
/// words that must follow each other on a line.
enum Vocabulary {
    /// What a label may say, one list of phrases each.
    enum Category: Int, CaseIterable {
        case totalStrong, totalPlain, totalWeak, subtotal, tip, tendered, change, discount, tax, including, card
        case dateLabel, otherDate, documentWords, contactWords
    }

    /// A line that says it is what was to be paid, strongest first.
    private static let totalStrong: [String] = ["grand total", "total due", "amount due", "balance due", "total to pay", "total payable",
        "amount payable", "total amount", "total incl", "total inkl", "total inc", "total including",
        "total ttc", "net a payer", "a payer", "zu zahlen", "gesamtbetrag", "endbetrag", "rechnungsbetrag",
        "gesamtsumme", "total a pagar", "importe total", "total importe", "totale complessivo",
        "totale da pagare", "te betalen", "att betala", "montant total", "total general", "total brutto",
        "summe brutto", "totaal bedrag"]
    private static let totalPlain: [String] = ["total", "summe", "gesamt", "totale", "totaal", "summa", "importe", "tot", "ttl"]
    /// Card terminals' and invoices' words for it, which also label other things.
    private static let totalWeak: [String] = ["amount", "balance", "betrag", "montant", "sale", "purchase", "bedrag", "belopp"]

    /// A line with any of these is never the total, whatever else it says.
    private static let subtotal: [String] = ["sub", "subtotal", "subtot", "subtotaal", "zwischensumme", "zw summe", "zwsumme", "sous", "soustotal",
        "subtotale", "parziale", "excl", "exkl", "excluding", "exclusive", "before", "net", "netto", "nett",
        "ht", "hors", "imponibile", "base"]
    private static let tip: [String] = ["tip", "tips", "gratuity", "trinkgeld", "pourboire", "propina", "mancia", "fooi", "service charge"]
    private static let tendered: [String] = ["cash", "bar", "tendered", "tender", "given", "gegeben", "geg", "especes", "efectivo", "contanti",
        "contant", "received"]
    private static let change: [String] = ["change", "ruckgeld", "wechselgeld", "retour", "rendu", "monnaie", "cambio", "vuelto", "resto",
        "wisselgeld", "zuruck"]
    private static let discount: [String] = ["saved", "saving", "savings", "save", "discount", "discounts", "rabatt", "remise", "reduction",
        "coupon", "voucher", "points", "punkte", "bonus", "deposit", "pfand", "rounding"]
    /// Taxes: a line naming one is the tax, unless it says the total includes it.
    private static let tax: [String] = ["vat", "tax", "taxes", "mwst", "ust", "tva", "iva", "btw", "moms", "gst", "hst", "pst", "mva", "alv",
        "dph", "ptu", "sales tax"]
    private static let including: [String] = ["incl", "inkl", "including", "inc", "included", "inclusive", "ttc", "compris", "incluido",
        "incluso", "enthalten", "with", "mit"]
    /// A payment by card: the amount charged.
    private static let card: [String] = ["card", "visa", "mastercard", "master", "amex", "american express", "maestro", "debit", "credit",
        "contactless", "ec", "girocard", "karte", "kartenzahlung", "carte", "cb", "tarjeta", "paid", "bezahlt",
        "payment", "zahlung", "pagato", "betaald", "vpay", "eftpos", "charged"]

    /// A label that says which date a line's date is: the receipt's own.
    private static let dateLabel: [String] = ["date", "datum", "fecha", "data", "dated", "rechnungsdatum", "belegdatum", "issued", "le",
        "invoice date", "transaction"]
    /// Dates that are not the receipt's: offers, returns, stays, cards.
    private static let otherDate: [String] = ["valid", "until", "expires", "expiry", "exp", "expiration", "best before", "bb", "use by",
        "return", "returns", "gultig", "bis", "due", "fallig", "arrival", "arrive", "check in", "checkin",
        "anreise", "ankunft", "arrivee", "llegada", "arrivo", "since", "born", "birthday", "offer", "ends",
        "warranty", "garantie", "echeance", "vencimiento", "scadenza", "next"]

    /// Lines that name the document rather than who issued it.
    private static let documentWords: [String] = ["receipt", "invoice", "tax invoice", "bill", "rechnung", "quittung", "beleg", "kassenbon",
        "kassenbeleg", "bon", "facture", "ticket", "recibo", "factura", "ricevuta", "scontrino", "fattura",
        "kvitto", "copy", "duplicate", "customer", "kunde", "welcome", "willkommen", "bienvenue",
        "bienvenido", "benvenuti", "thank", "thanks", "danke", "merci", "gracias", "grazie", "order",
        "table", "tisch", "guest", "gast", "server", "cashier", "kasse", "till", "no", "nr", "page"]
    /// Lines that give an address or a way to reach the merchant.
    private static let contactWords: [String] = ["tel", "phone", "telefon", "fax", "www", "http", "https", "email", "mail", "com", "str",
        "strasse", "street", "road", "rd", "avenue", "ave", "rue", "via", "calle", "platz", "weg", "lane",
        "vat", "uid", "che", "siret", "abn", "steuernummer", "stnr", "ust", "mwst", "tax", "gst", "id"]

    private static let lists: [(Category, [String])] = [
        (.totalStrong, totalStrong), (.totalPlain, totalPlain), (.totalWeak, totalWeak), (.subtotal, subtotal), (.tip, tip),
        (.tendered, tendered), (.change, change), (.discount, discount), (.tax, tax), (.including, including), (.card, card),
        (.dateLabel, dateLabel), (.otherDate, otherDate), (.documentWords, documentWords), (.contactWords, contactWords),
    ]

    /// The phrases a line's label words hold: for each category, the first
    /// found, as text. Found in one pass over the words, each looked up in
    /// an index (the phrases by their first word, and by that word with
    /// one letter left open), so a long text costs what its length does.
    struct Matches: Sendable {
        fileprivate var found = [String?](repeating: nil, count: Category.allCases.count)

        func has(_ category: Category) -> Bool { found[category.rawValue] != nil }
        func phrase(_ category: Category) -> String? { found[category.rawValue] }
    }

    /// The phrases `words` (folded) hold. A word of five letters or more
    /// also matches with one letter misread (`TOTAI`, `T0TAL`, `SUBT0TAL`),
    /// as a reader misreads them.
    static func matches(_ words: [String]) -> Matches {
        var matches = Matches()
        for start in words.indices {
            for id in candidates(words[start]) {
                let entry = entries[id]
                guard matches.found[entry.category.rawValue] == nil, start + entry.words.count <= words.count,
                      zip(entry.words, words[start...]).allSatisfy({ isMatch($0, $1) }) else { continue }
                matches.found[entry.category.rawValue] = entry.text
            }
        }
        return matches
    }

    private struct Entry {
        let category: Category
        let words: [String]
        let text: String
    }

    private static let entries: [Entry] = lists.flatMap { category, phrases in
        phrases.map { Entry(category: category, words: $0.split(separator: " ").map(String.init), text: $0) }
    }

    /// Entries by their first word, and by its near keys.
    private static let index: [String: [Int]] = {
        var index: [String: [Int]] = [:]
        for (id, entry) in entries.enumerated() {
            let first = entry.words[0]
            index[first, default: []].append(id)
            for key in nearKeys(first) { index[key, default: []].append(id) }
        }
        return index
    }()

    private static func candidates(_ word: String) -> [Int] {
        var ids = index[word] ?? []
        for key in nearKeys(word) { ids += index[key] ?? [] }
        return ids
    }

    /// A word of five letters or more as its length with its first two
    /// letters, and with its last two: one letter changed leaves one of the
    /// two as it was, so a misread word shares a key with the word it
    /// misreads (and ``isMatch(_:_:)`` tells the rest).
    private static func nearKeys(_ word: String) -> [String] {
        let characters = Array(word)
        guard characters.count >= 5 else { return [] }
        return ["\(characters.count)<" + String(characters[..<2]), "\(characters.count)>" + String(characters[(characters.count - 2)...])]
    }

    private static func isMatch(_ expected: String, _ read: String) -> Bool {
        if expected == read { return true }
        let a = Array(expected), b = Array(read)
        guard a.count >= 5, a.count == b.count else { return false }
        return zip(a, b).filter { $0 != $1 }.count == 1
    }
}
