import ExpenseCore

/// How the sandboxed reader sends back what it read: JSON lines on its
/// standard output, written by ``encode(_:)`` in the child and parsed by
/// ``decode(_:)`` in the daemon, which trusts none of it.
///
///     {"pages":1,"source":"recognized"}
///     {"confidence":[96,94],"page":0,"words":["TOTAL","£18.94"]}
///     …
///     {"lines":16,"truncated":false}
///
/// The first line says where the text came from, each line after it is a
/// line of the receipt (confidences in percent), and the last counts them:
/// an answer cut short is refused, not half read.
public enum ReadTextCodec {
    /// At most this many lines of a receipt are kept: a till roll has about
    /// a hundred, an invoice a few hundred a page.
    public static let maxLines = 2000
    /// At most this many words a line; the rest of a line is dropped.
    public static let maxWordsPerLine = 100
    /// A longer word is cut to this many bytes.
    public static let maxWordBytes = 100
    /// At most this much text in all: past it, lines are dropped.
    public static let maxTextBytes = 256 * 1024
    /// The most an answer may be (`maxTextBytes` written as JSON, escapes and all, with room).
    public static let maxAnswerBytes = 4 << 20
    /// The longest line of an answer.
    static let maxLineBytes = 64 * 1024

    /// `text` as the reader's answer, held to the limits above: what is past
    /// them is dropped and the answer says it was truncated.
    public static func encode(_ text: ReadText) -> [UInt8] {
        var out: [UInt8] = []
        var header = JSONWriter()
        header.beginObject()
        header.member("pages", text.pages)
        header.member("source", text.source.rawValue)
        header.endObject()
        out += header.bytes + [0x0A]
        var truncated = text.isTruncated, written = 0, textBytes = 0
        for line in text.lines {
            if written == maxLines { truncated = true; break }
            if line.words.count > maxWordsPerLine { truncated = true }
            let words = line.words.prefix(maxWordsPerLine).map { Word(text: cut($0.text, truncated: &truncated), confidence: $0.confidence) }
            guard !words.isEmpty else { continue }
            // Past the text's limit, this line and the rest are dropped.
            let bytes = words.reduce(0) { $0 + $1.text.utf8.count + 1 }
            if textBytes + bytes > maxTextBytes { truncated = true; break }
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("confidence")
            writer.beginArray()
            for word in words { writer.integer(Int64((word.confidence * 100).rounded())) }
            writer.endArray()
            writer.member("page", line.page)
            writer.key("words")
            writer.beginArray()
            for word in words { writer.string(word.text) }
            textBytes += bytes
            writer.endArray()
            writer.endObject()
            out += writer.bytes + [0x0A]
            written += 1
        }
        var trailer = JSONWriter()
        trailer.beginObject()
        trailer.member("lines", written)
        trailer.member("truncated", truncated)
        trailer.endObject()
        return out + trailer.bytes + [0x0A]
    }

    private typealias Word = (text: String, confidence: Double)

    /// `word` cut to ``maxWordBytes`` on a character boundary.
    private static func cut(_ word: String, truncated: inout Bool) -> String {
        guard word.utf8.count > maxWordBytes else { return word }
        truncated = true
        var result = ""
        for character in word {
            if result.utf8.count + String(character).utf8.count > maxWordBytes { break }
            result.append(character)
        }
        return result
    }

    /// Parses a reader's answer.
    /// - Throws: ``ReadTextError`` when it is larger than the limits allow,
    ///   not JSON lines of the shape above, or cut short.
    public static func decode(_ bytes: [UInt8]) throws(ReadTextError) -> ReadText {
        guard bytes.count <= maxAnswerBytes else { throw ReadTextError("the reader's answer is larger than \(maxAnswerBytes >> 20) MiB") }
        var rows = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
        guard rows.last?.isEmpty == true else { throw ReadTextError("the reader's answer does not end with a whole line") }
        rows.removeLast()
        guard rows.count >= 2 else { throw ReadTextError("the reader's answer is cut short") }
        guard rows.count <= maxLines + 2 else { throw ReadTextError("the reader's answer has more than \(maxLines) lines") }
        let header = try object(rows[0], "first")
        guard let sourceName = header["source"]?.stringValue, let source = ReadText.Source(rawValue: sourceName),
              let pages = header["pages"]?.intValue, (0...10_000).contains(pages) else {
            throw ReadTextError("the reader's first line is not {source, pages}")
        }
        let trailer = try object(rows[rows.count - 1], "last")
        guard let count = trailer["lines"]?.intValue, case .bool(let truncated)? = trailer["truncated"] else {
            throw ReadTextError("the reader's last line is not {lines, truncated}")
        }
        guard count == rows.count - 2 else { throw ReadTextError("the reader's answer is cut short (\(rows.count - 2) of \(count) lines)") }
        var lines: [ReadText.Line] = []
        var textBytes = 0
        for (index, row) in rows.dropFirst().dropLast().enumerated() {
            let value = try object(row, "line \(index + 1)")
            guard case .array(let words)? = value["words"], case .array(let confidences)? = value["confidence"],
                  !words.isEmpty, words.count == confidences.count, words.count <= maxWordsPerLine,
                  let page = value["page"]?.intValue, (0..<Int64(max(pages, 1))).contains(page) else {
                throw ReadTextError("the reader's line \(index + 1) is not {words, confidence, page}")
            }
            var line = ReadText.Line(page: Int(page), words: [])
            for (word, confidence) in zip(words, confidences) {
                guard let text = word.stringValue, !text.isEmpty, text.utf8.count <= maxWordBytes,
                      let percent = confidence.intValue, (0...100).contains(percent) else {
                    throw ReadTextError("the reader's line \(index + 1) has a word that is not text with a confidence from 0 to 100")
                }
                line.words.append(ReadText.Word(text, confidence: Double(percent) / 100))
                textBytes += text.utf8.count + 1
            }
            guard textBytes <= maxTextBytes else { throw ReadTextError("the reader's answer has more than \(maxTextBytes / 1024) KiB of text") }
            lines.append(line)
        }
        return ReadText(source: source, pages: Int(pages), lines: lines, isTruncated: truncated)
    }

    private static func object(_ row: ArraySlice<UInt8>, _ which: String) throws(ReadTextError) -> JSONValue {
        guard row.count <= maxLineBytes else { throw ReadTextError("the reader's \(which) line is longer than \(maxLineBytes) bytes") }
        let value: JSONValue
        do { value = try JSONValue.parse(row) } catch { throw ReadTextError("the reader's \(which) line is not JSON: \(error)") }
        guard case .object = value else { throw ReadTextError("the reader's \(which) line is not a JSON object") }
        return value
    }
}

/// A reader's answer that cannot be used: why, without any of its text.
public struct ReadTextError: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}
