/// What one line of a receipt holds, as the parser's rules see it: its
/// amounts, currency signs, dates, and what its label says it is.
struct LineFacts: Sendable {
    /// What a line's label says it is, for the total's rules.
    enum Kind: Sendable, Equatable {
        /// A total, by how strongly its words say so (3 strongest).
        case total(rank: Int, label: String)
        case subtotal, tax, tip, tendered, change, card
        /// Discounts, counts, percentages: never the total.
        case other
        /// Nothing the rules know.
        case plain
    }

    struct Amount: Sendable {
        var text: AmountText
        var word: Int
        var confidence: Double
        /// Its currency: written in its word, or as the word before or after it.
        var mark: CurrencyMark?
    }

    let index: Int
    let page: Int
    let words: [String]
    let confidences: [Double]
    /// The folded words of everything that is not an amount, a date or a currency sign.
    let label: [String]
    let amounts: [Amount]
    /// Currency signs and codes standing alone on the line.
    let marks: [CurrencyMark]
    let dates: [DateText]
    let hasTime: Bool
    /// A percentage (`20%`): a rate, a tip table or a discount.
    let hasPercent: Bool
    /// What the label's words say (``Vocabulary``).
    let says: Vocabulary.Matches
    let kind: Kind

    init(_ line: ReadText.Line, index: Int) {
        self.index = index
        page = line.page
        words = line.words.map(\.text)
        confidences = line.words.map(\.confidence)
        dates = DateText.find(in: words)
        let dateWords = Set(dates.flatMap { $0.word..<($0.word + $0.length) })
        var amounts: [Amount] = [], marks: [(mark: CurrencyMark, word: Int)] = [], label: [String] = []
        var time = false, percent = false
        for (position, word) in words.enumerated() {
            if DateText.isTime(word) { time = true; continue }
            if word.contains("%") { percent = true }
            if dateWords.contains(position) { continue }
            if let amount = AmountText(word) {
                amounts.append(Amount(text: amount, word: position, confidence: confidences[position], mark: amount.mark))
            } else if let mark = CurrencyMark.named(word.trimming(":()")) {
                marks.append((mark, position))
            } else {
                label += TextFold.words(word)
            }
        }
        // A sign or code as a word of its own belongs to the amount beside it: after `£`, before `EUR`.
        for (mark, position) in marks {
            if let next = amounts.firstIndex(where: { $0.word == position + 1 }), amounts[next].mark == nil {
                amounts[next].mark = mark
            } else if let previous = amounts.firstIndex(where: { $0.word == position - 1 }), amounts[previous].mark == nil {
                amounts[previous].mark = mark
            }
        }
        self.amounts = amounts
        self.marks = marks.map(\.mark)
        self.label = label
        hasTime = time
        hasPercent = percent
        says = Vocabulary.matches(label)
        kind = Self.kind(of: says, hasPercent: percent)
    }

    private static func kind(of says: Vocabulary.Matches, hasPercent: Bool) -> Kind {
        if says.has(.subtotal) { return .subtotal }
        if says.has(.tip) { return .tip }
        if says.has(.change) { return .change }
        if says.has(.tendered) { return .tendered }
        if says.has(.discount) { return .other }
        let included = says.has(.including)
        let total = says.phrase(.totalStrong).map { (3, $0) } ?? says.phrase(.totalPlain).map { (2, $0) } ?? says.phrase(.totalWeak).map { (1, $0) }
        if says.has(.tax) && !included { return .tax }
        if let (rank, word) = total {
            // `Total 15% 48.30`: a tip table's row, or a rate.
            if hasPercent && !included { return .other }
            return .total(rank: rank, label: word)
        }
        if says.has(.card) { return .card }
        return hasPercent ? .other : .plain
    }

    /// Amounts that can be a price: with a fraction, or whole beside a
    /// currency sign or in a currency without minor units.
    func prices(wholeCurrency: Bool) -> [Amount] {
        amounts.filter { $0.text.hasFraction || $0.mark != nil || wholeCurrency }
    }

    /// The line holds an amount and nothing but currency signs besides.
    var isAmountAlone: Bool { !amounts.isEmpty && label.isEmpty && dates.isEmpty }
}
