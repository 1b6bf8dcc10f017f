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
        guard !merchants.isEmpty else { return nil }
        let text = WordIndex(lines)
        var best: (score: Int, suggestion: Suggestion)?
        for merchant in merchants {
            let name = TextFold.words(merchant)
            let letters = name.reduce(0) { $0 + $1.count }
            guard letters >= 3, let first = name.first else { continue }
            for (start, firstMisread) in text.occurrences(of: first) {
                var misread = firstMisread ? 1 : 0
                var end = start
                let matches = name.dropFirst().allSatisfy { expected in
                    end += 1
                    guard end < text.words.count, text.words[end].line == text.words[start].line else { return false }
                    if expected == text.words[end].text { return true }
                    guard expected.count >= 5, misread == 0, isOneEditApart(expected, text.words[end].text) else { return false }
                    misread += 1
                    return true
                }
                guard matches else { continue }
                let line = lines[text.words[start].line]
                let confidence = (misread == 0 ? 0.95 : 0.8) * (text.words[start...end].map { line.confidences[$0.position] }.min() ?? 1)
                // The top of a receipt names who issued it; a name further down may be anything.
                let score = letters * (line.index < 8 ? 2 : 1) * (misread == 0 ? 2 : 1)
                if best.map({ score > $0.score }) ?? true {
                    let note = misread == 0 ? "a merchant this account has, named on the receipt"
                        : "a merchant this account has, named on the receipt with one letter misread"
                    best = (score, Suggestion(merchant, confidence: confidence, line: line.index, note: note))
                }
            }
        }
        return best?.suggestion
    }

    /// The text's folded words in reading order, each with its line and its
    /// word's place there, and where to find each: as it is, and by the
    /// words it makes with one letter dropped, so that a word within one
    /// misread letter (changed, added or dropped) of a name's is found by
    /// lookups, not by comparing every name with every word.
    private struct WordIndex {
        var words: [(text: String, line: Int, position: Int)] = []
        private var exact: [String: [Int]] = [:]
        private var near: [String: [Int]] = [:]

        init(_ lines: [LineFacts]) {
            for line in lines {
                for (position, word) in line.words.enumerated() {
                    for folded in TextFold.words(word) {
                        let index = words.count
                        words.append((folded, line.index, position))
                        exact[folded, default: []].append(index)
                        for key in Self.nearKeys(folded, length: folded.count) { near[key, default: []].append(index) }
                    }
                }
            }
        }

        /// Where `token` is, and whether one letter was misread there
        /// (only a token of five letters or more may be).
        func occurrences(of token: String) -> [(index: Int, misread: Bool)] {
            var found = (exact[token] ?? []).map { ($0, false) }
            let length = token.count
            guard length >= 5 else { return found }
            var seen = Set(found.map(\.0))
            for key in (length - 1...length + 1).flatMap({ Self.nearKeys(token, length: $0) }) {
                for index in near[key] ?? [] where !seen.contains(index) && isOneEditApart(token, words[index].text) {
                    seen.insert(index)
                    found.append((index, true))
                }
            }
            return found.sorted { $0.0 < $1.0 }
        }

        /// A word of four letters or more as `length` with its first two
        /// letters, and with its last two. Two words of five letters or more
        /// one letter apart (changed, added or dropped) share one of these:
        /// the edit leaves either end as it was.
        private static func nearKeys(_ word: String, length: Int) -> [String] {
            let characters = Array(word)
            guard characters.count >= 4 else { return [] }
            return ["\(length)<" + String(characters[..<2]), "\(length)>" + String(characters[(characters.count - 2)...])]
        }
    }

    private static func heading(_ lines: [LineFacts]) -> Suggestion? {
        for line in lines.prefix(8) where line.page == 0 {
            guard line.amounts.isEmpty, line.dates.isEmpty, !line.hasTime else { continue }
            let text = line.words.joined(separator: " ")
            let letters = text.filter(\.isLetter).count
            let visible = text.filter { !$0.isWhitespace }.count
            guard letters >= 3, Double(letters) >= 0.6 * Double(visible) else { continue }
            guard !line.says.has(.documentWords), !line.says.has(.contactWords) else { continue }
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
