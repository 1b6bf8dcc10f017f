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
        kind = Self.kind(of: label, hasPercent: percent)
    }

    private static func kind(of label: [String], hasPercent: Bool) -> Kind {
        typealias V = Vocabulary
        if V.contains(label, V.subtotal) { return .subtotal }
        if V.contains(label, V.tip) { return .tip }
        if V.contains(label, V.change) { return .change }
        if V.contains(label, V.tendered) { return .tendered }
        if V.contains(label, V.discount) { return .other }
        let included = V.contains(label, V.including)
        let total = V.firstMatch(label, V.totalStrong).map { (3, $0) } ?? V.firstMatch(label, V.totalPlain).map { (2, $0) }
            ?? V.firstMatch(label, V.totalWeak).map { (1, $0) }
        if V.contains(label, V.tax) && !included { return .tax }
        if let (rank, word) = total {
            // `Total 15% 48.30`: a tip table's row, or a rate.
            if hasPercent && !included { return .other }
            return .total(rank: rank, label: word)
        }
        if V.contains(label, V.card) { return .card }
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
