import ExpenseCore
import ReceiptReading
import Testing

/// The reader's answer: what the child writes is what the daemon reads,
/// the limits are held on both sides, and an answer that breaks the rules
/// is refused whole, never half read.
@Suite struct ReadTextCodecTests {
    static let sample = ReadText(source: .recognized, pages: 2, lines: [
        ReadText.Line(page: 0, words: [ReadText.Word("TOTAL", confidence: 0.96), ReadText.Word("£18.94", confidence: 0.94)]),
        ReadText.Line(page: 1, words: [ReadText.Word("Zürich", confidence: 1), ReadText.Word("\"quoted\"\\", confidence: 0.5)]),
    ])

    @Test func anAnswer_roundTrips() throws {
        let bytes = ReadTextCodec.encode(Self.sample)
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix(#"{"pages":2,"source":"recognized"}"# + "\n"))
        #expect(try ReadTextCodec.decode(bytes) == Self.sample)
    }

    @Test func tooMuchText_isCut_andSaysSo() throws {
        let long = ReadText.Line(words: (0..<150).map { ReadText.Word(String(repeating: "é", count: 80) + "\($0)") })
        let text = ReadText(source: .textLayer, lines: Array(repeating: long, count: 3000))
        let bytes = ReadTextCodec.encode(text)
        #expect(bytes.count <= ReadTextCodec.maxAnswerBytes)
        let back = try ReadTextCodec.decode(bytes)
        #expect(back.isTruncated)
        #expect(back.lines.count < 3000 && back.lines.allSatisfy { $0.words.count == ReadTextCodec.maxWordsPerLine })
        #expect(back.lines.allSatisfy { $0.words.allSatisfy { $0.text.utf8.count <= ReadTextCodec.maxWordBytes && $0.text.hasPrefix("é") } })
        #expect(back.lines.reduce(0) { $0 + $1.text.utf8.count + 1 } <= ReadTextCodec.maxTextBytes)
    }

    /// An answer the writer's limits would never make: more text than
    /// allowed, in lines each of which is within the rules.
    @Test func moreTextThanAllowed_isRefused() {
        let word = "\"" + String(repeating: "A", count: 100) + "\""
        let line = #"{"confidence":[50,50,50,50,50,50,50,50,50,50],"page":0,"words":["# + Array(repeating: word, count: 10).joined(separator: ",") + "]}"
        let count = ReadTextCodec.maxTextBytes / 1010 + 1
        let answer = #"{"pages":1,"source":"recognized"}"# + "\n" + String(repeating: line + "\n", count: count)
            + #"{"lines":\#(count),"truncated":false}"# + "\n"
        #expect(throws: ReadTextError("the reader's answer has more than 256 KiB of text")) { try ReadTextCodec.decode(Array(answer.utf8)) }
    }

    static let good = """
        {"pages":1,"source":"recognized"}
        {"confidence":[90],"page":0,"words":["TOTAL"]}
        {"lines":1,"truncated":false}

        """
    static let arrayLine = """
        {"pages":1,"source":"recognized"}
        [1]
        {"lines":1,"truncated":false}

        """

    static let broken: [(String, String)] = [
        ("nothing", ""),
        ("no final newline", String(good.dropLast())),
        ("only the header", #"{"pages":1,"source":"recognized"}"# + "\n"),
        ("cut short: fewer lines than counted", good.replacingOccurrences(#""lines":1"#, #""lines":2"#)),
        ("an unknown source", good.replacingOccurrences("recognized", "guessed")),
        ("a page past the pages", good.replacingOccurrences(#""page":0"#, #""page":1"#)),
        ("a confidence over 100", good.replacingOccurrences("[90]", "[101]")),
        ("a confidence that is text", good.replacingOccurrences("[90]", #"["90"]"#)),
        ("words and confidences disagree", good.replacingOccurrences("[90]", "[90,80]")),
        ("an empty word", good.replacingOccurrences(#"["TOTAL"]"#, #"[""]"#)),
        ("no words", good.replacingOccurrences(#"["TOTAL"]"#, "[]").replacingOccurrences("[90]", "[]")),
        ("a line that is not JSON", good.replacingOccurrences(#"{"confidence""#, #"{confidence""#)),
        ("a line that is an array", arrayLine),
        ("invalid UTF-8", good.replacingOccurrences("TOTAL", "TOT\u{FFFD}AL")),
        ("a trailer without truncated", good.replacingOccurrences(#","truncated":false"#, "")),
        ("a word longer than allowed", good.replacingOccurrences("TOTAL", String(repeating: "A", count: 101))),
    ]

    @Test(arguments: broken)
    func aBrokenAnswer_isRefused(_ name: String, _ text: String) {
        var bytes = Array(text.utf8)
        if name == "invalid UTF-8" { bytes = bytes.map { $0 == 0xEF ? 0xFF : $0 } }
        #expect(throws: ReadTextError.self, "\(name)") { try ReadTextCodec.decode(bytes) }
    }

    @Test func anAnswerLargerThanTheLimit_isRefusedUnread() {
        let bytes = [UInt8](repeating: 0x20, count: ReadTextCodec.maxAnswerBytes + 1)
        #expect(throws: ReadTextError("the reader's answer is larger than 4 MiB")) { try ReadTextCodec.decode(bytes) }
    }

    @Test func plainText_splitsAtWhiteSpace_andDropsEmptyLines() {
        let text = ReadText(plain: "  TOTAL\t 12.50 \n\n\nCARD 12.50\n")
        #expect(text.lines.map(\.text) == ["TOTAL 12.50", "CARD 12.50"])
        #expect(text.plainText == "TOTAL 12.50\nCARD 12.50")
    }
}

extension String {
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        var result = "", rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
