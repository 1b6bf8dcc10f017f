import ExpenseCore

extension ReceiptParser {
    /// The merchant: one this account already has whose name the text
    /// contains (its words in a row on one line, a long word allowed one
    /// misread letter), spelled as the account spells it; else the
    /// receipt's heading, the first of its top lines that is a name rather
    /// than the document's title, an address, a number or a date.
    static func findMerchant(_ lines: [LineFacts], settings: ReadingSettings) -> Suggestion? {
        known(lines, settings.knownMerchants) ?? heading(lines)
    }

    private static func known(_ lines: [LineFacts], _ merchants: [String]) -> Suggestion? {
        var best: (score: Int, suggestion: Suggestion)?
        for merchant in merchants {
            let name = TextFold.words(merchant)
            let letters = name.reduce(0) { $0 + $1.count }
            guard letters >= 3, !name.isEmpty else { continue }
            for line in lines {
                let words = line.words.enumerated().flatMap { position, word in TextFold.words(word).map { ($0, position) } }
                guard words.count >= name.count else { continue }
                for start in 0...(words.count - name.count) {
                    var misread = 0
                    let matches = zip(name, words[start..<(start + name.count)]).allSatisfy { expected, read in
                        if expected == read.0 { return true }
                        guard expected.count >= 5, misread == 0, isOneEditApart(expected, read.0) else { return false }
                        misread += 1
                        return true
                    }
                    guard matches else { continue }
                    let used = words[start..<(start + name.count)].map { line.confidences[$0.1] }
                    let confidence = (misread == 0 ? 0.95 : 0.8) * (used.min() ?? 1)
                    // The top of a receipt names who issued it; a name further down may be anything.
                    let score = letters * (line.index < 8 ? 2 : 1) * (misread == 0 ? 2 : 1)
                    if best == nil || score > best!.score {
                        let note = misread == 0 ? "a merchant this account has, named on the receipt"
                            : "a merchant this account has, named on the receipt with one letter misread"
                        best = (score, Suggestion(merchant, confidence: confidence, line: line.index, note: note))
                    }
                }
            }
        }
        return best?.suggestion
    }

    private static func heading(_ lines: [LineFacts]) -> Suggestion? {
        for line in lines.prefix(8) where line.page == 0 {
            guard line.amounts.isEmpty, line.dates.isEmpty, !line.hasTime else { continue }
            let text = line.words.joined(separator: " ")
            let letters = text.filter(\.isLetter).count
            let visible = text.filter { !$0.isWhitespace }.count
            guard letters >= 3, Double(letters) >= 0.6 * Double(visible) else { continue }
            guard !Vocabulary.contains(line.label, Vocabulary.documentWords), !Vocabulary.contains(line.label, Vocabulary.contactWords) else { continue }
            // An address: a house number with words (`12 High Street`), a postcode.
            if line.words.contains(where: { $0.allSatisfy(\.isASCIIDigit) && $0.count >= 1 }) { continue }
            // A store's number after its name (`ACME ELECTRONICS #0412`) is not its name.
            var words = line.words
            while let last = words.last, words.count > 1, !last.contains(where: \.isLetter) { words.removeLast() }
            let name = words.joined(separator: " ").trimming(" *-=_~#.:|!")
            guard (try? Validation.checkText(name, field: "merchant")) != nil else { continue }
            let confidence = 0.6 * line.confidences.reduce(0, +) / Double(max(1, line.confidences.count))
            return Suggestion(name, confidence: confidence, line: line.index, note: "the receipt's heading")
        }
        return nil
    }

    /// One letter changed, added or dropped.
    static func isOneEditApart(_ a: String, _ b: String) -> Bool {
        let x = Array(a), y = Array(b)
        if x.count == y.count { return zip(x, y).filter { $0 != $1 }.count == 1 }
        guard abs(x.count - y.count) == 1 else { return false }
        let (long, short) = x.count > y.count ? (x, y) : (y, x)
        var i = 0
        while i < short.count && long[i] == short[i] { i += 1 }
        return Array(long[(i + 1)...]) == Array(short[i...])
    }
}
