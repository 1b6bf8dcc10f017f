/// A PDF page's text layer, from its characters and their boxes back to
/// lines of words as the page shows them. Poppler gives the text in its
/// reading order, which breaks a table into its columns (every label, then
/// every amount); a receipt's rules need a label and its amount on one
/// line, so characters are grouped by where they sit: one line per row of
/// the page, words split at spaces and at gaps wider than a quarter of the
/// characters' height.
public enum PageLayout {
    /// One character of a text layer and its box, in points from the top left.
    public struct Glyph: Sendable, Equatable {
        public var text: String
        public var x1: Double, y1: Double, x2: Double, y2: Double

        public init(_ text: String, x1: Double, y1: Double, x2: Double, y2: Double) {
            self.text = text
            (self.x1, self.y1, self.x2, self.y2) = (min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2))
        }

        var height: Double { y2 - y1 }
        var middle: Double { (y1 + y2) / 2 }
        var isSpace: Bool { text.allSatisfy(\.isWhitespace) }
    }

    /// The rows of `glyphs`, top to bottom, each a line of words from left to right.
    public static func lines(_ glyphs: [Glyph], page: Int) -> [ReadText.Line] {
        let placed = glyphs.filter { $0.height > 0 && $0.x1.isFinite && $0.y1.isFinite && $0.x2.isFinite && $0.y2.isFinite }
        var rows: [[Glyph]] = []
        var middle = 0.0, height = 0.0
        for glyph in placed.sorted(by: { ($0.middle, $0.x1) < ($1.middle, $1.x1) }) {
            if !rows.isEmpty, abs(glyph.middle - middle) <= 0.5 * max(height, glyph.height) {
                rows[rows.count - 1].append(glyph)
                let count = Double(rows[rows.count - 1].count)
                middle += (glyph.middle - middle) / count
                height += (glyph.height - height) / count
            } else {
                rows.append([glyph])
                (middle, height) = (glyph.middle, glyph.height)
            }
        }
        return rows.compactMap { row in
            let ordered = row.sorted { $0.x1 < $1.x1 }
            let size = ordered.map(\.height).reduce(0, +) / Double(ordered.count)
            var words: [ReadText.Word] = [], current = ""
            var previous: Glyph?
            for glyph in ordered {
                // A space of the text layer ends a word, and so does a gap (a table's columns).
                if glyph.isSpace || previous.map({ glyph.x1 - $0.x2 > 0.25 * size }) == true, !current.isEmpty {
                    words.append(ReadText.Word(current))
                    current = ""
                }
                if !glyph.isSpace { current += glyph.text }
                previous = glyph
            }
            if !current.isEmpty { words.append(ReadText.Word(current)) }
            return words.isEmpty ? nil : ReadText.Line(page: page, words: words)
        }
    }

    /// Whether a text layer's lines are worth reading rather than the
    /// page's pixels: they give an amount or a date, and at most a tenth
    /// of their characters are ones no printed receipt has (control
    /// characters, the replacement character, private use: what a font
    /// without a Unicode map gives).
    public static func isUsable(_ lines: [ReadText.Line]) -> Bool {
        var characters = 0, odd = 0
        for line in lines {
            for word in line.words {
                for scalar in word.text.unicodeScalars {
                    characters += 1
                    if scalar.value < 0x20 || scalar.value == 0xFFFD || (0xE000...0xF8FF).contains(scalar.value) || (0x7F...0x9F).contains(scalar.value) {
                        odd += 1
                    }
                }
            }
        }
        guard characters > 0, odd * 10 <= characters else { return false }
        return lines.contains { line in
            let facts = LineFacts(line, index: 0)
            return !facts.dates.isEmpty || facts.amounts.contains { $0.text.hasFraction }
        }
    }
}
