/// One word of a receipt read as an amount: `18.94`, `£18.94`, `1.234,56`,
/// `1,234.56`, `1'450.50`, `12,50€`, `3.00-`, `CHF1'450.50`, `12,-`.
///
/// The decimal separator is the last `.` or `,` when two digits follow it
/// (three for a currency with three minor units is not told apart from a
/// thousands group, so such an amount needs its currency's two-digit
/// look); the others must group thousands (`1.234.567,89`), with `'` and
/// `’` as the Swiss write them. A word of digits alone (`1200`, `1,200`) is
/// a whole amount, which counts only beside a currency. Letters a reader
/// takes for digits inside a number (`O` for `0`, `l` or `I` for `1`) are
/// read as those digits, and the word says so.
struct AmountText: Sendable, Equatable {
    /// Integer digits without grouping or leading zeros.
    var units: String
    /// Fraction digits, or empty for a whole amount.
    var fraction: String
    var isNegative: Bool
    /// A currency written in the same word.
    var mark: CurrencyMark?
    /// The separator that marked the fraction, if there was one.
    var decimalSeparator: Character?
    /// `12,-`: a whole amount written as one.
    var isExplicitWhole: Bool
    /// Letters were read as digits.
    var wasCorrected: Bool

    var hasFraction: Bool { !fraction.isEmpty || isExplicitWhole }

    /// The decimal string, `-1234.56`, with `digits` fraction digits when
    /// given (zeros added, or nil when the fraction has more non-zero digits).
    func decimal(digits: Int? = nil) -> String? {
        var fraction = self.fraction
        if let digits {
            while fraction.count > digits, fraction.last == "0" { fraction.removeLast() }
            guard fraction.count <= digits else { return nil }
            fraction += String(repeating: "0", count: digits - fraction.count)
        }
        let negative = isNegative && (units != "0" || fraction.contains { $0 != "0" })
        return (negative ? "-" : "") + units + (fraction.isEmpty ? "" : "." + fraction)
    }

    /// Whether it is zero.
    var isZero: Bool { units == "0" && fraction.allSatisfy { $0 == "0" } }

    /// Read `word` as an amount, or nil when it is not one.
    init?(_ word: String) {
        var characters = Array(word)
        // Wrapping a reader leaves, and a VAT class or footnote mark after it.
        while let last = characters.last, "*:;,".contains(last) { characters.removeLast() }
        while let first = characters.first, ":*".contains(first) { characters.removeFirst() }
        var negative = false
        if characters.first == "(" && characters.last == ")" { negative = true; characters = Array(characters.dropFirst().dropLast()) }
        if let first = characters.first, first == "-" || first == "−" { negative = true; characters.removeFirst() }
        guard let firstDigit = characters.firstIndex(where: \.isASCIIDigit),
              let lastDigit = characters.lastIndex(where: \.isASCIIDigit) else { return nil }
        var start = firstDigit, end = lastDigit
        var corrected = false
        // A letter read for a digit at either end of the number (`18.9O`, `l8.94`).
        if end + 1 < characters.count, Self.confusable[characters[end + 1]] != nil,
           end + 2 == characters.count || !characters[end + 2].isLetter { end += 1 }
        if start > 0, Self.confusable[characters[start - 1]] != nil, start == 1 || !characters[start - 2].isLetter { start -= 1 }
        var core: [Character] = []
        for character in characters[start...end] {
            if let digit = Self.confusable[character] { core.append(digit); corrected = true } else { core.append(character) }
        }
        var prefix = String(characters[..<start]), suffix = String(characters[(end + 1)...])
        var explicitWhole = false
        // `12,-` and `12.--`: whole, written as an amount.
        let dashes: Set<Character> = ["-", "–", "—"]
        if let separator = suffix.first, separator == "," || separator == ".", suffix.count > 1, dashes.contains(suffix[suffix.index(after: suffix.startIndex)]) {
            explicitWhole = true
            suffix = String(suffix.dropFirst().drop(while: { dashes.contains($0) }))
        }
        if suffix == "-" || suffix.hasSuffix("-") && suffix.count > 1 && CurrencyMark.named(String(suffix.dropLast())) != nil {
            negative = true  // `3.00-`: a refund or a discount.
            suffix.removeLast()
        }
        if prefix.hasSuffix("-") || prefix.hasSuffix("−") { negative = true; prefix.removeLast() }
        var mark: CurrencyMark?
        for part in [prefix, suffix] where !part.isEmpty {
            guard let named = CurrencyMark.named(part) else { return nil }
            guard mark == nil || mark == named else { return nil }
            mark = named
        }
        guard let number = Self.number(core) else { return nil }
        units = number.units
        fraction = number.fraction
        decimalSeparator = number.separator
        isNegative = negative
        self.mark = mark
        isExplicitWhole = explicitWhole
        wasCorrected = corrected
        guard !explicitWhole || number.fraction.isEmpty else { return nil }
    }

    private static let confusable: [Character: Character] = ["O": "0", "o": "0", "l": "1", "I": "1", "|": "1"]
    private static let groupSeparators: Set<Character> = [".", ",", "'", "’", "\u{2009}", "\u{202F}", "\u{00A0}"]

    /// Digits with separators: the whole units, the fraction, and the decimal separator.
    private static func number(_ core: [Character]) -> (units: String, fraction: String, separator: Character?)? {
        guard core.allSatisfy({ $0.isASCIIDigit || groupSeparators.contains($0) }),
              core.first?.isASCIIDigit == true, core.last?.isASCIIDigit == true else { return nil }
        // Groups of digits between separators.
        var groups: [String] = [], separators: [Character] = []
        var current = ""
        for character in core {
            if character.isASCIIDigit { current.append(character) } else { groups.append(current); separators.append(character); current = "" }
        }
        groups.append(current)
        var fraction = "", separator: Character?
        if let last = separators.last, last == "." || last == ",", groups.last?.count == 2 {
            fraction = groups.removeLast()
            separator = separators.removeLast()
        }
        // What is left groups thousands: one kind of separator, not the decimal one, threes after the first.
        if let grouping = separators.first {
            guard separators.allSatisfy({ $0 == grouping }), grouping != separator,
                  (1...3).contains(groups[0].count), groups.dropFirst().allSatisfy({ $0.count == 3 }) else { return nil }
        }
        var units = groups.joined()
        while units.count > 1 && units.first == "0" { units.removeFirst() }
        guard units.count <= 12 else { return nil }
        return (units, fraction, separator)
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
