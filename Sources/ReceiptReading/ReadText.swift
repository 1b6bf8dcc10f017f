/// The text read from one receipt: its lines in reading order, each a
/// list of words with how sure the reader was of each. What the parser
/// (``ReceiptParser``) takes, and what the sandboxed reader sends back
/// (``ReadTextCodec``).
public struct ReadText: Sendable, Equatable {
    /// Where the text came from.
    public enum Source: String, Sendable, Equatable {
        /// Tesseract, from the pixels: each word has Tesseract's confidence.
        case recognized
        /// A PDF's own text layer: exact, every word's confidence is 1.
        case textLayer = "text-layer"
    }

    public struct Word: Sendable, Equatable {
        public var text: String
        /// 0...1: Tesseract's word confidence over 100, or 1 from a text layer.
        public var confidence: Double

        public init(_ text: String, confidence: Double = 1) {
            self.text = text
            self.confidence = min(1, max(0, confidence))
        }
    }

    public struct Line: Sendable, Equatable {
        /// The page, from 0.
        public var page: Int
        public var words: [Word]

        public init(page: Int = 0, words: [Word]) {
            self.page = page
            self.words = words
        }

        /// The words with one space between them.
        public var text: String { words.map(\.text).joined(separator: " ") }
    }

    public var source: Source
    /// Pages of the receipt that were read.
    public var pages: Int
    public var lines: [Line]
    /// The reader stopped at its limit of lines or bytes: what follows it was not read.
    public var isTruncated: Bool

    public init(source: Source, pages: Int = 1, lines: [Line], isTruncated: Bool = false) {
        self.source = source
        self.pages = pages
        self.lines = lines
        self.isTruncated = isTruncated
    }

    /// Text given as plain lines, every word sure: what a table of cases
    /// or a text layer without geometry gives. Words are split at white space.
    public init(plain: String, source: Source = .textLayer) {
        let lines = plain.split(separator: "\n", omittingEmptySubsequences: false).compactMap { line -> Line? in
            let words = line.split(whereSeparator: { $0.isWhitespace }).map { Word(String($0)) }
            return words.isEmpty ? nil : Line(words: words)
        }
        self.init(source: source, lines: lines)
    }

    /// Every line's text, one a line.
    public var plainText: String { lines.map(\.text).joined(separator: "\n") }
}
