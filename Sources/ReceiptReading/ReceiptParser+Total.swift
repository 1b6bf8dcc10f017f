import ExpenseCore

/// The total the rules chose, before its currency is known.
struct TotalFinding: Sendable {
    var amount: AmountText
    var mark: CurrencyMark?
    var line: Int
    var confidence: Double
    var note: String
}

extension ReceiptParser {
    /// A total line's amount, and how it was found.
    private struct Candidate {
        var amount: LineFacts.Amount
        var line: Int
        var rank: Int
        var label: String
        /// Found on the line after its label.
        var isOnNextLine: Bool
    }

    static func findTotal(_ lines: [LineFacts], wholeCurrency: Bool) -> TotalFinding? {
        var candidates: [Candidate] = []
        for (index, line) in lines.enumerated() {
            guard case .total(let rank, let label) = line.kind else { continue }
            if let amount = line.prices(wholeCurrency: wholeCurrency).last(where: { !$0.text.isZero && !$0.text.isNegative }) {
                candidates.append(Candidate(amount: amount, line: index, rank: rank, label: label, isOnNextLine: false))
            } else if line.amounts.isEmpty, index + 1 < lines.count, lines[index + 1].page == line.page, lines[index + 1].isAmountAlone,
                      let amount = lines[index + 1].prices(wholeCurrency: wholeCurrency).last(where: { !$0.text.isZero && !$0.text.isNegative }) {
                // `TOTAL` on its own line, its amount below it (a column the reader split).
                candidates.append(Candidate(amount: amount, line: index + 1, rank: rank, label: label, isOnNextLine: true))
            }
        }
        let payments = paymentAmounts(lines, wholeCurrency: wholeCurrency)
        let arithmetic = sums(lines, wholeCurrency: wholeCurrency)
        func confirmed(_ candidate: Candidate) -> Bool {
            let value = candidate.amount.text.decimal(digits: 4)
            return payments.contains { $0.value == value } || arithmetic.contains(value ?? "")
        }
        let pool = candidates.contains(where: confirmed) ? candidates.filter(confirmed) : candidates
        if let best = pool.max(by: { ($0.rank, $0.line) < ($1.rank, $1.line) }) {
            let values = Set(candidates.filter { $0.rank == best.rank }.compactMap { $0.amount.text.decimal(digits: 4) })
            var confidence = [0.75, 0.75, 0.9, 0.95][best.rank] * best.amount.confidence
            if best.isOnNextLine { confidence *= 0.9 }
            if best.amount.text.wasCorrected { confidence *= 0.8 }
            var note = "the line labelled '\(best.label)'"
            if confirmed(best) {
                confidence = min(1, confidence + 0.05)
                note += payments.contains { $0.value == best.amount.text.decimal(digits: 4) } ? ", as paid" : ", as its parts add up"
            } else if values.count > 1 {
                confidence *= 0.8
                note += ", the last of \(values.count) different totals"
            }
            if best.isOnNextLine { note += " (the amount on the line below it)" }
            return TotalFinding(amount: best.amount.text, mark: best.amount.mark, line: best.line, confidence: confidence, note: note)
        }
        // No total line: what was paid.
        if let card = payments.last(where: { $0.kind == .card }) {
            return TotalFinding(amount: card.amount.text, mark: card.amount.mark, line: card.line,
                                confidence: 0.7 * card.amount.confidence, note: "the amount paid by card (no total line)")
        }
        if let tendered = payments.last(where: { $0.kind == .tendered }), let change = change(lines, after: tendered.line, wholeCurrency: wholeCurrency),
           let paid = difference(tendered.amount.text, change.amount.text) {
            return TotalFinding(amount: paid, mark: tendered.amount.mark ?? change.amount.mark, line: tendered.line,
                                confidence: 0.65 * min(tendered.amount.confidence, change.amount.confidence),
                                note: "cash given less change (no total line)")
        }
        return nil
    }

    private struct Payment {
        var kind: LineFacts.Kind
        var amount: LineFacts.Amount
        var line: Int
        /// What was paid: a card's amount, or cash given less change.
        var value: String?
    }

    /// Amounts paid: charged to a card, or cash given less the change after it.
    private static func paymentAmounts(_ lines: [LineFacts], wholeCurrency: Bool) -> [Payment] {
        var payments: [Payment] = []
        for (index, line) in lines.enumerated() where line.kind == .card || line.kind == .tendered {
            guard let amount = line.prices(wholeCurrency: wholeCurrency).last(where: { !$0.text.isZero && !$0.text.isNegative }) else { continue }
            var value = amount.text.decimal(digits: 4)
            if line.kind == .tendered {
                // Cash given is the total only less the change.
                let change = change(lines, after: index, wholeCurrency: wholeCurrency)
                value = change.flatMap { difference(amount.text, $0.amount.text) }?.decimal(digits: 4) ?? (change == nil ? value : nil)
            }
            payments.append(Payment(kind: line.kind, amount: amount, line: index, value: value))
        }
        return payments
    }

    /// The change given after line `index`, within the next few lines.
    private static func change(_ lines: [LineFacts], after index: Int, wholeCurrency: Bool) -> (amount: LineFacts.Amount, line: Int)? {
        for line in lines[(index + 1)..<min(lines.count, index + 5)] where line.kind == .change {
            if let amount = line.prices(wholeCurrency: wholeCurrency).last { return (amount, line.index) }
        }
        return nil
    }

    /// Totals the receipt's parts make: subtotal plus its taxes and tips
    /// (taxes a price includes are not added twice: a subtotal alone counts too).
    private static func sums(_ lines: [LineFacts], wholeCurrency: Bool) -> Set<String> {
        guard let subtotalLine = lines.last(where: { $0.kind == .subtotal && !$0.prices(wholeCurrency: wholeCurrency).isEmpty }),
              let subtotal = subtotalLine.prices(wholeCurrency: wholeCurrency).last?.text else { return [] }
        var results: Set<String> = []
        var running = subtotal
        if let value = running.decimal(digits: 4) { results.insert(value) }
        for line in lines[(subtotalLine.index + 1)...] where line.kind == .tax || line.kind == .tip {
            guard let part = line.prices(wholeCurrency: wholeCurrency).last?.text, let sum = add(running, part) else { continue }
            running = sum
            if let value = sum.decimal(digits: 4) { results.insert(value) }
        }
        return results
    }

    /// `a - b`, exactly, in ten-thousandths.
    static func difference(_ a: AmountText, _ b: AmountText) -> AmountText? {
        var negated = b
        negated.isNegative.toggle()
        return add(a, negated)
    }

    static func add(_ a: AmountText, _ b: AmountText) -> AmountText? {
        guard let x = tenThousandths(a), let y = tenThousandths(b) else { return nil }
        let sum = x + y
        guard sum > 0 else { return nil }
        var result = a
        result.units = String(sum / 10_000)
        let fraction = String(sum % 10_000).leftPadded(4)
        result.fraction = String(fraction.prefix(max(2, a.fraction.count, b.fraction.count)))
        result.isNegative = false
        result.isExplicitWhole = false
        return result
    }

    private static func tenThousandths(_ amount: AmountText) -> Int64? {
        guard amount.fraction.count <= 4, let units = Int64(amount.units) else { return nil }
        let fraction = Int64((amount.fraction + String(repeating: "0", count: 4 - amount.fraction.count))) ?? 0
        let value = units * 10_000 + fraction
        return amount.isNegative ? -value : value
    }
}
