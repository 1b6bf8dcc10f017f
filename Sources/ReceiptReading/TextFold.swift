/// Text folded for matching words, whatever case and accents a receipt
/// (or its reading) gives them: lower case, Latin letters without their
/// accents (`Zürich` and `ZURICH` are both `zurich`, `ß` is `ss`), and
/// split into words of letters and digits.
enum TextFold {
    /// `text` in lower case without accents; other characters as they are.
    static func fold(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text.lowercased() {
            if character.isASCII { result.append(character); continue }
            if let plain = accents[character] { result += plain } else { result.append(character) }
        }
        return result
    }

    /// The words of `text`, folded: runs of letters and digits.
    static func words(_ text: String) -> [String] {
        fold(text).split(whereSeparator: { !($0.isLetter || $0.isNumber) }).map(String.init)
    }

    private static let accents: [Character: String] = {
        var table: [Character: String] = ["ß": "ss", "æ": "ae", "œ": "oe", "ø": "o", "ð": "d", "þ": "th", "ł": "l", "đ": "d", "ı": "i"]
        let groups: [(String, String)] = [
            ("àáâãäåāăą", "a"), ("çćĉċč", "c"), ("ďđ", "d"), ("èéêëēĕėęě", "e"), ("ĝğġģ", "g"), ("ĥħ", "h"),
            ("ìíîïĩīĭįı", "i"), ("ĵ", "j"), ("ķ", "k"), ("ĺļľŀł", "l"), ("ñńņňŉ", "n"), ("òóôõöōŏő", "o"),
            ("ŕŗř", "r"), ("śŝşš", "s"), ("ţťŧ", "t"), ("ùúûüũūŭůűų", "u"), ("ŵ", "w"), ("ýÿŷ", "y"), ("źżž", "z"),
        ]
        for (letters, plain) in groups {
            for letter in letters { table[letter] = plain }
        }
        return table
    }()
}
