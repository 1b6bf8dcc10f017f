import ExpenseCore

/// A date as a receipt writes it, found among a line's words: `2026-03-12`,
/// `12.03.2026`, `03/04/2026`, `3/4/26`, `12 Mar 2026`, `March 12, 2026`,
/// `12. März 2026`, `12-MAR-26`.
struct DateText: Sendable, Equatable {
    enum Reading: Sendable, Equatable {
        /// Only one reading is a date (`2026-03-12`, `25/03/2026`, `12 Mar 2026`, `04/04/2026`).
        case certain(String)
        /// Day first by the way it is written: dots (`12.03.2026`), as every
        /// country that writes dates with dots writes them.
        case dotted(String)
        /// `03/04/2026`: both readings are dates.
        case twoWays(dayFirst: String, monthFirst: String)
    }

    var reading: Reading
    /// The separator of a numeric date (`/`, `-`, `.`), nil for a month by name or year first.
    var separator: Character?
    /// For a numeric date, the order its numbers prove when only one
    /// reading is a date (`25/03/2026` proves day-first).
    var provenOrder: DateOrder?
    /// The first word of the line that is part of it.
    var word: Int
    /// How many words it spans.
    var length = 1

    /// The dates among `words` (folded or not).
    static func find(in words: [String]) -> [DateText] {
        var found: [DateText] = []
        var index = 0
        while index < words.count {
            if let (date, length) = textual(words, at: index) {
                found.append(date)
                index += length
                continue
            }
            if let date = numeric(words[index], word: index) { found.append(date) }
            index += 1
        }
        return found
    }

    /// Whether `word` is a time of day: `14:32`, `9:05:11`, `2:15PM`.
    static func isTime(_ word: String) -> Bool {
        guard word.contains(":") else { return false }
        var text = Substring(TextFold.fold(word))
        for suffix in ["am", "pm", "h", "uhr"] where text.hasSuffix(suffix) { text = text.dropLast(suffix.count) }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0.count <= 2 && $0.allSatisfy(\.isASCIIDigit) }),
              let hour = Int(parts[0]), hour <= 23, let minute = Int(parts[1]), minute <= 59, parts[1].count == 2 else { return false }
        return true
    }

    // MARK: Numbers

    private static func numeric(_ word: String, word index: Int) -> DateText? {
        guard word.contains(where: { $0 == "/" || $0 == "-" || $0 == "." }) else { return nil }
        let text = word.trimming("(,;:)")
        for separator in ["/", "-", "."] as [Character] {
            let parts = text.split(separator: separator, omittingEmptySubsequences: false)
            guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) }) else { continue }
            let numbers = parts.map { Int($0) ?? 0 }
            if parts[0].count == 4 && parts[1].count <= 2 && parts[2].count <= 2 {
                guard let date = iso(numbers[0], numbers[1], numbers[2]) else { return nil }
                return DateText(reading: .certain(date), separator: nil, provenOrder: nil, word: index)
            }
            guard parts[0].count <= 2, parts[1].count <= 2, parts[2].count == 2 || parts[2].count == 4,
                  let year = fullYear(numbers[2], digits: parts[2].count) else { return nil }
            let dayFirst = iso(year, numbers[1], numbers[0]), monthFirst = iso(year, numbers[0], numbers[1])
            if separator == ".", let dayFirst {
                return DateText(reading: .dotted(dayFirst), separator: separator, provenOrder: .dayFirst, word: index)
            }
            switch (dayFirst, monthFirst) {
            case let (day?, month?) where day == month:
                return DateText(reading: .certain(day), separator: separator, provenOrder: nil, word: index)
            case let (day?, month?):
                return DateText(reading: .twoWays(dayFirst: day, monthFirst: month), separator: separator, provenOrder: nil, word: index)
            case let (day?, nil):
                return DateText(reading: .certain(day), separator: separator, provenOrder: .dayFirst, word: index)
            case let (nil, month?):
                return DateText(reading: .certain(month), separator: separator, provenOrder: .monthFirst, word: index)
            case (nil, nil):
                return nil
            }
        }
        return nil
    }

    // MARK: Month names

    /// A date with its month by name, over one to four words from `index`:
    /// `12 Mar 2026`, `12. März 2026`, `March 12, 2026`, `12-MAR-26`, `Mar 12th 2026`.
    private static func textual(_ words: [String], at index: Int) -> (DateText, Int)? {
        // One word split at dashes, slashes or dots: `12-MAR-26`. A year ends every form: looked at first, it costs least.
        let word = words[index]
        if word.contains(where: \.isLetter), word.contains(where: { "-/.".contains($0) }) {
            let pieces = word.split(whereSeparator: { "-/.".contains($0) }).map(String.init)
            if pieces.count == 3, yearNumber(pieces[2]) != nil,
               let date = dayMonthYear(pieces[0], pieces[1], pieces[2]) ?? monthDayYear(pieces[0], pieces[1], pieces[2]) {
                return (DateText(reading: .certain(date), separator: nil, provenOrder: nil, word: index), 1)
            }
        }
        guard index + 2 < words.count, yearNumber(words[index + 2].trimming(",.")) != nil else { return nil }
        let window = words[index..<(index + 3)].map { $0.trimming(",.") }
        if let date = dayMonthYear(window[0], window[1], window[2]) ?? monthDayYear(window[0], window[1], window[2]) {
            return (DateText(reading: .certain(date), separator: nil, provenOrder: nil, word: index, length: 3), 3)
        }
        return nil
    }

    private static func dayMonthYear(_ day: String, _ month: String, _ year: String) -> String? {
        guard let d = dayNumber(day), let m = monthNumber(month), let y = yearNumber(year) else { return nil }
        return iso(y, m, d)
    }

    private static func monthDayYear(_ month: String, _ day: String, _ year: String) -> String? {
        guard let m = monthNumber(month), let d = dayNumber(day), let y = yearNumber(year) else { return nil }
        return iso(y, m, d)
    }

    /// `12`, `12.`, `12th`, `1st`, `3rd`, `2nd`.
    private static func dayNumber(_ word: String) -> Int? {
        var text = Substring(TextFold.fold(word))
        for suffix in ["st", "nd", "rd", "th", "."] where text.hasSuffix(suffix) { text = text.dropLast(suffix.count) }
        guard (1...2).contains(text.count), text.allSatisfy(\.isASCIIDigit), let day = Int(text), (1...31).contains(day) else { return nil }
        return day
    }

    private static func yearNumber(_ word: String) -> Int? {
        var text = Substring(word)
        if text.hasPrefix("'") || text.hasPrefix("’") { text = text.dropFirst() }
        guard text.count == 2 || text.count == 4, text.allSatisfy(\.isASCIIDigit), let value = Int(text) else { return nil }
        return fullYear(value, digits: text.count)
    }

    private static func monthNumber(_ word: String) -> Int? {
        let folded = TextFold.fold(word).trimming(".")
        return months[folded]
    }

    /// Month names and their usual abbreviations in the languages receipts
    /// here are printed in: English, German, French, Spanish, Italian, Dutch.
    private static let months: [String: Int] = {
        let names: [[String]] = [
            ["january", "januar", "janner", "janvier", "enero", "gennaio", "januari", "jan", "janv", "ene", "gen", "jän", "jaen"],
            ["february", "februar", "fevrier", "febrero", "febbraio", "februari", "feb", "fev", "fevr", "febr"],
            ["march", "marz", "maerz", "mars", "marzo", "maart", "mar", "mrz", "mrt"],
            ["april", "avril", "abril", "aprile", "apr", "avr", "abr"],
            ["may", "mai", "mayo", "maggio", "mei", "mag"],
            ["june", "juni", "juin", "junio", "giugno", "jun", "giu"],
            ["july", "juli", "juillet", "julio", "luglio", "jul", "juil", "lug"],
            ["august", "aout", "agosto", "augustus", "aug", "ago"],
            ["september", "septembre", "septiembre", "setiembre", "settembre", "sep", "sept", "set"],
            ["october", "oktober", "octobre", "octubre", "ottobre", "oct", "okt", "ott"],
            ["november", "novembre", "noviembre", "nov"],
            ["december", "dezember", "decembre", "diciembre", "dicembre", "dec", "dez", "dic"],
        ]
        var table: [String: Int] = [:]
        for (index, list) in names.enumerated() {
            for name in list { table[TextFold.fold(name)] = index + 1 }
        }
        return table
    }()

    // MARK: Calendar

    /// Years a receipt is dated in: two digits are this century.
    private static func fullYear(_ value: Int, digits: Int) -> Int? {
        let year = digits == 2 ? 2000 + value : value
        return (1990...2099).contains(year) ? year : nil
    }

    /// `YYYY-MM-DD` when it is a calendar date.
    static func iso(_ year: Int, _ month: Int, _ day: Int) -> String? {
        let text = "\(year)-\(String(month).leftPadded(2))-\(String(day).leftPadded(2))"
        return (try? Validation.checkDate(text)) != nil ? text : nil
    }
}

extension String {
    /// This string without the characters of `set` at either end.
    func trimming(_ set: String) -> String {
        var text = Substring(self)
        while let first = text.first, set.contains(first) { text.removeFirst() }
        while let last = text.last, set.contains(last) { text.removeLast() }
        return String(text)
    }
}
